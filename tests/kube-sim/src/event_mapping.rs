//! One Event store served as core/v1 and events.k8s.io/v1, with the upstream field mapping
//! (`pkg/apis/events/v1/conversion.go`): regarding↔involvedObject, note↔message,
//! reportingController↔reportingComponent, deprecatedSource↔source,
//! deprecatedFirstTimestamp↔firstTimestamp, deprecatedLastTimestamp↔lastTimestamp,
//! deprecatedCount↔count.

use serde_json::{Map, Value};

const PAIRS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(object: &Value, api_version: &str, to_core: bool) -> Value {
    let Some(src) = object.as_object() else { return object.clone() };
    let mut out = Map::new();
    for (k, v) in src {
        let mapped = PAIRS
            .iter()
            .find(|(v1, core)| if to_core { k == v1 } else { k == core })
            .map(|(v1, core)| if to_core { *core } else { *v1 });
        out.insert(mapped.unwrap_or(k).to_string(), v.clone());
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

/// events.k8s.io/v1 → core/v1 (the storage form).
pub fn to_core(object: &Value) -> Value {
    rename(object, "v1", true)
}

/// core/v1 (storage form) → events.k8s.io/v1, where empty reporting fields are omitted and
/// `deprecatedSource` (a struct) is always written.
pub fn to_events_v1(object: &Value) -> Value {
    let mut event = rename(object, "events.k8s.io/v1", false);
    if let Some(map) = event.as_object_mut() {
        for key in ["reportingController", "reportingInstance"] {
            if map.get(key).is_some_and(|v| v == "") {
                map.remove(key);
            }
        }
        map.entry("deprecatedSource").or_insert_with(|| Value::Object(Map::new()));
    }
    event
}
