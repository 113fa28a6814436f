//! The built-in kinds' field trees: `schema/types.json`, generated from the real Go types by
//! `schema/gen` (see its doc for the format), embedded and parsed once.
//!
//! Struct types are shared by index, so a recursive type (`JSONSchemaProps`) is one entry.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The generator's output, embedded so the crate needs no Go to build.
pub(super) const TYPES_JSON: &str = include_str!("../../schema/types.json");

/// The synthetic struct upstream decodes a JSON patch's operations into (`handlers.jsonPatchOp`).
pub(super) const JSON_PATCH_OP: &str = "kube-sim.jsonPatchOp";

/// The OpenAPI name of `metav1.ObjectMeta` (custom resources' metadata is checked against it).
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// What one field holds.
#[derive(Debug, PartialEq)]
pub(crate) enum Node {
    /// A scalar (string, number, bool, base64 bytes).
    Scalar,
    /// A type with its own `UnmarshalJSON` (Quantity, Time, IntOrString, RawExtension...):
    /// taken as it is, nothing inside is checked.
    Opaque,
    /// `interface{}` (and every level of a custom resource): any JSON; duplicates are still
    /// reported, as Go's decoder does for `map[string]interface{}`.
    Any,
    /// A struct: index into [`Tree::types`].
    Struct(usize),
    /// A list; `keys` are its associative keys as server-side apply sees them, `defaults`
    /// the default values of those key fields.
    List { elem: Box<Node>, keys: Vec<String>, defaults: Map<String, Value> },
    /// A map with string keys.
    Map(Box<Node>),
}

/// A Go struct: its JSON field names (inlined structs flattened).
#[derive(Debug)]
pub(crate) struct StructType {
    /// JSON name → what it holds.
    pub fields: HashMap<String, Node>,
}

/// Every struct type and the kinds served.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    types: Vec<StructType>,
    by_name: HashMap<String, usize>,
    /// `apps/v1/Deployment` → its struct.
    kinds: HashMap<String, usize>,
}

/// The embedded tree, parsed on first use. A malformed file gives an empty tree (nothing is
/// then checked); the unit tests make sure the committed file parses and covers every kind.
pub(crate) fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| Tree::parse(TYPES_JSON).unwrap_or_default())
}

impl Tree {
    /// Parses the generator's JSON; `None` when it is not the expected shape.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let doc: Value = serde_json::from_str(text).ok()?;
        let types = doc.get("types")?.as_object()?;
        let mut tree = Self::default();
        // Names first: fields refer to types anywhere in the file (and to themselves).
        for (index, name) in types.keys().enumerate() {
            tree.by_name.insert(name.clone(), index);
        }
        tree.by_name.insert(JSON_PATCH_OP.into(), types.len());
        for fields in types.values() {
            let fields = fields.as_object()?.iter().map(|(f, v)| (f.clone(), tree.node(v))).collect();
            tree.types.push(StructType { fields });
        }
        let op = ["op", "path", "from"].into_iter().map(|f| (f.to_string(), Node::Scalar));
        let fields = op.chain(std::iter::once(("value".to_string(), Node::Any))).collect();
        tree.types.push(StructType { fields });
        for (kind, name) in doc.get("kinds")?.as_object()? {
            tree.kinds.insert(kind.clone(), *tree.by_name.get(name.as_str()?)?);
        }
        Some(tree)
    }

    /// One encoded field value; anything unrecognised is taken as opaque (never rejected).
    fn node(&self, v: &Value) -> Node {
        match v {
            Value::String(s) => match s.as_str() {
                "" => Node::Scalar,
                "any" => Node::Any,
                name => self.by_name.get(name).map_or(Node::Opaque, |&i| Node::Struct(i)),
            },
            Value::Array(a) => {
                let elem = Box::new(a.get(1).map_or(Node::Opaque, |e| self.node(e)));
                match a.first().and_then(Value::as_str) {
                    Some("map") => Node::Map(elem),
                    Some("list") => Node::List {
                        elem,
                        keys: a
                            .get(2)
                            .and_then(Value::as_array)
                            .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                            .unwrap_or_default(),
                        defaults: a.get(3).and_then(Value::as_object).cloned().unwrap_or_default(),
                    },
                    _ => Node::Opaque,
                }
            }
            _ => Node::Opaque,
        }
    }

    /// The struct of `apiVersion`/`kind` (`v1`/`Pod`, `apps/v1`/`DeploymentList`).
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        self.kinds.get(&format!("{api_version}/{kind}")).copied()
    }

    /// A struct by its OpenAPI name.
    pub fn named(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The struct at `index` (indices come from this tree).
    pub fn get(&self, index: usize) -> Option<&StructType> {
        self.types.get(index)
    }

    /// Every kind key (`apps/v1/Deployment`).
    #[cfg(test)]
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }
}
