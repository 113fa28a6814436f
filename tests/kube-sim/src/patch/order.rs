//! List ordering after a strategic merge, ported from upstream's `normalizeElementOrder`
//! family: items named by the patch (or by `$setElementOrder`) follow the patch's order and
//! server-only items are interleaved where the live list had them.

use serde_json::Value;

use super::strategic::{DIRECTIVE_MARKER, Result, no_merge_key};

/// What identifies a list item for ordering: its merge key value, or the scalar itself.
fn identity<'a>(item: &'a Value, merge_key: Option<&str>) -> Option<&'a Value> {
    match merge_key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

fn index_of(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    let wanted = identity(item, merge_key);
    list.iter().position(|candidate| match (identity(candidate, merge_key), wanted) {
        (Some(left), Some(right)) => values_equal(left, right),
        (None, None) => true,
        _ => false,
    })
}

/// Upstream `partitionMapsByPresentInList` / `partitionPrimitivesByPresentInList`: splits
/// `merged` into the items present in `partition_by` and the server-only ones.
pub(super) fn partition_by_presence(
    merged: Vec<Value>,
    partition_by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut present = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        if let Some(key) = merge_key
            && item.get(key).is_none()
        {
            return Err(no_merge_key(&item, key));
        }
        if index_of(partition_by, &item, merge_key).is_some() {
            present.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((present, server_only))
}

/// Upstream `normalizeElementOrder`: sorts the patch items by `patch_order` and the server-only
/// items by `server_order`, then interleaves them (`mergeSortedSlice`). Consequence kept from
/// upstream: a new item of a merge list without `$setElementOrder` lands at the front.
pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key)?;
    Ok(merge_sorted_slice(server_only, patch_items, server_order, merge_key))
}

/// Upstream `normalizeSliceOrder`, with a total order: items missing from `order` go last.
fn normalize_slice_order(items: Vec<Value>, order: &[Value], merge_key: Option<&str>) -> Result<Vec<Value>> {
    if let Some(key) = merge_key {
        for item in items.iter().chain(order) {
            if item.get(key).is_none() {
                return Err(no_merge_key(item, key));
            }
        }
    }
    let (mut keep, delete): (Vec<Value>, Vec<Value>) = items.into_iter().partition(|item| {
        merge_key.is_none() || item.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some("delete")
    });
    keep.sort_by_cached_key(|item| index_of(order, item, merge_key).unwrap_or(usize::MAX));
    keep.extend(delete);
    Ok(keep)
}

/// Upstream `mergeSortedSlice`: inserts the `left` items into `right`, taking a `left` item
/// first only when both are in `server_order` and it comes earlier there.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let mut result = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (index_of(server_order, l, merge_key), index_of(server_order, r, merge_key)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        result.extend(next);
    }
    result
}

/// JSON equality where numbers compare by value (`80` equals `80.0`), as Go's decoded
/// `float64`s do.
pub(super) fn values_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => {
            l == r || matches!((l.as_f64(), r.as_f64()), (Some(a), Some(b)) if a == b)
        }
        _ => left == right,
    }
}
