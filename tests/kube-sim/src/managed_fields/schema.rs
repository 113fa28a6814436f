//! What field tracking needs to know about each position of an object: whether an object is a
//! struct (named fields) or a map, whether a value is atomic, and how a list's items are
//! identified (upstream's structured-merge-diff schema, as the apiserver builds it).
//!
//! * Built-in kinds: [`crate::patch::schema`] (the Go types' merge metadata and OpenAPI list
//!   types). Every object there is treated as a struct: built-in maps hold scalars (labels,
//!   data, quantities), for which struct and map tracking are the same.
//! * Custom resources: the CRD's structural schema (`openAPIV3Schema`): `properties` are named
//!   fields, `additionalProperties` a map, `x-kubernetes-preserve-unknown-fields` (and anything
//!   the schema does not describe) untyped; lists are atomic unless `x-kubernetes-list-type`
//!   says `set` or `map`; `x-kubernetes-map-type: atomic` makes an object atomic. `metadata` is
//!   ObjectMeta, as for every kind.
//! * Untyped ("deduced") values: objects are maps, lists atomic.

use serde_json::{Map, Value};

use super::fieldpath::PathElement;
use crate::patch::schema::{self as builtin, ApplyList, FieldMeta, Schema};

/// The type information of one position.
#[derive(Clone, Copy, Debug)]
enum Node<'s> {
    Builtin(FieldMeta),
    /// The root of a custom resource: `metadata` is ObjectMeta, the rest from the schema.
    CrdRoot(&'s Value),
    /// A node of a CRD's structural schema.
    Crd(&'s Value),
    Deduced,
}

/// How a list's items are identified.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ListType {
    /// The list is one value.
    Atomic,
    /// Items are scalars, identified by value.
    Set,
    /// Items are objects identified by these key fields (with their defaults).
    Map(Vec<(String, Option<Value>)>),
}

/// A position in an object, with its type information.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot<'s> {
    node: Node<'s>,
}

impl<'s> Slot<'s> {
    /// The root of an object of `kind`; `crd_schema` is the `openAPIV3Schema` of a custom
    /// resource's version (`None` for built-in kinds).
    pub(crate) fn root(kind: &str, crd_schema: Option<&'s Value>) -> Self {
        let node = match crd_schema {
            Some(schema) => Node::CrdRoot(schema),
            None => Node::Builtin(builtin::object(builtin::root_for_kind(kind))),
        };
        Self { node }
    }

    /// The slot of field `key` of an object here, and whether it is a named (struct) field.
    pub(crate) fn field(&self, key: &str) -> (Slot<'s>, bool) {
        let node = match self.node {
            Node::Builtin(meta) => {
                return (Self { node: Node::Builtin(builtin::field(meta.node, key)) }, true);
            }
            Node::CrdRoot(_) if key == "metadata" => {
                Node::Builtin(builtin::field(Schema::GenericObject, "metadata"))
            }
            Node::CrdRoot(schema) | Node::Crd(schema) => return crd_field(schema, key),
            Node::Deduced => Node::Deduced,
        };
        (Self { node }, !matches!(node, Node::Deduced))
    }

    /// The slot of each item of a list here.
    pub(crate) fn item(&self) -> Slot<'s> {
        let node = match self.node {
            // A built-in list's metadata describes its items (their schema and atomicity).
            Node::Builtin(meta) => Node::Builtin(meta),
            Node::CrdRoot(schema) | Node::Crd(schema) => match schema.get("items") {
                Some(items) if items.is_object() => Node::Crd(items),
                _ => Node::Deduced,
            },
            Node::Deduced => Node::Deduced,
        };
        Self { node }
    }

    /// Whether an object here is atomic (owned and replaced as a whole).
    pub(crate) fn atomic_object(&self) -> bool {
        match self.node {
            Node::Builtin(meta) => meta.atomic,
            Node::Crd(schema) => {
                schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
            }
            Node::CrdRoot(_) | Node::Deduced => false,
        }
    }

    /// How a list here is tracked.
    pub(crate) fn list_type(&self) -> ListType {
        match self.node {
            Node::Builtin(meta) => match meta.apply_list() {
                ApplyList::Atomic => ListType::Atomic,
                ApplyList::Set => ListType::Set,
                ApplyList::Map(keys) => ListType::Map(
                    keys.iter().map(|key| (key.to_string(), Some(builtin_key_default(key)))).collect(),
                ),
            },
            Node::Crd(schema) => crd_list_type(schema),
            Node::CrdRoot(_) | Node::Deduced => ListType::Atomic,
        }
    }

    /// The path element of `item` in a (non-atomic) list of type `list`.
    pub(crate) fn item_element(list: &ListType, item: &Value) -> Result<PathElement, String> {
        match list {
            ListType::Atomic => Err("invalid indexing of non-associative list".into()),
            ListType::Set => match item {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
                Value::Null => {
                    Err("associative list without keys has an element that's an explicit null".into())
                }
                scalar => Ok(PathElement::value(scalar)),
            },
            ListType::Map(keys) => {
                let Value::Object(fields) = item else {
                    return Err(match item {
                        Value::Null => "associative list with keys may not have a null element".into(),
                        _ => "associative list with keys may not have non-map elements".into(),
                    });
                };
                let mut key = Map::new();
                for (name, default) in keys {
                    match (fields.get(name), default) {
                        (Some(value), _) => {
                            key.insert(name.clone(), value.clone());
                        }
                        (None, Some(default)) => {
                            key.insert(name.clone(), default.clone());
                        }
                        // Upstream leaves a key field without a default out of the key.
                        (None, None) => {}
                    }
                }
                if key.is_empty() {
                    let names: Vec<&str> = keys.iter().map(|(name, _)| name.as_str()).collect();
                    return Err(format!(
                        "associative list with keys has an element that omits all key fields {names:?} \
                         (and doesn't have default values for any key fields)"
                    ));
                }
                Ok(PathElement::key(&key))
            }
        }
    }
}

/// The defaults the v1.35 OpenAPI gives the key fields of built-in keyed lists: `protocol`
/// `TCP` (container and service ports), `0` for port numbers, `""` for the rest.
fn builtin_key_default(key: &str) -> Value {
    match key {
        "protocol" => Value::String("TCP".into()),
        "containerPort" | "port" => Value::from(0),
        _ => Value::String(String::new()),
    }
}

fn crd_field<'s>(schema: &'s Value, key: &str) -> (Slot<'s>, bool) {
    if let Some(child) = schema.get("properties").and_then(|p| p.get(key)).filter(|c| c.is_object()) {
        return (Slot { node: Node::Crd(child) }, true);
    }
    let node = match schema.get("additionalProperties") {
        Some(additional @ Value::Object(_)) => Node::Crd(additional),
        // Preserved unknown fields, `additionalProperties: true` and fields the schema does not
        // know (which upstream would have pruned) are untyped.
        _ => Node::Deduced,
    };
    (Slot { node }, false)
}

fn crd_list_type(schema: &Value) -> ListType {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => {
            let properties = schema.get("items").and_then(|items| items.get("properties"));
            let keys = schema.get("x-kubernetes-list-map-keys").and_then(Value::as_array);
            let keys = keys.into_iter().flatten().filter_map(Value::as_str);
            ListType::Map(
                keys.map(|key| {
                    let default = properties.and_then(|p| p.get(key)).and_then(|p| p.get("default")).cloned();
                    (key.to_string(), default)
                })
                .collect(),
            )
        }
        _ => ListType::Atomic,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn built_in_positions() {
        let root = Slot::root("Deployment", None);
        let (spec, named) = root.field("spec");
        assert!(named);
        assert!(spec.field("selector").0.atomic_object());
        let containers = spec.field("template").0.field("spec").0.field("containers").0;
        assert_eq!(containers.list_type(), ListType::Map(vec![("name".into(), Some(json!("")))]));
        let ports = containers.item().field("ports").0;
        let port = Slot::item_element(&ports.list_type(), &json!({"containerPort": 80})).expect("keyed");
        assert_eq!(port.as_str(), r#"k:{"containerPort":80,"protocol":"TCP"}"#);
        let finalizers = root.field("metadata").0.field("finalizers").0;
        assert_eq!(finalizers.list_type(), ListType::Set);
        assert_eq!(
            spec.field("template").0.field("spec").0.field("tolerations").0.list_type(),
            ListType::Atomic
        );
        let owners = root.field("metadata").0.field("ownerReferences").0;
        assert!(owners.item().atomic_object());
        assert!(Slot::item_element(&owners.list_type(), &json!(null)).is_err());
    }

    #[test]
    fn custom_resource_positions() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "objs": {"type": "object", "additionalProperties": {"type": "object"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "atomicobj": {"type": "object", "x-kubernetes-map-type": "atomic"}}}}});
        let root = Slot::root("Widget", Some(&schema));
        assert!(root.field("metadata").0.field("ownerReferences").0.item().atomic_object());
        let (spec, named) = root.field("spec");
        assert!(named);
        assert_eq!(spec.field("ports").0.list_type(), ListType::Map(vec![("name".into(), None)]));
        assert!(!spec.field("objs").0.field("one").1);
        assert!(!spec.field("free").0.field("deep").1);
        assert_eq!(spec.field("free").0.field("list").0.list_type(), ListType::Atomic);
        assert!(spec.field("atomicobj").0.atomic_object());
        assert!(Slot::item_element(&spec.field("ports").0.list_type(), &json!({"port": 1})).is_err());
    }
}
