//! `x-kubernetes-list-type: set` and `map` lists hold no duplicates (apiextensions
//! `schema/listtype/validation.go`, run on every write after the schema): a repeated set item,
//! or a map item whose `x-kubernetes-list-map-keys` values repeat an earlier one's, is a
//! `Duplicate value` at its second occurrence (`spec.ports[2]: Duplicate value:
//! {"name":"http"}`); a map list's item must be an object. Upstream walks objects in Go's
//! random map order; here in key order.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::common::{Errs, duplicate};
use super::openapi::render_value;
use crate::error::FieldError;
use crate::go_fmt;

/// Deeper than this the walk stops (a guard; decoded bodies are depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// The duplicates in the lists of `object` (a custom resource) under `schema`.
pub(super) fn validate(schema: &Value, object: &Value, errs: &mut Errs) {
    if let Value::Object(map) = object {
        object_lists(schema, map, "", 0, errs);
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// `ValidateListSetsAndMaps`: an `additionalProperties` schema's values (as `[key]`), then
/// the properties.
fn object_lists(schema: &Value, map: &Map<String, Value>, path: &str, depth: usize, errs: &mut Errs) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        for (key, value) in map {
            lists(additional, value, &format!("{path}[{key}]"), depth + 1, errs);
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (key, value) in map {
            if let Some(property) = properties.get(key) {
                lists(property, value, &child(path, key), depth + 1, errs);
            }
        }
    }
}

fn lists(schema: &Value, value: &Value, path: &str, depth: usize, errs: &mut Errs) {
    match value {
        Value::Array(items) => array(schema, items, path, depth, errs),
        Value::Object(map) => object_lists(schema, map, path, depth, errs),
        _ => {}
    }
}

fn array(schema: &Value, items: &[Value], path: &str, depth: usize, errs: &mut Errs) {
    let at = |i: usize| format!("{path}[{i}]");
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in repeated(items.iter().map(Some)) {
                errs.push(duplicate(&at(i), &render_value(&items[i])));
            }
        }
        Some("map") => map_list(schema, items, path, errs),
        _ => {}
    }
    if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
        for (i, item) in items.iter().enumerate() {
            lists(item_schema, item, &at(i), depth + 1, errs);
        }
    }
}

/// `validateListMap`: every item an object (or null), then no two with the same keys.
fn map_list(schema: &Value, items: &[Value], path: &str, errs: &mut Errs) {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        let detail = "must be an object for an array of list-type map";
        errs.push(FieldError::invalid(&format!("{path}[{i}]"), &render_value(&items[i]), detail));
        return;
    }
    let names: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let field = |item: &'_ Value, name: &str| item.as_object().and_then(|f| f.get(name)).cloned();
    if let [name] = names.as_slice() {
        // One key: its values compared (a missing one is "unspecified", shown as `{}`).
        let values: Vec<Option<Value>> = items.iter().map(|item| field(item, name)).collect();
        for i in repeated(values.iter().map(Option::as_ref)) {
            let shown = match &values[i] {
                Some(value) => Value::from_iter([(name.to_string(), value.clone())]),
                None => Value::Object(Map::new()),
            };
            errs.push(duplicate(&format!("{path}[{i}]"), &render_value(&shown)));
        }
        return;
    }
    // Several keys: the objects of the key fields each item has.
    let keys: Vec<Value> = items
        .iter()
        .map(|item| names.iter().filter_map(|n| field(item, n).map(|v| (n.to_string(), v))).collect())
        .collect();
    for i in repeated(keys.iter().map(Some)) {
        errs.push(duplicate(&format!("{path}[{i}]"), &render_value(&keys[i])));
    }
}

/// `validateListSet`: the index of each value's second occurrence. Scalars compare by Go type
/// and value (`1` and `1.0` differ), objects and arrays by their JSON; `None` is a value too.
fn repeated<'a>(values: impl Iterator<Item = Option<&'a Value>>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, value) in values.enumerate() {
        let key = match value {
            None => "unspecified".to_string(),
            Some(Value::Null) => "null".to_string(),
            Some(Value::Bool(b)) => format!("bool:{b}"),
            Some(Value::String(s)) => format!("string:{s}"),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(int) => format!("int64:{int}"),
                None => format!("float64:{}", go_fmt::json(&Value::Number(n.clone()))),
            },
            Some(compound) => format!("json:{}", go_fmt::json(compound)),
        };
        let times = seen.entry(key).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::validate;

    /// The causes' fields and messages the real v1.35 apiserver answered (CRD
    /// `lists.crv-probe.example.com`).
    #[test]
    fn duplicates_are_named_at_their_second_occurrence() {
        let item = |required: &[&str]| {
            json!({"type": "object", "required": required,
            "properties": {"type": {"type": "string"}, "n": {"type": "integer"}}})
        };
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "iset": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"], "items": item(&["type"])},
            "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type", "n"], "items": item(&["type", "n"])},
            "nested": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}}});
        let cases = [
            (
                json!({"set": ["a", "b", "a", "a", "b"]}),
                vec![r#"spec.set[2]: Duplicate value: "a""#, r#"spec.set[4]: Duplicate value: "b""#],
            ),
            (json!({"iset": [1, 1.0, 1.5, 1.5]}), vec!["spec.iset[3]: Duplicate value: 1.5"]),
            (
                json!({"map": [{"type": "a"}, {"type": "a"}, {"type": "b"}]}),
                vec![r#"spec.map[1]: Duplicate value: {"type":"a"}"#],
            ),
            (
                json!({"map": [{"type": "a"}, "x"]}),
                vec![r#"spec.map[1]: Invalid value: "x": must be an object for an array of list-type map"#],
            ),
            (
                json!({"map2": [{"type": "a", "n": 1}, {"type": "a", "n": 1}, {"type": "a", "n": 2}]}),
                vec![r#"spec.map2[1]: Duplicate value: {"n":1,"type":"a"}"#],
            ),
            (json!({"nested": {"k": ["x", "x"]}}), vec![r#"spec.nested[k][1]: Duplicate value: "x""#]),
            (json!({"set": ["a", "b"], "map": [{"type": "a"}, {"type": "b"}]}), vec![]),
        ];
        for (spec, expected) in cases {
            let mut errs = Vec::new();
            validate(&schema, &json!({"spec": spec}), &mut errs);
            let messages: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
            assert_eq!(messages, expected, "{spec}");
        }
    }
}
