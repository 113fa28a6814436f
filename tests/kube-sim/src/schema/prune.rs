//! Dropping the fields a built-in kind does not know from an already decoded object (YAML and
//! in-process bodies, patched objects). Keys are met in sorted order, which is the order Go's
//! decoder meets them in the JSON Go marshals (`json.Marshal` sorts map keys), so the errors
//! come out as upstream reports them for a patched object.

use serde_json::Value;

use super::strict::{Errors, Path, Quoting, StrictError};
use super::tree::{Node, Tree};

/// Deeper than this the walk stops (a guard for hostile in-process values; decoded bodies are
/// depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// Removes from `value` every key `node` has no field for, recording each at its path.
pub(super) fn prune(
    tree: &Tree,
    node: &Node,
    value: &mut Value,
    path: &mut Path,
    errors: &mut Errors,
    quoting: Quoting,
) {
    if path.depth() > MAX_DEPTH {
        return;
    }
    match (node, value) {
        (Node::Struct(index), Value::Object(map)) => {
            let Some(t) = tree.get(*index) else { return };
            let mut unknown = Vec::new();
            for (key, child) in map.iter_mut() {
                match t.fields.get(key) {
                    Some(field) => {
                        path.push_key(key);
                        prune(tree, field, child, path, errors, quoting);
                        path.pop();
                    }
                    None => {
                        errors.push(StrictError::unknown(path.child(key), quoting));
                        unknown.push(key.clone());
                    }
                }
            }
            for key in unknown {
                map.remove(&key);
            }
        }
        (Node::Map(elem), Value::Object(map)) => {
            for (key, child) in map.iter_mut() {
                path.push_key(key);
                prune(tree, elem, child, path, errors, quoting);
                path.pop();
            }
        }
        (Node::List { elem, .. }, Value::Array(items)) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push_index(i);
                prune(tree, elem, item, path, errors, quoting);
                path.pop();
            }
        }
        // Scalars, opaque values, `interface{}` and values of another JSON type than the field's.
        _ => {}
    }
}

/// Decodes a repeated key's `value` into what its first occurrence filled, as Go does: a
/// struct's fields are decoded into the existing struct (so objects merge, recursively), a
/// map's entries are added to the existing map (each entry replaced whole), and anything else
/// (lists, scalars, `interface{}`) is replaced.
pub(super) fn merge_into(tree: &Tree, node: &Node, existing: &mut Value, value: Value) {
    match (node, existing, value) {
        (Node::Struct(index), Value::Object(old), Value::Object(new)) => {
            for (key, v) in new {
                let field = tree.get(*index).and_then(|t| t.fields.get(&key));
                match (old.get_mut(&key), field) {
                    (Some(slot), Some(field)) => merge_into(tree, field, slot, v),
                    _ => {
                        old.insert(key, v);
                    }
                }
            }
        }
        (Node::Map(_), Value::Object(old), Value::Object(new)) => old.extend(new),
        (_, existing, value) => *existing = value,
    }
}
