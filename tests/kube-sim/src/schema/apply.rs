//! Server-side apply's check of the applied configuration, as structured-merge-diff's
//! `ObjectToTyped` validates it (`typed/validate.go`): a field the schema does not declare is
//! `.spec.bogus: field not declared in schema`, whatever `fieldValidation` says.
//!
//! Upstream walks each object in Go's random map order and stops at the first undeclared key
//! of an object (the keys after it are not looked at, so which errors come back varies from
//! call to call); kube-sim walks in sorted order, which is one of upstream's possible answers.
//! Paths are structured-merge-diff's: `.field`, `[0]` in atomic lists, `[name="c"]` in
//! associative ones (the key fields sorted, missing ones from their defaults:
//! `ports[containerPort=80,protocol="TCP"]`). Types of values are not checked.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::tree::{Node, OBJECT_META, Tree};

/// Deeper than this the walk stops (a guard; apply bodies are depth-checked before).
const MAX_DEPTH: usize = 256;

/// What the applied object is checked against.
pub(super) enum Shape<'a> {
    /// A built-in struct tree.
    Typed(&'a Node),
    /// A custom resource's structural schema (`None`: nothing declared).
    Custom(Option<&'a Value>, bool),
}

/// The errors structured-merge-diff reports for `applied`, each `PATH: message`.
pub(super) fn undeclared(tree: &Tree, shape: Shape<'_>, applied: &Value) -> Vec<String> {
    let mut walk = Walk { tree, errors: Vec::new(), depth: 0 };
    match shape {
        Shape::Typed(node) => walk.typed(node, applied, ""),
        Shape::Custom(schema, root) => walk.custom(schema, applied, "", root),
    }
    walk.errors
}

struct Walk<'t> {
    tree: &'t Tree,
    errors: Vec<String>,
    depth: usize,
}

impl Walk<'_> {
    fn typed(&mut self, node: &Node, value: &Value, path: &str) {
        if self.depth > MAX_DEPTH {
            return;
        }
        self.depth += 1;
        match (node, value) {
            (Node::Struct(index), Value::Object(map)) => {
                let tree = self.tree;
                let fields = tree.get(*index).map(|t| &t.fields);
                for (key, child) in map {
                    match fields.and_then(|f| f.get(key)) {
                        Some(field) => self.typed(field, child, &format!("{path}.{key}")),
                        None => {
                            self.errors.push(format!("{path}.{key}: field not declared in schema"));
                            break;
                        }
                    }
                }
            }
            (Node::Map(elem), Value::Object(map)) => {
                for (key, child) in map {
                    self.typed(elem, child, &format!("{path}.{key}"));
                }
            }
            (Node::List { elem, keys, defaults }, Value::Array(items)) => {
                if let Some(elements) = self.elements(path, items, keys, defaults) {
                    for (element, item) in elements.iter().zip(items) {
                        self.typed(elem, item, &format!("{path}{element}"));
                    }
                }
            }
            _ => {}
        }
        self.depth -= 1;
    }

    /// A custom resource node; `embedded` for the root and `x-kubernetes-embedded-resource`
    /// (their `apiVersion` and `kind` are declared, their `metadata` is `ObjectMeta`).
    fn custom(&mut self, schema: Option<&Value>, value: &Value, path: &str, embedded: bool) {
        if self.depth > MAX_DEPTH {
            return;
        }
        self.depth += 1;
        match value {
            Value::Object(map) => {
                let s = schema.unwrap_or(&Value::Null);
                let preserve = s["x-kubernetes-preserve-unknown-fields"].as_bool().unwrap_or(false);
                for (key, child) in map {
                    let child_path = format!("{path}.{key}");
                    if embedded && key == "metadata" {
                        if let Some(object_meta) = self.tree.named(OBJECT_META) {
                            self.typed(&Node::Struct(object_meta), child, &child_path);
                        }
                    } else if embedded && (key == "apiVersion" || key == "kind") {
                    } else if let Some(property) = s["properties"].get(key) {
                        let nested = property["x-kubernetes-embedded-resource"].as_bool().unwrap_or(false);
                        self.custom(Some(property), child, &child_path, nested);
                    } else if let Some(additional) = s.get("additionalProperties") {
                        let nested = additional["x-kubernetes-embedded-resource"].as_bool().unwrap_or(false);
                        self.custom(additional.is_object().then_some(additional), child, &child_path, nested);
                    } else if !preserve {
                        self.errors.push(format!("{child_path}: field not declared in schema"));
                        break;
                    }
                }
            }
            Value::Array(items) => {
                let s = schema.unwrap_or(&Value::Null);
                let keys: Vec<String> = if s["x-kubernetes-list-type"] == "map" {
                    s["x-kubernetes-list-map-keys"]
                        .as_array()
                        .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let item_schema = s.get("items").filter(|i| i.is_object());
                let defaults: Map<String, Value> = keys
                    .iter()
                    .filter_map(|k| {
                        let default = item_schema?["properties"][k].get("default")?;
                        Some((k.clone(), default.clone()))
                    })
                    .collect();
                if let Some(elements) = self.elements(path, items, &keys, &defaults) {
                    let nested = item_schema
                        .and_then(|i| i["x-kubernetes-embedded-resource"].as_bool())
                        .unwrap_or(false);
                    for (element, item) in elements.iter().zip(items) {
                        self.custom(item_schema, item, &format!("{path}{element}"), nested);
                    }
                }
            }
            _ => {}
        }
        self.depth -= 1;
    }

    /// The path elements of a list's items (`[0]`, `[name="c"]`), or `None` when an item of an
    /// associative list cannot be keyed (then nothing below the list is checked, as upstream).
    fn elements(
        &mut self,
        path: &str,
        items: &[Value],
        keys: &[String],
        defaults: &Map<String, Value>,
    ) -> Option<Vec<String>> {
        if keys.is_empty() {
            return Some((0..items.len()).map(|i| format!("[{i}]")).collect());
        }
        let mut elements = Vec::with_capacity(items.len());
        let mut seen = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let element = match item {
                Value::Null => Err("associative list with keys may not have a null element".to_string()),
                Value::Object(map) => key_element(map, keys, defaults),
                _ => Err("associative list with keys may not have non-map elements".to_string()),
            };
            match element {
                Ok(element) => {
                    if !seen.insert(element.clone()) {
                        self.errors.push(format!("{path}: duplicate entries for key {element}"));
                    }
                    elements.push(element);
                }
                Err(message) => {
                    self.errors.push(format!("{path}: element {i}: {message}"));
                    return None;
                }
            }
        }
        Some(elements)
    }
}

/// `[k1=v1,k2=v2]`: the key fields present (or defaulted), sorted by name, values as JSON.
fn key_element(
    item: &Map<String, Value>,
    keys: &[String],
    defaults: &Map<String, Value>,
) -> Result<String, String> {
    let mut fields: Vec<(&str, &Value)> = keys
        .iter()
        .filter_map(|k| item.get(k).or_else(|| defaults.get(k)).map(|v| (k.as_str(), v)))
        .collect();
    if fields.is_empty() {
        let quoted: Vec<String> = keys.iter().map(|k| crate::go_fmt::quote(k)).collect();
        return Err(format!(
            "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
            quoted.join(" ")
        ));
    }
    fields.sort_by_key(|(k, _)| *k);
    let rendered: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(format!("[{}]", rendered.join(",")))
}
