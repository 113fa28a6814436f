//! Pruning a custom resource by its CRD's structural schema, as the apiextensions-apiserver's
//! decoder does (`unstructuredSchemaCoercer.apply`): `metadata` checked against `ObjectMeta`,
//! then the generic pruning of `apiserver/schema/pruning` (a port of `prune`/`skipPrune`),
//! then the `metadata` of embedded resources (`objectmeta.Coerce`). Each step's paths are
//! sorted, as upstream sorts them; all are written raw (`unknown field "%s"`). Between and
//! after these, the nulls and defaults of [`super::structural_defaults`].
//!
//! `x-kubernetes-preserve-unknown-fields` keeps what a node does not declare (its declared
//! properties are still pruned); `x-kubernetes-embedded-resource` keeps `apiVersion`, `kind`
//! and `metadata`, as the root always does.

use serde_json::Value;

use super::prune::prune;
use super::strict::{Errors, Path, Quoting, StrictError};
use super::structural_defaults;
use super::tree::{Node, OBJECT_META, Tree};

/// Keys an embedded resource (and the root) keeps without declaring them.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Deeper than this the walk stops (a guard; decoded bodies are depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// Prunes `object` by `schema` (a version's `openAPIV3Schema`); returns what was dropped, in
/// upstream's order.
pub(super) fn prune_custom(tree: &Tree, schema: &Value, object: &mut Value) -> Vec<StrictError> {
    let mut errors = Vec::new();
    if let (Some(meta), Some(object_meta)) = (object.get_mut("metadata"), tree.named(OBJECT_META)) {
        errors.extend(prune_meta(tree, object_meta, meta, "metadata"));
    }
    let mut paths = Vec::new();
    prune_node(Some(schema), object, true, &mut Path::default(), &mut paths);
    paths.sort();
    errors.extend(paths.into_iter().map(|p| StrictError::unknown(p, Quoting::Raw)));
    structural_defaults::prune_nulls(schema, object);
    if let Some(object_meta) = tree.named(OBJECT_META) {
        let mut embedded = Vec::new();
        coerce(tree, object_meta, Some(schema), object, "", 0, &mut embedded);
        embedded.sort_by_key(ToString::to_string);
        errors.extend(embedded);
    }
    structural_defaults::apply(schema, object);
    errors
}

/// `metadata` (of the resource or of an embedded one at `prefix`) against `ObjectMeta`.
fn prune_meta(tree: &Tree, object_meta: usize, meta: &mut Value, prefix: &str) -> Vec<StrictError> {
    let mut errors = Errors::default();
    prune(tree, &Node::Struct(object_meta), meta, &mut Path::at(prefix), &mut errors, Quoting::Raw);
    errors.0
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// `additionalProperties` when set: `Some(Some(schema))`, or `Some(None)` for a boolean (no
/// structural schema: what is under it is pruned whole, as upstream does).
fn additional(schema: &Value) -> Option<Option<&Value>> {
    schema.get("additionalProperties").map(|a| a.is_object().then_some(a))
}

fn items(schema: Option<&Value>) -> Option<&Value> {
    schema.and_then(|s| s.get("items")).filter(|i| i.is_object())
}

/// Upstream's `prune`: `root` is the resource root, which counts as an embedded resource.
fn prune_node(schema: Option<&Value>, x: &mut Value, root: bool, path: &mut Path, paths: &mut Vec<String>) {
    if path.depth() > MAX_DEPTH {
        return;
    }
    if let Some(s) = schema
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        skip_prune(s, x, root, path, paths);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = schema else {
                paths.extend(map.keys().map(|k| path.child(k)));
                map.clear();
                return;
            };
            let embedded = root || flag(s, "x-kubernetes-embedded-resource");
            let mut dropped = Vec::new();
            for (key, value) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(property) = s.get("properties").and_then(|p| p.get(key)) {
                    path.push_key(key);
                    prune_node(Some(property), value, false, path, paths);
                    path.pop();
                } else if let Some(additional) = additional(s) {
                    path.push_key(key);
                    prune_node(additional, value, false, path, paths);
                    path.pop();
                } else {
                    if !META_FIELDS.contains(&key.as_str()) || path.depth() > 0 {
                        paths.push(path.child(key));
                    }
                    dropped.push(key.clone());
                }
            }
            for key in dropped {
                map.remove(&key);
            }
        }
        Value::Array(list) => {
            let item_schema = items(schema);
            for (i, item) in list.iter_mut().enumerate() {
                path.push_index(i);
                prune_node(item_schema, item, false, path, paths);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Upstream's `skipPrune`: under `x-kubernetes-preserve-unknown-fields`, only what is declared
/// is pruned further.
fn skip_prune(schema: &Value, x: &mut Value, root: bool, path: &mut Path, paths: &mut Vec<String>) {
    if path.depth() > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
            for (key, value) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(property) = schema.get("properties").and_then(|p| p.get(key)) {
                    path.push_key(key);
                    prune_node(Some(property), value, false, path, paths);
                    path.pop();
                } else if let Some(additional) = additional(schema) {
                    path.push_key(key);
                    prune_node(additional, value, false, path, paths);
                    path.pop();
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(Some(schema)) {
                for (i, item) in list.iter_mut().enumerate() {
                    path.push_index(i);
                    skip_prune(item_schema, item, false, path, paths);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Upstream's `coerce` (minus the type checks of `apiVersion`/`kind`): the `metadata` of every
/// `x-kubernetes-embedded-resource` below the root, against `ObjectMeta`. `field_path` is a
/// `field.Path` string (`spec.items[0]`, `spec.byName[key]`).
fn coerce(
    tree: &Tree,
    object_meta: usize,
    schema: Option<&Value>,
    x: &mut Value,
    field_path: &str,
    depth: usize,
    out: &mut Vec<StrictError>,
) {
    let Some(s) = schema else { return };
    if depth > MAX_DEPTH {
        return;
    }
    let child =
        |key: &str| if field_path.is_empty() { key.to_string() } else { format!("{field_path}.{key}") };
    match x {
        Value::Object(map) => {
            if flag(s, "x-kubernetes-embedded-resource")
                && let Some(meta) = map.get_mut("metadata")
            {
                out.extend(prune_meta(tree, object_meta, meta, &child("metadata")));
            }
            for (key, value) in map.iter_mut() {
                if let Some(property) = s.get("properties").and_then(|p| p.get(key)) {
                    coerce(tree, object_meta, Some(property), value, &child(key), depth + 1, out);
                } else if let Some(additional) = additional(s) {
                    let path = format!("{field_path}[{key}]");
                    coerce(tree, object_meta, additional, value, &path, depth + 1, out);
                }
            }
        }
        Value::Array(list) => {
            let item_schema = items(Some(s));
            for (i, item) in list.iter_mut().enumerate() {
                let path = format!("{field_path}[{i}]");
                coerce(tree, object_meta, item_schema, item, &path, depth + 1, out);
            }
        }
        _ => {}
    }
}
