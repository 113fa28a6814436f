//! Custom resources validated as apiextensions-apiserver's `customResourceStrategy` and its
//! status strategy do (`registry/customresource/validator.go`, `strategy.go`,
//! `status_strategy.go`), after the metadata rules every kind gets:
//!
//! * a create or update: the version's schema ([`super::openapi`], ratcheted on updates), the
//!   scale subresource's replica paths, then `x-kubernetes-embedded-resource` values
//!   (`apiVersion`, `kind`, `metadata`: `schema/objectmeta/validation.go`), then duplicates in
//!   set and map lists ([`super::list_types`]);
//! * a status write: only `status`, against the schema's `status` property (errors named
//!   `status.…`, with messages relative to it, as upstream's), the scale's status path, and
//!   the list duplicates of the whole object.
//!
//! A non-string `apiVersion` or `kind` of an embedded resource fails upstream's decoder (its
//! `coerce`), so it is answered as the decoder's 400 before anything else.

use serde_json::{Map, Value};

use super::common::{
    Errs, annotations, dns1035_label_errors, dns1123_label_errors, labels, path_segment_errors,
};
use super::openapi;
use crate::error::FieldError;
use crate::go_fmt;
use crate::resources::{ResourceInfo, ScalePaths};

/// Deeper than this the walks stop (a guard; decoded bodies are depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// The decoder's error for an embedded resource's non-string `apiVersion` or `kind`
/// (`spec.template.kind: Invalid value: 5: must be a string`), if any.
pub(super) fn decode_error(info: &ResourceInfo, object: &Value) -> Option<String> {
    coerce(info.schema.as_deref()?, object, "", 0)
}

/// Schema, scale and embedded-resource errors of a create (`old` `None`) or update.
pub(super) fn resource(info: &ResourceInfo, object: &Value, old: Option<&Value>, errs: &mut Errs) {
    let Some(schema) = info.schema.as_deref() else { return };
    errs.extend(openapi::to_field_errors(None, &openapi::validate(schema, object, old)));
    if let Some(scale) = &info.scale {
        scale_spec(scale, object, errs);
        scale_status(scale, object, errs);
    }
    embedded(schema, object, "", 0, errs);
    list_types(schema, object, old, errs);
}

/// Duplicates in keyed and set lists; an update only hears of them when the old object had
/// none (upstream's own ratcheting of these).
fn list_types(schema: &Value, object: &Value, old: Option<&Value>, errs: &mut Errs) {
    if let Some(old) = old {
        let mut old_errs = Vec::new();
        super::list_types::validate(schema, old, &mut old_errs);
        if !old_errs.is_empty() {
            return;
        }
    }
    super::list_types::validate(schema, object, errs);
}

/// The errors of a status write: `status` against the schema's `status` property.
pub(super) fn status(info: &ResourceInfo, object: &Value, old: &Value, errs: &mut Errs) {
    let status_schema = info.schema.as_deref().and_then(|s| s.pointer("/properties/status"));
    if let (Some(schema), Some(status)) = (status_schema, object.get("status")) {
        // Ratcheting correlates the old status when the old object has one.
        let found = openapi::validate(schema, status, old.get("status"));
        errs.extend(openapi::to_field_errors(Some("status"), &found));
    }
    if let Some(scale) = &info.scale {
        scale_status(scale, object, errs);
    }
    if let Some(schema) = info.schema.as_deref() {
        list_types(schema, object, Some(old), errs);
    }
}

/// A property's or `additionalProperties`' schema, as the structural schema holds them (a
/// boolean `additionalProperties` has none).
fn child<'a>(schema: &'a Value, key: &str) -> Option<(&'a Value, bool)> {
    if let Some(property) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some((property, false));
    }
    schema.get("additionalProperties").filter(|a| a.is_object()).map(|a| (a, true))
}

fn is_embedded(schema: &Value) -> bool {
    schema.get("x-kubernetes-embedded-resource").and_then(Value::as_bool).unwrap_or(false)
}

/// `field.Path` children: `.name` for a property, `[key]` for a map key, `[i]` for an index.
fn child_path(path: &str, key: &str, map_key: bool) -> String {
    match (map_key, path.is_empty()) {
        (true, _) => format!("{path}[{key}]"),
        (false, true) => key.to_string(),
        (false, false) => format!("{path}.{key}"),
    }
}

/// Upstream's `coerce` type checks, in key order (upstream's is Go's map order).
fn coerce(schema: &Value, x: &Value, path: &str, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    match x {
        Value::Object(map) => {
            for (key, value) in map {
                if is_embedded(schema) && matches!(key.as_str(), "apiVersion" | "kind") && !value.is_string()
                {
                    let at = child_path(path, key, false);
                    return Some(
                        FieldError::invalid(&at, &openapi::render_value(value), "must be a string").message,
                    );
                }
                if let Some((sub, map_key)) = child(schema, key)
                    && let Some(error) = coerce(sub, value, &child_path(path, key, map_key), depth + 1)
                {
                    return Some(error);
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").filter(|i| i.is_object())?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, item)| coerce(item_schema, item, &format!("{path}[{i}]"), depth + 1))
        }
        _ => None,
    }
}

/// `schemaobjectmeta.Validate`: every `x-kubernetes-embedded-resource` value below the root.
fn embedded(schema: &Value, x: &Value, path: &str, depth: usize, errs: &mut Errs) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            if is_embedded(schema) {
                embedded_resource(map, path, errs);
            }
            for (key, value) in map {
                if let Some((sub, map_key)) = child(schema, key) {
                    embedded(sub, value, &child_path(path, key, map_key), depth + 1, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    embedded(item_schema, item, &format!("{path}[{i}]"), depth + 1, errs);
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`: `apiVersion` and `kind` required, then each in key order.
fn embedded_resource(map: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let at = |key: &str| child_path(path, key, false);
    for key in ["apiVersion", "kind"] {
        if !map.contains_key(key) {
            errs.push(FieldError::required(&at(key), ""));
        }
    }
    for (key, value) in map {
        match (key.as_str(), value) {
            ("apiVersion" | "kind", Value::String(text)) if text.is_empty() => {
                errs.push(FieldError::invalid(&at(key), "\"\"", "must not be empty"));
            }
            ("apiVersion", Value::String(text)) if text.matches('/').count() > 1 => {
                let detail = format!("unexpected GroupVersion string: {text}");
                errs.push(FieldError::invalid(&at(key), &go_fmt::quote(text), &detail));
            }
            ("kind", Value::String(text)) => {
                let messages = dns1035_label_errors(&text.to_lowercase());
                if !messages.is_empty() {
                    let detail =
                        format!("may have mixed case, but should otherwise match: {}", messages.join(","));
                    errs.push(FieldError::invalid(&at(key), &go_fmt::quote(text), &detail));
                }
            }
            ("apiVersion" | "kind", other) if !other.is_string() => {
                errs.push(FieldError::invalid(&at(key), &openapi::render_value(other), "must be a string"));
            }
            ("metadata", Value::Object(meta)) => embedded_meta(meta, &at("metadata"), errs),
            _ => {}
        }
    }
}

/// `ValidateObjectMeta` of an embedded resource's metadata with path-segment names (a missing
/// name is fine: upstream validates `fakename` instead): name, generateName, namespace,
/// labels and annotations.
fn embedded_meta(meta: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let text = |key: &str| meta.get(key).and_then(Value::as_str).unwrap_or_default();
    let at = |key: &str| format!("{path}.{key}");
    let generate = text("generateName");
    if !generate.is_empty() {
        // A prefix may be `.` or `..`; only `/` and `%` are refused.
        for c in ["/", "%"].into_iter().filter(|c| generate.contains(*c)) {
            let detail = format!("may not contain '{c}'");
            errs.push(FieldError::invalid(&at("generateName"), &go_fmt::quote(generate), &detail));
        }
    }
    let name = text("name");
    if !name.is_empty() {
        for message in path_segment_errors(name) {
            errs.push(FieldError::invalid(&at("name"), &go_fmt::quote(name), &message));
        }
    }
    let namespace = text("namespace");
    if !namespace.is_empty() {
        for message in dns1123_label_errors(namespace) {
            errs.push(FieldError::invalid(&at("namespace"), &go_fmt::quote(namespace), &message));
        }
    }
    if let Some(value) = meta.get("labels") {
        labels(value, &at("labels"), errs);
    }
    if let Some(value) = meta.get("annotations") {
        annotations(value, &at("annotations"), errs);
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `unstructured.NestedFieldNoCopy` and its typed getters at a scale path (`.spec.replicas`):
/// the value (`None`: absent), or the accessor error upstream words.
fn nested<'a>(
    object: &'a Value,
    path: &str,
    expected: &str,
    fits: fn(&Value) -> bool,
) -> Result<Option<&'a Value>, String> {
    let fields: Vec<&str> = path.strip_prefix('.').unwrap_or(path).split('.').collect();
    let mut value = object;
    for (i, field) in fields.iter().enumerate() {
        if value.is_null() {
            return Ok(None);
        }
        let Some(map) = value.as_object() else {
            return Err(format!(
                ".{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                fields[..i + 1].join("."),
                go_fmt::value(value),
                go_type(value)
            ));
        };
        match map.get(*field) {
            Some(next) => value = next,
            None => return Ok(None),
        }
    }
    if fits(value) {
        Ok(Some(value))
    } else {
        Err(format!(
            ".{} accessor error: {} is of the type {}, expected {expected}",
            fields.join("."),
            go_fmt::value(value),
            go_type(value)
        ))
    }
}

fn is_int64(value: &Value) -> bool {
    value.as_i64().is_some()
}

/// `ValidateScaleSpec` / the replicas half of `ValidateScaleStatus`.
fn replicas(object: &Value, path: &str, errs: &mut Errs) {
    match nested(object, path, "int64", is_int64) {
        Err(message) => errs.push(FieldError::invalid(path, "0", &message)),
        Ok(Some(value)) => {
            let replicas = value.as_i64().unwrap_or(0);
            if replicas < 0 {
                errs.push(FieldError::invalid(
                    path,
                    &replicas.to_string(),
                    "should be a non-negative integer",
                ));
            } else if replicas > i64::from(i32::MAX) {
                let detail = format!("should be less than or equal to {}", i32::MAX);
                errs.push(FieldError::invalid(path, &replicas.to_string(), &detail));
            }
        }
        Ok(None) => {}
    }
}

fn scale_spec(scale: &ScalePaths, object: &Value, errs: &mut Errs) {
    replicas(object, &scale.spec_replicas, errs);
}

fn scale_status(scale: &ScalePaths, object: &Value, errs: &mut Errs) {
    replicas(object, &scale.status_replicas, errs);
    if let Some(path) = &scale.label_selector
        && let Err(message) = nested(object, path, "string", Value::is_string)
    {
        errs.push(FieldError::invalid(path, "\"\"", &message));
    }
}
