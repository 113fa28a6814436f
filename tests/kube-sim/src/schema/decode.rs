//! Strict JSON decoding of a request body against a field tree, as `sigs.k8s.io/json`'s
//! `UnmarshalStrict` decodes into the Go types: one pass in document order that reports every
//! unknown key (and skips its value, so nothing under it is reported) and every key given
//! twice in one object, and builds the object without the unknown keys.
//!
//! A duplicate key is decoded again into what the first one filled, as Go does: objects of a
//! struct or map field merge, anything else is replaced. Values of the wrong JSON type are
//! kept as they are (Go fails the whole decode on them; kube-sim does not model that).

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::prune::merge_into;
use super::strict::{Errors, Path, Quoting, StrictError};
use super::tree::{Node, Tree};

/// Decodes `body` as a JSON value of shape `node`: the value without unknown fields, and the
/// strict errors in the order Go's decoder finds them. `Err` when `body` is not JSON (the
/// caller words that error).
pub(super) fn decode(
    tree: &Tree,
    node: &Node,
    body: &[u8],
) -> Result<(Value, Vec<StrictError>), serde_json::Error> {
    let walk = Walk { tree, path: RefCell::new(Path::default()), errors: RefCell::new(Errors::default()) };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Seed { walk: &walk, node }.deserialize(&mut de)?;
    de.end()?;
    Ok((value, walk.errors.into_inner().0))
}

/// The state shared by every level of one decode.
struct Walk<'t> {
    tree: &'t Tree,
    path: RefCell<Path>,
    errors: RefCell<Errors>,
}

/// Decodes one value of shape `node`.
#[derive(Clone, Copy)]
struct Seed<'w, 't> {
    walk: &'w Walk<'t>,
    node: &'t Node,
}

impl<'de> DeserializeSeed<'de> for Seed<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.node {
            // Custom unmarshalers and scalars check nothing inside.
            Node::Opaque | Node::Scalar => serde::Deserialize::deserialize(deserializer),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Seed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let elem = match self.node {
            Node::List { elem, .. } => Some(&**elem),
            Node::Any => Some(self.node),
            _ => None, // not a list here: kept as it is
        };
        let mut items = Vec::new();
        loop {
            let item = match elem {
                Some(node) => {
                    self.walk.path.borrow_mut().push_index(items.len());
                    let item = seq.next_element_seed(Seed { walk: self.walk, node });
                    self.walk.path.borrow_mut().pop();
                    item?
                }
                None => seq.next_element::<Value>()?,
            };
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = match self.node {
                Node::Struct(index) => match self.walk.tree.get(*index).and_then(|t| t.fields.get(&key)) {
                    Some(child) => Some(child),
                    None => {
                        let path = self.walk.path.borrow().child(&key);
                        self.walk.errors.borrow_mut().push(StrictError::unknown(path, Quoting::Go));
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                },
                Node::Map(elem) => Some(&**elem),
                Node::Any => Some(self.node),
                _ => None, // not an object here: kept as it is
            };
            let duplicate = out.contains_key(&key);
            if duplicate && child.is_some() {
                let path = self.walk.path.borrow().child(&key);
                self.walk.errors.borrow_mut().push(StrictError::duplicate(path));
            }
            let value = match child {
                Some(node) => {
                    self.walk.path.borrow_mut().push_key(&key);
                    let value = map.next_value_seed(Seed { walk: self.walk, node });
                    self.walk.path.borrow_mut().pop();
                    value?
                }
                None => map.next_value::<Value>()?,
            };
            match (out.get_mut(&key), child) {
                (Some(existing), Some(node)) => merge_into(self.walk.tree, node, existing, value),
                _ => {
                    out.insert(key, value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}
