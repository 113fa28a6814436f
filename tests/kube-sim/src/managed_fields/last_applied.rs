//! kubectl's `last-applied-configuration` annotation and server-side apply (upstream's
//! `lastappliedmanager.go`, `lastappliedupdater.go`), for the manager `kubectl` only, which is
//! what `kubectl apply --server-side` sends:
//!
//! * conflicts on fields whose live value is still what the annotation says are allowed (the
//!   object was applied client-side before; the apply is retried forced), so switching an
//!   object from `kubectl apply` to `kubectl apply --server-side` does not conflict with
//!   `kubectl-client-side-apply`;
//! * an object that has the annotation gets it rewritten to the applied configuration, so a
//!   later client-side apply sees what was applied last.

use serde_json::{Map, Value};

use super::fieldpath::Set;
use super::schema::Slot;
use super::typed;
use crate::go_fmt;

/// The annotation kubectl's client-side apply keeps the applied configuration in.
pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Upstream's limit on the total size of an object's annotations (`TotalAnnotationSizeLimitB`).
const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

fn annotation(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(ANNOTATION)?.as_str().filter(|text| !text.is_empty())
}

/// The fields a conflict may be ignored on: those of the annotation whose live value is the
/// annotated one. `None` when the object has no usable annotation.
pub(crate) fn allowed_conflicts(live: &Value, api_version: &str, slot: Slot<'_>) -> Option<Set> {
    let last: Value = serde_json::from_str(annotation(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let fields = typed::field_set(&last, slot).ok()?;
    let changed = typed::compare(Some(&last), Some(live), slot).ok()?;
    Some(fields.difference(&changed.modified).difference(&changed.added).difference(&changed.removed))
}

/// `object` with the annotation rewritten to `config` (when it has one): the configuration
/// without the annotation, as Go's JSON encoder writes it (with its trailing newline). An
/// annotation that would make the annotations too large is dropped, as upstream does.
pub(crate) fn update_annotation(object: &mut Value, config: &Value) {
    if annotation(object).is_none() {
        return;
    }
    let mut config = config.clone();
    if let Some(Value::Object(annotations)) = config.pointer_mut("/metadata/annotations") {
        annotations.remove(ANNOTATION);
    }
    let value = format!("{}\n", go_fmt::json(&config));
    let Some(Value::Object(annotations)) = object.pointer_mut("/metadata/annotations") else { return };
    annotations.insert(ANNOTATION.into(), Value::String(value));
    if size(annotations) > ANNOTATIONS_SIZE_LIMIT {
        annotations.remove(ANNOTATION);
    }
}

fn size(annotations: &Map<String, Value>) -> usize {
    annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unchanged_client_side_fields_may_be_taken_over() {
        let last =
            r#"{"apiVersion":"v1","data":{"k1":"v1","k2":"v2"},"kind":"ConfigMap","metadata":{"name":"m"}}"#;
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "annotations": {ANNOTATION: last}},
            "data": {"k1": "v1", "k2": "patched"}});
        let allowed = allowed_conflicts(&live, "v1", Slot::root("ConfigMap", None)).expect("annotated");
        assert!(allowed.has(&[
            super::super::fieldpath::PathElement::field("data"),
            super::super::fieldpath::PathElement::field("k1")
        ]));
        assert!(!allowed.has(&[
            super::super::fieldpath::PathElement::field("data"),
            super::super::fieldpath::PathElement::field("k2")
        ]));
        assert!(allowed_conflicts(&live, "v2", Slot::root("ConfigMap", None)).is_none());
    }

    #[test]
    fn the_annotation_follows_the_applied_configuration() {
        // The annotation the v1.35.4 apiserver wrote after `kubectl apply --server-side`.
        let mut object = json!({"metadata": {"annotations": {ANNOTATION: "{}"}}});
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k1": "v1new"},
            "metadata": {"name": "mig2", "namespace": "ssa-probe-1", "labels": {"a": "1"}}});
        update_annotation(&mut object, &config);
        assert_eq!(
            object["metadata"]["annotations"][ANNOTATION],
            "{\"apiVersion\":\"v1\",\"data\":{\"k1\":\"v1new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"mig2\",\"namespace\":\"ssa-probe-1\"}}\n"
        );
        let mut plain = json!({"metadata": {}});
        update_annotation(&mut plain, &config);
        assert_eq!(plain, json!({"metadata": {}}));
    }
}
