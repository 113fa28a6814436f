//! What upstream's decoder does to a custom resource after pruning it, before anything
//! validates it: nulls where the schema allows none and has no default are dropped
//! (`structuraldefaulting.PruneNonNullableNullsWithoutDefaults`), then the schema's `default`s
//! are filled in (`structuraldefaulting.Default`, run by the codec). So `spec: {size: null}`
//! is `spec: {}` (and a `required` size is missing), and a `required` field with a default is
//! never missing. Neither step is reported to the client.

use serde_json::Value;

/// Deeper than this the walks stop (a guard; decoded bodies are depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// The schema of `key`'s value: its property, else an `additionalProperties` schema.
fn field_schema<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    match schema.get("properties").and_then(|p| p.get(key)) {
        Some(property) => Some(property),
        None => schema.get("additionalProperties").filter(|a| a.is_object()),
    }
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool).unwrap_or(false)
}

/// The schema's `default` (a `null` default is none, as upstream decodes it).
fn default(schema: &Value) -> Option<&Value> {
    schema.get("default").filter(|d| !d.is_null())
}

/// `PruneNonNullableNullsWithoutDefaults`: object values only (list items are kept).
pub(super) fn prune_nulls(schema: &Value, x: &mut Value) {
    prune_nulls_at(schema, x, 0);
}

fn prune_nulls_at(schema: &Value, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            map.retain(|key, value| {
                !(value.is_null()
                    && field_schema(schema, key).is_some_and(|s| !nullable(s) && default(s).is_none()))
            });
            for (key, value) in map.iter_mut() {
                if let Some(sub) = field_schema(schema, key) {
                    prune_nulls_at(sub, value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    prune_nulls_at(item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// `structuraldefaulting.Default`: a missing property, or a null one the schema does not allow,
/// gets its default; so does a null map value or list item.
pub(super) fn apply(schema: &Value, x: &mut Value) {
    apply_at(schema, x, 0);
}

fn apply_at(schema: &Value, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            for (key, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                let Some(value) = default(property) else { continue };
                let missing = match map.get(key) {
                    None => true,
                    Some(current) => current.is_null() && !nullable(property),
                };
                if missing {
                    map.insert(key.clone(), value.clone());
                }
            }
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, value) in map.iter_mut() {
                if let Some(property) = schema.get("properties").and_then(|p| p.get(key)) {
                    apply_at(property, value, depth + 1);
                } else if let Some(additional) = additional {
                    fill_null(additional, value);
                    apply_at(additional, value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    fill_null(item_schema, item);
                    apply_at(item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// A null the schema does not allow becomes the schema's default (it stays null without one).
fn fill_null(schema: &Value, value: &mut Value) {
    if value.is_null()
        && !nullable(schema)
        && let Some(d) = default(schema)
    {
        *value = d.clone();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{apply, prune_nulls};

    /// What the real v1.35 apiserver stored for these specs (CRD `dflts.crv-probe.example.com`).
    #[test]
    fn nulls_go_and_defaults_come_as_upstream_decodes() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "color": {"type": "string"},
            "nul": {"type": "string", "nullable": true},
            "def": {"type": "string", "default": "dflt"},
            "tags": {"type": "array", "items": {"type": "string", "nullable": true}},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}},
            "reqdef": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "default": "x"}}}}}}});
        let cases = [
            (json!({"size": null}), json!({"def": "dflt"})),
            (json!({"size": 1, "color": null, "nul": null}), json!({"size": 1, "nul": null, "def": "dflt"})),
            (json!({"def": null, "reqdef": {}}), json!({"def": "dflt", "reqdef": {"a": "x"}})),
            (json!({"reqdef": {"a": null}}), json!({"def": "dflt", "reqdef": {"a": "x"}})),
            // List items stay; a null map value takes the values' default.
            (
                json!({"tags": ["a", null], "labels": {"k": null}}),
                json!({"def": "dflt", "tags": ["a", null], "labels": {"k": "v"}}),
            ),
        ];
        for (spec, expected) in cases {
            let mut object = json!({"spec": spec});
            prune_nulls(&schema, &mut object);
            apply(&schema, &mut object);
            assert_eq!(object, json!({"spec": expected}), "{spec}");
        }
        // `spec: null` is dropped whole.
        let mut object = json!({"spec": null});
        prune_nulls(&schema, &mut object);
        apply(&schema, &mut object);
        assert_eq!(object, json!({}));
    }
}
