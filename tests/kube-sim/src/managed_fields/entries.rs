//! `metadata.managedFields` entries and the per-manager field sets they encode (upstream's
//! `internal/managedfields.go`): decoding and encoding, manager identities, the entry order.
//!
//! A manager is identified as upstream does, by the JSON of its entry without fields and time,
//! and without the API version for appliers: `{"manager":"kubectl","operation":"Update",
//! "apiVersion":"apps/v1","subresource":"scale"}`. That string is also the order conflicts are
//! reported in.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldpath::Set;
use crate::go_fmt;

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// A manager's identity (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ManagerId(String);

impl ManagerId {
    /// The identity of `manager` writing with `operation` (the API version counts for updates
    /// only); an empty manager is `unknown`, as upstream names it.
    pub(crate) fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let manager = if manager.is_empty() { "unknown" } else { manager };
        Self::spelled(manager, operation, api_version, subresource)
    }

    /// The identity exactly as an entry spells it (Go's field order, empty fields omitted).
    fn spelled(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let text = |s: &str| go_fmt::json(&Value::String(s.to_string()));
        let mut parts = Vec::new();
        if !manager.is_empty() {
            parts.push(format!("\"manager\":{}", text(manager)));
        }
        parts.push(format!("\"operation\":\"{}\"", operation.as_str()));
        if operation == Operation::Update && !api_version.is_empty() {
            parts.push(format!("\"apiVersion\":{}", text(api_version)));
        }
        if !subresource.is_empty() {
            parts.push(format!("\"subresource\":{}", text(subresource)));
        }
        Self(format!("{{{}}}", parts.join(",")))
    }

    /// A placeholder identity that no entry has (upstream's `current-operation`).
    pub(crate) fn placeholder(name: &str) -> Self {
        Self(name.to_string())
    }

    fn parts(&self) -> Map<String, Value> {
        match serde_json::from_str(&self.0) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    fn part(&self, name: &str) -> String {
        self.parts().get(name).and_then(Value::as_str).unwrap_or_default().to_string()
    }

    /// Upstream's `printManager`: `"kubectl-create" using apps/v1`, `"kubectl" with
    /// subresource "scale" using apps/v1`, `"alpha"`.
    pub(crate) fn describe(&self) -> String {
        let parts = self.parts();
        if parts.is_empty() {
            return go_fmt::quote(&self.0);
        }
        let mut text = go_fmt::quote(&self.part("manager"));
        let subresource = self.part("subresource");
        if !subresource.is_empty() {
            text = format!("{text} with subresource {}", go_fmt::quote(&subresource));
        }
        if self.part("operation") == "Update" {
            text = format!("{text} using {}", self.part("apiVersion"));
        }
        text
    }
}

/// The fields one manager owns, at the API version it wrote them in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VersionedSet {
    pub set: Set,
    pub api_version: String,
    /// Owned by an apply (rather than an update).
    pub applied: bool,
}

/// Every manager's fields.
pub(crate) type Fields = BTreeMap<ManagerId, VersionedSet>;

/// The managers' fields and the time each last changed something.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed {
    pub fields: Fields,
    /// RFC 3339 times; a manager without one has no `time` in its entry.
    pub times: BTreeMap<ManagerId, String>,
}

/// Whether `entries` asks to clear the managed fields: `[]` or `[{}]` (upstream's
/// `isResetManagedFields`).
pub(crate) fn is_reset(entries: &Value) -> bool {
    match entries {
        Value::Array(items) => match items.as_slice() {
            [] => true,
            [only] => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

/// Reads `metadata.managedFields` (`DecodeManagedFields`); `null`/absent is empty.
pub(crate) fn decode(entries: Option<&Value>) -> Result<Managed, String> {
    let mut managed = Managed::default();
    let items = match entries {
        None | Some(Value::Null) => return Ok(managed),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("managedFields must be a list, not {other}")),
    };
    for (i, item) in items.iter().enumerate() {
        let text = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".into()),
        };
        let api_version = text("apiVersion");
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match text("fieldsType") {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => return Err(format!("invalid fieldsType {other:?} in managed fields entry {i}")),
        }
        let id = ManagerId::spelled(text("manager"), operation, api_version, text("subresource"));
        let set = match item.get("fieldsV1") {
            None | Some(Value::Null) => Set::new(),
            Some(fields) => Set::from_fields_v1(fields)
                .map_err(|e| format!("error decoding versioned set from entry {i}: {e}"))?,
        };
        managed.fields.insert(
            id.clone(),
            VersionedSet {
                set,
                api_version: api_version.to_string(),
                applied: operation == Operation::Apply,
            },
        );
        match item.get("time").and_then(Value::as_str) {
            Some(time) => {
                managed.times.insert(id, normalize_time(time));
            }
            None => {
                managed.times.remove(&id);
            }
        }
    }
    Ok(managed)
}

/// A `metav1.Time` as the apiserver writes it back: UTC, whole seconds.
fn normalize_time(time: &str) -> String {
    match time.parse::<jiff::Timestamp>() {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => time.to_string(),
    }
}

fn seconds(time: Option<&String>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, |ts| ts.as_second())
}

/// Writes the entries (`encodeManagedFields`) in upstream's order: appliers before updaters,
/// then oldest first, then by manager, API version and subresource. `None` when no manager
/// owns anything (the object then has no `managedFields`).
pub(crate) fn encode(managed: &Managed) -> Option<Value> {
    if managed.fields.is_empty() {
        return None;
    }
    let mut entries: Vec<(Value, i64)> = managed
        .fields
        .iter()
        .map(|(id, versioned)| {
            let parts = id.parts();
            let part = |name: &str| parts.get(name).and_then(Value::as_str).unwrap_or_default();
            let operation = if versioned.applied { "Apply" } else { part("operation") };
            let mut entry = json!({
                "operation": operation,
                "apiVersion": versioned.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": versioned.set.to_fields_v1(),
            });
            if !part("manager").is_empty() {
                entry["manager"] = json!(part("manager"));
            }
            if !part("subresource").is_empty() {
                entry["subresource"] = json!(part("subresource"));
            }
            let time = managed.times.get(id);
            if let Some(time) = time {
                entry["time"] = json!(time);
            }
            (entry, seconds(time))
        })
        .collect();
    let key = |entry: &Value, name: &str| entry[name].as_str().unwrap_or_default().to_string();
    entries.sort_by(|(a, at), (b, bt)| {
        (key(a, "operation"), *at, key(a, "manager"), key(a, "apiVersion"), key(a, "subresource")).cmp(&(
            key(b, "operation"),
            *bt,
            key(b, "manager"),
            key(b, "apiVersion"),
            key(b, "subresource"),
        ))
    });
    Some(Value::Array(entries.into_iter().map(|(entry, _)| entry).collect()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn identities_and_descriptions_are_upstreams() {
        let scale = ManagerId::new("kubectl", Operation::Update, "apps/v1", "scale");
        assert_eq!(
            scale.0,
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","subresource":"scale"}"#
        );
        // Messages of the v1.35.4 apiserver's 409s.
        assert_eq!(scale.describe(), r#""kubectl" with subresource "scale" using apps/v1"#);
        assert_eq!(
            ManagerId::new("kubectl-create", Operation::Update, "apps/v1", "").describe(),
            r#""kubectl-create" using apps/v1"#
        );
        assert_eq!(ManagerId::new("alpha", Operation::Apply, "v1", "").describe(), r#""alpha""#);
        assert_eq!(ManagerId::new("", Operation::Update, "v1", "").describe(), r#""unknown" using v1"#);
        // `kubectl` sorts before `kubectl-create`, as in upstream's conflict messages.
        assert!(scale < ManagerId::new("kubectl-create", Operation::Update, "apps/v1", ""));
    }

    #[test]
    fn entries_round_trip_in_upstreams_order() {
        // The ConfigMap `c` after alpha, beta (forced), gamma and delta (a no-op apply: no time)
        // applied to the v1.35.4 apiserver, in the order it listed them.
        let entries = json!([
            {"manager": "delta", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:extra": {}, "f:owner": {}}}},
            {"manager": "beta", "operation": "Apply", "apiVersion": "v1", "time": "2026-12-04T02:34:19Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:owner": {}}}},
            {"manager": "gamma", "operation": "Apply", "apiVersion": "v1", "time": "2026-12-04T02:34:19Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:extra": {}, "f:owner": {}}}},
            {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "subresource": "scale", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]);
        let managed = decode(Some(&entries)).expect("valid");
        assert_eq!(managed.fields.len(), 4);
        assert_eq!(encode(&managed), Some(entries));
        assert_eq!(encode(&Managed::default()), None);
    }

    #[test]
    fn invalid_entries_and_resets() {
        assert!(
            decode(Some(
                &json!([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}])
            ))
            .is_err()
        );
        assert!(
            decode(Some(&json!([{"manager": "a", "operation": "Update", "fieldsType": "FieldsV1"}])))
                .is_err()
        );
        assert!(decode(Some(&json!([{"manager": "a", "operation": "Update", "apiVersion": "v1"}]))).is_err());
        assert!(decode(Some(&json!("x"))).is_err());
        assert!(is_reset(&json!([])) && is_reset(&json!([{}])));
        assert!(!is_reset(&json!(null)) && !is_reset(&json!([{"manager": "a"}])));
        let odd_time = json!([{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
            "time": "2026-12-04T03:41:53.5+01:00"}]);
        let managed = decode(Some(&odd_time)).expect("valid");
        assert_eq!(managed.times.values().next().map(String::as_str), Some("2026-12-04T02:41:53Z"));
    }
}
