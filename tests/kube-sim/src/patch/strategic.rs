//! Strategic merge patch, a port of `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (`StrategicMergeMapPatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`, as the
//! apiserver calls it). Function names follow upstream's so the two can be compared.
//!
//! Deliberate differences (none changes a result kubectl or a controller relies on):
//! * Errors upstream reports as 500 (missing merge key, unknown `$patch` value, mixed list element
//!   types) are `BadRequest` here: the patch body is at fault.
//! * `$patch: merge` is accepted as a no-op (upstream rejects it).
//! * Values copied from the patch (new keys, new list items, replaced lists) are cleaned of nulls
//!   and `$` directives; upstream copies them raw and drops them when decoding into the Go type.
//! * `$setElementOrder` on a list without a merge strategy is ignored.

use serde_json::{Map, Value};

use super::PatchError;
use super::order::{normalize_element_order, partition_by_presence, values_equal};
use super::schema::{self, FieldMeta, ListStrategy, Schema};

pub(super) const DIRECTIVE_MARKER: &str = "$patch";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";

// Messages of upstream's `mergepatch` errors.
const ERR_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
const ERR_LIST_OF_LISTS: &str = "lists of lists are not supported";

pub(super) type Result<T> = std::result::Result<T, PatchError>;

fn bad_request(message: impl Into<String>) -> PatchError {
    PatchError::BadRequest(message.into())
}

pub(super) fn no_merge_key(item: &Value, merge_key: &str) -> PatchError {
    bad_request(format!("map: {item} does not contain declared merge key: {merge_key}"))
}

/// Applies `patch` to `original`, both whole objects whose schema is `root`.
///
/// The caller must have bounded the nesting depth of `patch`: recursion follows the patch.
pub(super) fn strategic_merge(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    root: Schema,
) -> Result<Map<String, Value>> {
    merge_map(original, patch, root)
}

/// Recursively merges `patch` into `original` (upstream `mergeMap`).
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    node: Schema,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE_MARKER);
                return Ok(clean_map(patch));
            }
            Some("delete") => return Ok(Map::new()),
            Some("merge") => {
                patch.remove(DIRECTIVE_MARKER);
            }
            _ => {
                return Err(bad_request(format!(
                    "unknown patch type: {directive} in map: {}",
                    Value::Object(patch.clone())
                )));
            }
        }
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, node)?;

    // Deletion lists run after the other keys so that the outcome does not depend on the map
    // order (upstream iterates a Go map, whose order is random).
    let mut deletion_lists = Vec::new();
    for (key, patch_value) in patch {
        if let Some(rest) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            let target = extract_key(rest, ERR_PRIMITIVE_LIST)?;
            deletion_lists.push((target.to_owned(), patch_value));
            continue;
        }
        if key.starts_with('$') {
            // `$setElementOrder/*` was consumed above; unknown directives are dropped.
            continue;
        }
        let meta = schema::field(node, &key);
        merge_field(&mut original, key, patch_value, meta)?;
    }
    for (target, to_delete) in deletion_lists {
        apply_deletion_list(&mut original, &target, to_delete);
    }
    Ok(original)
}

/// Merges one patch field into `original` (the body of upstream's main `mergeMap` loop).
fn merge_field(
    original: &mut Map<String, Value>,
    key: String,
    patch_value: Value,
    meta: FieldMeta,
) -> Result<()> {
    if patch_value.is_null() {
        original.remove(&key);
        return Ok(());
    }
    let merged = match (original.get_mut(&key).map(std::mem::take), patch_value) {
        (Some(Value::Object(live)), Value::Object(patch)) => {
            Value::Object(merge_map(live, patch, meta.node)?)
        }
        (Some(Value::Array(live)), Value::Array(patch)) => {
            Value::Array(merge_slice_handler(live, patch, meta)?)
        }
        // Absent from the original, or of another type: the patch value is taken.
        (_, Value::Object(patch)) => Value::Object(merge_map(Map::new(), patch, meta.node)?),
        (_, Value::Array(patch)) => Value::Array(merge_slice_handler(Vec::new(), patch, meta)?),
        (_, scalar) => scalar,
    };
    original.insert(key, merged);
    Ok(())
}

/// `$deleteFromPrimitiveList/<target>: [...]` removes those scalars from the list `target`.
fn apply_deletion_list(original: &mut Map<String, Value>, target: &str, to_delete: Value) {
    match (original.get_mut(target), to_delete) {
        // Upstream treats a null deletion list like any null: the field is removed.
        (Some(_), Value::Null) => {
            original.remove(target);
        }
        (Some(Value::Array(live)), Value::Array(to_delete)) => {
            live.retain(|item| !to_delete.iter().any(|gone| values_equal(item, gone)));
        }
        // Absent, or not a list on one side: nothing to delete (upstream skips type mismatches).
        _ => {}
    }
}

/// `key` must be `/<field>` (upstream `extractKey`).
fn extract_key<'a>(rest: &'a str, error: &str) -> Result<&'a str> {
    rest.strip_prefix('/').ok_or_else(|| bad_request(error))
}

/// Upstream `applyRetainKeysDirective`: `$retainKeys` lists the keys of `original` to keep.
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_request(ERR_RETAIN_KEYS));
    };
    let retained = |key: &str| retain.iter().any(|item| item.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(key) {
            return Err(bad_request(ERR_RETAIN_KEYS));
        }
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// Upstream `mergePatchIntoOriginal`: merges each list named by a `$setElementOrder/<field>`
/// directive, then orders it as the directive says (server-only items keep their live place).
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    node: Schema,
) -> Result<()> {
    let directive_keys: Vec<String> =
        patch.keys().filter(|key| key.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
    for directive_key in directive_keys {
        let Some(order) = patch.remove(&directive_key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_request(ERR_SET_ELEMENT_ORDER));
        };
        let target =
            extract_key(&directive_key[SET_ELEMENT_ORDER_PREFIX.len()..], ERR_SET_ELEMENT_ORDER)?.to_owned();
        let meta = schema::field(node, &target);
        let merge_key = match meta.list {
            ListStrategy::Replace => continue,
            ListStrategy::MergeScalars => None,
            ListStrategy::MergeByKey(key) => Some(key),
        };
        let live = match original.get(&target) {
            Some(Value::Array(live)) => Some(live.clone()),
            _ => None,
        };
        let patch_list = match patch.remove(&target) {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(_) => return Err(bad_request(ERR_SET_ELEMENT_ORDER)),
        };
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or_default(), &order, merge_key)?;
        let server_order = live.clone().unwrap_or_default();
        let merged = match (live, patch_list) {
            (Some(live), None) => live,
            (live, Some(patch_list)) => merge_slice(live.unwrap_or_default(), patch_list, meta)?,
            (None, None) => continue,
        };
        let key_for_items =
            if merged.iter().all(Value::is_object) && !merged.is_empty() { merge_key } else { None };
        let (patch_items, server_only) = partition_by_presence(merged, &order, key_for_items)?;
        let ordered =
            normalize_element_order(patch_items, server_only, &order, &server_order, key_for_items)?;
        original.insert(target, Value::Array(ordered));
    }
    Ok(())
}

/// Upstream `validatePatchWithSetOrderList`: the patch list must follow the directive's order.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = match merge_key {
        Some(_) => {
            let mut kept = Vec::new();
            for item in patch_list {
                let Value::Object(map) = item else {
                    return Err(bad_request(format!(
                        "expected a map in list with merge key, but received {item}"
                    )));
                };
                if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some("delete") {
                    kept.push(item);
                }
            }
            kept
        }
        None => patch_list.iter().collect(),
    };
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < non_delete.len() && order_index < order.len() {
        let item = non_delete[patch_index];
        if item.get(DIRECTIVE_MARKER).is_some() {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(item, &order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_delete.len() && order_index >= order.len() {
        return Err(bad_request(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: Option<&str>) -> Result<bool> {
    let Some(merge_key) = merge_key else {
        return Ok(values_equal(left, right));
    };
    let left_value = left.get(merge_key).ok_or_else(|| no_merge_key(left, merge_key))?;
    let right_value = right.get(merge_key).ok_or_else(|| no_merge_key(right, merge_key))?;
    Ok(values_equal(left_value, right_value))
}

/// Upstream `mergeSliceHandler`: lists with a merge strategy merge, others are replaced.
fn merge_slice_handler(live: Vec<Value>, patch: Vec<Value>, meta: FieldMeta) -> Result<Vec<Value>> {
    match meta.list {
        ListStrategy::Replace => Ok(patch.into_iter().map(clean_value).collect()),
        ListStrategy::MergeScalars | ListStrategy::MergeByKey(_) => merge_slice(live, patch, meta),
    }
}

/// The kind of every element of a list (upstream `sliceElementType`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ElementKind {
    Object,
    Scalar(u8),
}

fn element_kind(lists: [&[Value]; 2]) -> Result<Option<ElementKind>> {
    let mut kind = None;
    for item in lists.into_iter().flatten() {
        let this = match item {
            Value::Array(_) => return Err(PatchError::Unprocessable(ERR_LIST_OF_LISTS.into())),
            Value::Object(_) => ElementKind::Object,
            Value::Null => ElementKind::Scalar(0),
            Value::Bool(_) => ElementKind::Scalar(1),
            Value::Number(_) => ElementKind::Scalar(2),
            Value::String(_) => ElementKind::Scalar(3),
        };
        match kind {
            None => kind = Some(this),
            Some(previous) if previous != this => {
                return Err(bad_request(format!(
                    "list element types are not identical: {}",
                    Value::Array(lists.iter().flat_map(|list| list.iter().cloned()).collect())
                )));
            }
            Some(_) => {}
        }
    }
    Ok(kind)
}

/// Upstream `mergeSlice`: merges two lists of a field with `patchStrategy:"merge"`.
fn merge_slice(live: Vec<Value>, patch: Vec<Value>, meta: FieldMeta) -> Result<Vec<Value>> {
    let Some(kind) = element_kind([&live, &patch])? else {
        return Ok(live);
    };
    if kind != ElementKind::Object {
        let mut merged: Vec<Value> = Vec::with_capacity(live.len() + patch.len());
        for item in live.iter().chain(patch.iter()) {
            if !merged.iter().any(|seen| values_equal(seen, item)) {
                merged.push(item.clone());
            }
        }
        let (patch_items, server_only) = partition_by_presence(merged, &patch, None)?;
        return normalize_element_order(patch_items, server_only, &patch, &live, None);
    }
    let ListStrategy::MergeByKey(merge_key) = meta.list else {
        return Err(bad_request("cannot merge lists without merge key for a list of objects"));
    };
    let (live, patch) = merge_slice_with_special_elements(live, patch, merge_key)?;
    let merged = merge_slice_without_special_elements(live.clone(), &patch, merge_key, meta.node)?;
    let (patch_items, server_only) = partition_by_presence(merged, &patch, Some(merge_key))?;
    normalize_element_order(patch_items, server_only, &patch, &live, Some(merge_key))
}

/// Upstream `mergeSliceWithSpecialElements`: applies `{"$patch":"delete",<key>:...}` and
/// `{"$patch":"replace"}` items; returns the live list and the patch without them.
fn merge_slice_with_special_elements(
    mut live: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut without_special = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE_MARKER) else {
            without_special.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let key_value = item.get(merge_key).ok_or_else(|| no_merge_key(&item, merge_key))?;
                live.retain(|existing| !has_key_value(existing, merge_key, key_value));
            }
            // Upstream keeps scanning so that other directive items are pruned too.
            Some("replace") => replace = true,
            Some("merge") => {}
            _ => {
                return Err(bad_request(format!("unknown patch type: {directive} in map: {item}")));
            }
        }
    }
    if replace {
        return Ok((without_special.into_iter().map(clean_value).collect(), Vec::new()));
    }
    Ok((live, without_special))
}

/// Upstream `mergeSliceWithoutSpecialElements`: items with a live counterpart (same merge key
/// value) are merged into it, the others are appended.
fn merge_slice_without_special_elements(
    mut live: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    node: Schema,
) -> Result<Vec<Value>> {
    for item in patch {
        let Value::Object(item_map) = item else {
            return Err(bad_request(format!("expected a map in merge list, got {item}")));
        };
        let key_value = item_map.get(merge_key).ok_or_else(|| no_merge_key(item, merge_key))?;
        match live.iter().position(|existing| has_key_value(existing, merge_key, key_value)) {
            Some(index) => {
                let existing = match std::mem::take(&mut live[index]) {
                    Value::Object(existing) => existing,
                    _ => Map::new(),
                };
                live[index] = Value::Object(merge_map(existing, item_map.clone(), node)?);
            }
            None => live.push(Value::Object(merge_map(Map::new(), item_map.clone(), node)?)),
        }
    }
    Ok(live)
}

fn has_key_value(item: &Value, merge_key: &str, key_value: &Value) -> bool {
    item.get(merge_key).is_some_and(|value| values_equal(value, key_value))
}

/// Copies a patch value that has no live counterpart: drops null fields and `$` directives.
pub(super) fn clean_value(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(clean_map(map)),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_value).collect()),
        scalar => scalar,
    }
}

fn clean_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(key, value)| !value.is_null() && !key.starts_with('$'))
        .map(|(key, value)| (key, clean_value(value)))
        .collect()
}
