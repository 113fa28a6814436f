//! Small helpers on JSON objects: metadata access, dotted paths, timestamps, names.

use serde_json::{Map, Value};

/// Now as RFC 3339 with second precision (`2026-11-29T14:32:23Z`), like `metav1.Time`.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metadata` as a mutable map, created (and replacing a non-object) when needed.
pub fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let Value::Object(root) = object else { unreachable_map() };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable_map(),
    }
}

// Both call sites have just made the value an object (no input can reach this).
fn unreachable_map() -> ! {
    unreachable!("value was just made an object")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object["metadata"][field].as_str().unwrap_or_default()
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The value at a dotted path (`.spec.replicas`).
pub fn get_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).try_fold(object, |v, k| v.get(k))
}

/// Sets the value at a dotted path, creating intermediate objects.
pub fn set_path(object: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).collect();
    let mut cur = object;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if i + 1 == parts.len() {
            m.insert((*part).to_string(), value);
            return;
        }
        cur = m.entry(*part).or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Renders a `metav1.LabelSelector` object in the query syntax (`app=web,tier in (a,b)`),
/// as the `/scale` subresource's `status.selector` does.
pub fn label_selector_string(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (k, v) in labels {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    for expr in selector["matchExpressions"].as_array().into_iter().flatten() {
        let key = expr["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> =
            expr["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        match expr["operator"].as_str().unwrap_or_default() {
            "In" => parts.push(format!("{key} in ({})", values.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
            "Exists" => parts.push(key.to_string()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.sort();
    parts.join(",")
}

/// Random suffix for `generateName`: 5 characters from the apiserver's alphabet.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// A new object UID.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}
