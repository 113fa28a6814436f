//! Validation ratcheting (`CRDValidationRatcheting`, GA and locked on since 1.33): on an
//! update, a value whose old value it can be correlated with and which is unchanged is not
//! held to the schema, so tightening a CRD does not lock its objects (apiextensions
//! `validation/ratcheting.go`, apiserver `cel/common/equality.go` and `maplist.go`).
//!
//! Correlation follows the schema: a property (or an `additionalProperties` key) present in
//! both values; a list item only in `x-kubernetes-list-type: map` lists, by its keys. Equality
//! is upstream's `CachedDeepEqual`: an object with a key the schema does not describe never
//! equals anything, and a keyed list with an item that has no old counterpart neither.

use serde_json::{Map, Value};

use super::Schema;

/// The old value of `key` in the correlated objects, when both have it and the schema
/// describes it (the resource root's `apiVersion` and `kind` are never correlated).
pub(super) fn key<'a>(
    schema: &Schema<'_>,
    old: &'a Map<String, Value>,
    new: &Map<String, Value>,
    key: &str,
    root: bool,
) -> Option<&'a Value> {
    if root && matches!(key, "apiVersion" | "kind") {
        return None;
    }
    schema.child(key)?;
    new.get(key)?;
    old.get(key)
}

/// The old item correlated with `new[index]`: in a keyed list, the first old item with the
/// same keys.
pub(super) fn index<'a>(
    schema: &Schema<'_>,
    old: &'a [Value],
    new: &[Value],
    index: usize,
) -> Option<&'a Value> {
    schema.items()?;
    let keys = map_keys(schema)?;
    let item = new.get(index)?.as_object()?;
    let wanted = item_key(&keys, item)?;
    old.iter().find(|o| o.as_object().and_then(|o| item_key(&keys, o)).as_ref() == Some(&wanted))
}

/// `x-kubernetes-list-map-keys` of a keyed list (`MakeMapList` wants an array type, the map
/// list type and at least one key).
fn map_keys<'a>(schema: &Schema<'a>) -> Option<Vec<&'a str>> {
    let raw = schema.raw;
    if raw.get("type").and_then(Value::as_str) != Some("array")
        || raw.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map")
    {
        return None;
    }
    let keys: Vec<&str> =
        raw.get("x-kubernetes-list-map-keys")?.as_array()?.iter().filter_map(Value::as_str).collect();
    (!keys.is_empty()).then_some(keys)
}

/// An item's key: its key fields' scalar values (typed: `1` and `1.0` differ; with several keys
/// upstream joins them printed, floats with `%f`).
fn item_key(keys: &[&str], item: &Map<String, Value>) -> Option<Vec<String>> {
    let several = keys.len() > 1;
    keys.iter()
        .map(|k| match item.get(*k)? {
            Value::Bool(b) => Some(format!("b{b}")),
            Value::String(s) => Some(format!("s{s}")),
            Value::Number(n) => Some(match super::number::Num::of(n) {
                super::number::Num::Int(i) => format!("i{i}"),
                super::number::Num::Float(f) if several => format!("f{f:.6}"),
                super::number::Num::Float(f) => format!("f{:?}", f.to_bits()),
            }),
            _ => None,
        })
        .collect()
}

/// Upstream's `CachedDeepEqual` of correlated values under `schema`.
pub(super) fn unchanged(schema: &Schema<'_>, old: &Value, new: &Value, depth: usize) -> bool {
    if depth > super::MAX_DEPTH {
        return false;
    }
    match (old, new) {
        (Value::Null, Value::Null) => true,
        (Value::Array(o), Value::Array(n)) => {
            if o.len() != n.len() {
                return false;
            }
            if map_keys(schema).is_none() {
                // Not correlatable item by item: compared whole.
                return o == n;
            }
            let Some(items) = schema.items() else { return false };
            (0..n.len()).all(|i| match index(schema, o, n, i) {
                Some(old_item) => unchanged(&items, old_item, &n[i], depth + 1),
                None => false,
            })
        }
        (Value::Object(o), Value::Object(n)) => {
            o.len() == n.len()
                && n.iter().all(|(k, v)| match (schema.child(k), o.get(k)) {
                    (Some(child), Some(old_value)) => unchanged(&child, old_value, v, depth + 1),
                    _ => false,
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (o, n) => o == n,
    }
}
