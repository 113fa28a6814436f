//! The structural operations field ownership is built on, over JSON values and their
//! [`Slot`]s: the set of fields a value sets, the comparison of two values, the merge of an
//! applied configuration into an object and the removal of a set of fields. Ports of
//! structured-merge-diff's `typed` package (`tofieldset.go`, `compare.go`, `merge.go`,
//! `remove.go`), walking JSON instead of typed values: a value's JSON type decides how it is
//! walked, the slot how objects and lists are tracked. A `null` facing an object or a list is
//! treated as an empty one, as a typed field holding `null` is upstream.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set, path_string};
use super::schema::{ListType, Slot};

/// What changed from one value to another (each path in at most one of the three sets).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Present only in the new value.
    pub added: Set,
    /// Present in both, different.
    pub modified: Set,
    /// Present only in the old value.
    pub removed: Set,
}

impl Comparison {
    /// Drops the paths at or below `reset` (upstream's reset-fields filter).
    pub(crate) fn filter(&mut self, reset: &Set) {
        self.added = self.added.recursive_difference(reset);
        self.modified = self.modified.recursive_difference(reset);
        self.removed = self.removed.recursive_difference(reset);
    }
}

/// The JSON shape a value is walked as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    List,
    Scalar,
}

fn shape(value: &Value) -> Shape {
    match value {
        Value::Object(_) => Shape::Object,
        Value::Array(_) => Shape::List,
        _ => Shape::Scalar,
    }
}

fn error_at(path: &Path, message: impl std::fmt::Display) -> String {
    if path.is_empty() { message.to_string() } else { format!("{}: {message}", path_string(path)) }
}

/// The path elements of a non-atomic list's items, in order (an item's error names it).
fn elements<'v>(
    list: &ListType,
    items: &'v [Value],
    path: &Path,
) -> Result<Vec<(PathElement, &'v Value)>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            Slot::item_element(list, item)
                .map(|element| (element, item))
                .map_err(|e| error_at(path, format!("element {i}: {e}")))
        })
        .collect()
}

/// The fields `value` sets (`ToFieldSet`): every scalar, atomic value and list item, plus map
/// keys and fields holding `null` or `{}`.
pub(crate) fn field_set(value: &Value, slot: Slot<'_>) -> Result<Set, String> {
    let mut out = Set::new();
    walk_field_set(value, slot, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn walk_field_set(value: &Value, slot: Slot<'_>, path: &mut Path, out: &mut Set) -> Result<(), String> {
    match value {
        Value::Object(map) if !slot.atomic_object() => {
            for (key, child) in map {
                let (child_slot, named) = slot.field(key);
                path.push(PathElement::field(key));
                walk_field_set(child, child_slot, path, out)?;
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !named {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let list = slot.list_type();
            if list == ListType::Atomic {
                out.insert(path);
                return Ok(());
            }
            let items = elements(&list, items, path)?;
            let mut seen: HashMap<&PathElement, usize> = HashMap::new();
            for (element, _) in &items {
                *seen.entry(element).or_default() += 1;
            }
            for (element, item) in &items {
                path.push(element.clone());
                if seen.get(element).copied().unwrap_or(0) == 1 {
                    walk_field_set(item, slot.item(), path, out)?;
                }
                // A duplicated item is owned as a whole (once).
                out.insert(path);
                path.pop();
            }
        }
        _ => out.insert(path),
    }
    Ok(())
}

/// Compares `old` with `new` (`Compare`); `None` is an absent value.
pub(crate) fn compare(
    old: Option<&Value>,
    new: Option<&Value>,
    slot: Slot<'_>,
) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    compare_at(old, new, slot, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// The shapes to walk a pair as: one, or both when the JSON types differ (untyped values).
fn shapes(lhs: Option<&Value>, rhs: Option<&Value>) -> Vec<Shape> {
    let typed_null = |null: &Value, other: &Value| null.is_null() && shape(other) != Shape::Scalar;
    match (lhs, rhs) {
        (Some(l), Some(r)) if typed_null(l, r) => vec![shape(r)],
        (Some(l), Some(r)) if typed_null(r, l) => vec![shape(l)],
        (Some(l), Some(r)) if shape(l) != shape(r) => vec![shape(l), shape(r)],
        (_, Some(value)) | (Some(value), None) => vec![shape(value)],
        (None, None) => Vec::new(),
    }
}

fn compare_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    slot: Slot<'_>,
    path: &mut Path,
    out: &mut Comparison,
) -> Result<(), String> {
    let mut leaf = false;
    for shape in shapes(lhs, rhs) {
        // As upstream, only the last walk (the new value's) decides whether this was a leaf.
        leaf = compare_as(shape, lhs, rhs, slot, path, out)?;
    }
    if !leaf {
        match (lhs, rhs) {
            (None, Some(_)) => out.added.insert(path),
            (Some(_), None) => out.removed.insert(path),
            _ => {}
        }
    }
    Ok(())
}

fn compare_leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) if l != r => out.modified.insert(path),
        _ => {}
    }
}

/// Compares the pair as `shape`; true when it was compared as one leaf.
fn compare_as(
    shape: Shape,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    slot: Slot<'_>,
    path: &mut Path,
    out: &mut Comparison,
) -> Result<bool, String> {
    match shape {
        Shape::Scalar => {
            compare_leaf(lhs, rhs, path, out);
            Ok(true)
        }
        Shape::Object => {
            let (l, r) = (lhs.and_then(Value::as_object), rhs.and_then(Value::as_object));
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if slot.atomic_object() || (empty(l) && empty(r)) {
                compare_leaf(lhs, rhs, path, out);
                return Ok(true);
            }
            let mut keys: Vec<&String> = l.into_iter().chain(r).flat_map(Map::keys).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(PathElement::field(key));
                let child = slot.field(key).0;
                compare_at(l.and_then(|m| m.get(key)), r.and_then(|m| m.get(key)), child, path, out)?;
                path.pop();
            }
            Ok(false)
        }
        Shape::List => {
            let (l, r) = (lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
            let empty = |a: Option<&Vec<Value>>| a.is_none_or(Vec::is_empty);
            let list = slot.list_type();
            if list == ListType::Atomic || (empty(l) && empty(r)) {
                compare_leaf(lhs, rhs, path, out);
                return Ok(true);
            }
            compare_items(
                &list,
                l.map_or(&[][..], Vec::as_slice),
                r.map_or(&[][..], Vec::as_slice),
                slot,
                path,
                out,
            )?;
            Ok(false)
        }
    }
}

/// Items grouped by path element, in order of first appearance (duplicates kept together).
fn group(items: Vec<(PathElement, &Value)>) -> (Vec<PathElement>, HashMap<PathElement, Vec<&Value>>) {
    let mut order = Vec::new();
    let mut groups: HashMap<PathElement, Vec<&Value>> = HashMap::new();
    for (element, item) in items {
        let entry = groups.entry(element.clone()).or_default();
        if entry.is_empty() {
            order.push(element);
        }
        entry.push(item);
    }
    (order, groups)
}

fn compare_items(
    list: &ListType,
    lhs: &[Value],
    rhs: &[Value],
    slot: Slot<'_>,
    path: &mut Path,
    out: &mut Comparison,
) -> Result<(), String> {
    let (left_order, left) = group(elements(list, lhs, path)?);
    let (right_order, right) = group(elements(list, rhs, path)?);
    let mut all = left_order;
    all.extend(right_order.into_iter().filter(|e| !left.contains_key(e)));
    let item_slot = slot.item();
    for element in all {
        let l = left.get(&element).map_or(&[][..], Vec::as_slice);
        let r = right.get(&element).map_or(&[][..], Vec::as_slice);
        path.push(element);
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => compare_at(l.first().copied(), r.first().copied(), item_slot, path, out)?,
            // Duplicated before and after: compared as one value.
            (2.., 2..) => {
                if l != r {
                    out.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    compare_at(None, Some(first), item_slot, path, out)?;
                }
                out.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    compare_at(Some(first), None, item_slot, path, out)?;
                }
                out.added.insert(path);
            }
        }
        path.pop();
    }
    Ok(())
}

/// Merges the applied configuration `rhs` into `lhs` (`Merge`): objects merge field by field,
/// keyed lists and sets item by item (in upstream's order), everything else is replaced.
pub(crate) fn merge(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    slot: Slot<'_>,
) -> Result<Option<Value>, String> {
    merge_at(lhs, rhs, slot, &mut Vec::new())
}

fn merge_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    slot: Slot<'_>,
    path: &mut Path,
) -> Result<Option<Value>, String> {
    let Some(rhs) = rhs else { return Ok(lhs.cloned()) };
    if rhs.is_null() && lhs.is_some_and(|l| shape(l) != Shape::Scalar) {
        // A typed field set to null keeps what the object has.
        return Ok(lhs.cloned());
    }
    match rhs {
        Value::Object(r) if !slot.atomic_object() => {
            let l = lhs.and_then(Value::as_object);
            if r.is_empty() && l.is_none_or(Map::is_empty) {
                return Ok(Some(rhs.clone()));
            }
            let mut out = l.cloned().unwrap_or_default();
            for (key, value) in r {
                path.push(PathElement::field(key));
                let merged = merge_at(l.and_then(|m| m.get(key)), Some(value), slot.field(key).0, path)?;
                path.pop();
                if let Some(merged) = merged {
                    out.insert(key.clone(), merged);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Value::Array(r) => {
            let l = lhs.and_then(Value::as_array);
            let list = slot.list_type();
            if list == ListType::Atomic || (r.is_empty() && l.is_none_or(Vec::is_empty)) {
                return Ok(Some(rhs.clone()));
            }
            merge_items(&list, l.map_or(&[][..], Vec::as_slice), r, slot, path)
                .map(|items| Some(Value::Array(items)))
        }
        _ => Ok(Some(rhs.clone())),
    }
}

/// upstream's `visitListItems` of the merging walker: the configuration's items in its order,
/// the object's other items kept where they were relative to the shared ones.
fn merge_items(
    list: &ListType,
    lhs: &[Value],
    rhs: &[Value],
    slot: Slot<'_>,
    path: &mut Path,
) -> Result<Vec<Value>, String> {
    let right = elements(list, rhs, path)?;
    let mut observed_right: HashMap<&PathElement, &Value> = HashMap::new();
    for (element, item) in &right {
        if observed_right.insert(element, item).is_some() {
            let mut at = path.clone();
            at.push(element.clone());
            return Err(error_at(
                path,
                format!("duplicate entries for key {}", path_string(&at[path.len()..])),
            ));
        }
    }
    let left = elements(list, lhs, path)?;
    // A key the object holds twice merges as `null` (upstream's marker for duplicates).
    const NULL: &Value = &Value::Null;
    let mut observed_left: HashMap<&PathElement, &Value> = HashMap::new();
    for (element, item) in &left {
        observed_left.entry(element).and_modify(|v| *v = NULL).or_insert(item);
    }
    let mut shared: VecDeque<&PathElement> =
        right.iter().map(|(e, _)| e).filter(|e| observed_left.contains_key(e)).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_right: HashSet<&PathElement> = HashSet::new();
    let item_slot = slot.item();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let mut push = |element: &PathElement, l: Option<&Value>, r: Option<&Value>, path: &mut Path| {
        path.push(element.clone());
        let merged = merge_at(l, r, item_slot, path);
        path.pop();
        merged.map(|m| out.extend(m))
    };
    let (mut li, mut ri) = (0, 0);
    while li < left.len() || ri < right.len() {
        if li < left.len() && ri < right.len() {
            let element = &left[li].0;
            if *element == right[ri].0 {
                merged_right.insert(element);
                push(
                    element,
                    observed_left.get(element).copied(),
                    observed_right.get(element).copied(),
                    path,
                )?;
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_right.contains_key(element) && next_shared.is_some_and(|n| n != element) {
                li += 1;
                continue;
            }
        }
        if li < left.len() {
            let (element, item) = &left[li];
            if !observed_right.contains_key(element) {
                push(element, Some(item), None, path)?;
                li += 1;
                continue;
            } else if merged_right.contains(element) {
                li += 1;
            }
        }
        if ri < right.len() {
            let element = &right[ri].0;
            merged_right.insert(element);
            push(element, observed_left.get(element).copied(), observed_right.get(element).copied(), path)?;
            ri += 1;
            if next_shared.is_some_and(|n| n == element) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(out)
}

/// `value` without the fields of `set` (`RemoveItems`). A container left empty becomes `null`,
/// as upstream (callers drop nulls at the end).
pub(crate) fn remove_items(value: &Value, set: &Set, slot: Slot<'_>) -> Value {
    if set.is_empty() {
        return value.clone();
    }
    match value {
        Value::Object(map) if !slot.atomic_object() && !map.is_empty() => {
            let mut out = Map::new();
            for (key, child) in map {
                let element = PathElement::field(key);
                if set.has_member(&element) {
                    continue;
                }
                let kept = match set.child(&element) {
                    Some(below) => remove_items(child, below, slot.field(key).0),
                    None => child.clone(),
                };
                out.insert(key.clone(), kept);
            }
            if out.is_empty() { Value::Null } else { Value::Object(out) }
        }
        Value::Array(items) if !items.is_empty() => {
            let list = slot.list_type();
            if list == ListType::Atomic {
                return value.clone();
            }
            let mut out = Vec::new();
            for item in items {
                let Ok(element) = Slot::item_element(&list, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&element) {
                    continue;
                }
                match set.child(&element) {
                    Some(below) => out.push(remove_items(item, below, slot.item())),
                    None => out.push(item.clone()),
                }
            }
            if out.is_empty() { Value::Null } else { Value::Array(out) }
        }
        other => other.clone(),
    }
}

/// `set` plus the named fields that lead to its paths (`EnsureNamedFieldsAreMembers`): owning
/// `spec.replicas` also means owning the struct field `spec`, not a map key on the way.
pub(crate) fn with_named_fields(set: &Set, slot: Slot<'_>) -> Set {
    let mut out = Set::new();
    for member in set.members() {
        out.insert_member(member.clone());
    }
    for (element, child) in set.children() {
        let child_slot = match element.as_field() {
            Some(name) => {
                let (child_slot, named) = slot.field(name);
                if named {
                    out.insert_member(element.clone());
                }
                child_slot
            }
            None => slot.item(),
        };
        out.insert_child(element.clone(), with_named_fields(child, child_slot));
    }
    out
}

/// `value` without `null` fields (what a typed decode drops).
pub(crate) fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(value: &Value, kind: &str) -> Value {
        field_set(value, Slot::root(kind, None)).expect("valid").to_fields_v1()
    }

    #[test]
    fn applied_field_sets_as_the_real_apiserver_records_them() {
        // Expected values: the `alpha` Apply entries the v1.35.4 apiserver wrote for these
        // configurations (apiVersion/kind/metadata.name are stripped later, by the manager).
        let deployment = json!({"spec": {"replicas": 0, "selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [
                {"name": "main", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]}}}});
        assert_eq!(
            fields(&deployment, "Deployment"),
            json!({"f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
        let configmap = json!({"data": {"owner": "alpha"}, "metadata": {"finalizers": ["a"], "labels": {}}});
        assert_eq!(
            fields(&configmap, "ConfigMap"),
            json!({"f:data": {"f:owner": {}}, "f:metadata": {"f:finalizers": {"v:\"a\"": {}}, "f:labels": {}}})
        );
    }

    #[test]
    fn custom_resource_field_sets_follow_the_schema() {
        // The SsaWidget CRD and apply of the probe run against the v1.35.4 apiserver.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
            "tagset": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "nested": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "objs": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "atomicobj": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"p": {"type": "string"}}}}}}});
        let widget = json!({"metadata": {"labels": {"x": "z"}}, "spec": {"size": 3, "tags": ["a", "b"], "tagset": ["p", "q"],
            "ports": [{"name": "http", "port": 80}], "nested": {"a": {"b": "c"}}, "labels": {"k": "v"},
            "objs": {"one": {"x": "1"}}, "free": {"deep": {"er": 1}, "list": [1, 2]}, "atomicobj": {"p": "1"}}});
        let set = field_set(&widget, Slot::root("SsaWidget", Some(&schema))).expect("valid");
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:x": {}}}, "f:spec": {"f:atomicobj": {}, "f:free": {"f:deep": {".": {}, "f:er": {}}, "f:list": {}},
                "f:labels": {"f:k": {}}, "f:nested": {"f:a": {"f:b": {}}}, "f:objs": {"f:one": {".": {}, "f:x": {}}},
                "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:size": {}, "f:tags": {},
                "f:tagset": {"v:\"p\"": {}, "v:\"q\"": {}}}})
        );
    }

    #[test]
    fn comparisons_mark_new_containers() {
        // A created ConfigMap against the empty one: `data` is new (so `.`), `metadata` was
        // there; the `kubectl-client-side-apply` entry of the real apiserver.
        let old = json!({"metadata": {}});
        let new = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "x"}}, "data": {"k1": "v1", "k2": "v2"}});
        let cmp = compare(Some(&old), Some(&new), Slot::root("ConfigMap", None)).expect("valid");
        let set = cmp.added.union(&cmp.modified);
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:data": {".": {}, "f:k1": {}, "f:k2": {}}, "f:metadata": {"f:annotations": {".": {}, "f:n": {}}, "f:labels": {".": {}, "f:a": {}}}})
        );
        let next = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "x"}}, "data": {"k1": "v1", "k3": "v3"}});
        let cmp = compare(Some(&new), Some(&next), Slot::root("ConfigMap", None)).expect("valid");
        assert_eq!(cmp.removed.to_fields_v1(), json!({"f:data": {"f:k2": {}}}));
        assert_eq!(cmp.added.to_fields_v1(), json!({"f:data": {"f:k3": {}}}));
        assert!(cmp.modified.is_empty());
    }

    #[test]
    fn merges_keyed_lists_in_upstreams_order() {
        let slot = Slot::root("Pod", None).field("spec").0;
        let live = json!({"containers": [{"name": "a", "image": "1"}, {"name": "b"}, {"name": "c"}]});
        let config =
            json!({"containers": [{"name": "c", "image": "3"}, {"name": "a", "image": "2"}, {"name": "d"}]});
        let merged = merge(Some(&live), Some(&config), slot).expect("valid").expect("some");
        let names: Vec<&str> = merged["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["b", "c", "a", "d"]);
        assert_eq!(merged["containers"][2]["image"], "2");
        let duplicate = json!({"containers": [{"name": "a"}, {"name": "a"}]});
        assert!(merge(Some(&live), Some(&duplicate), slot).is_err());
    }

    #[test]
    fn removal_and_named_fields() {
        let slot = Slot::root("Deployment", None);
        let object = json!({"spec": {"replicas": 0, "paused": true}, "metadata": {"name": "a"}});
        let set = Set::from_fields_v1(&json!({"f:spec": {"f:replicas": {}}})).expect("valid");
        assert_eq!(
            remove_items(&object, &set, slot),
            json!({"spec": {"paused": true}, "metadata": {"name": "a"}})
        );
        let both =
            Set::from_fields_v1(&json!({"f:spec": {"f:replicas": {}, "f:paused": {}}})).expect("valid");
        assert_eq!(remove_items(&object, &both, slot), json!({"spec": null, "metadata": {"name": "a"}}));
        assert_eq!(
            with_named_fields(&set, slot).to_fields_v1(),
            json!({"f:spec": {".": {}, "f:replicas": {}}})
        );
    }
}
