//! Field paths and sets of them, with the `FieldsV1` encoding of `metadata.managedFields`.
//!
//! A port of the parts of `sigs.k8s.io/structured-merge-diff/v6/fieldpath` that field ownership
//! needs. A path element is kept in its `FieldsV1` spelling, which is canonical:
//!
//! | element | spelling | printed in conflicts |
//! |---|---|---|
//! | a field of an object | `f:replicas` | `.replicas` |
//! | an item of an associative list, by its key fields (sorted) | `k:{"containerPort":80,"protocol":"TCP"}` | `[containerPort=80,protocol="TCP"]` |
//! | an item of a set of scalars | `v:"example.com/finalizer"` | `[="example.com/finalizer"]` |
//! | an item by position (untyped lists; kube-sim never makes these) | `i:0` | `[0]` |
//!
//! A [`Set`] holds paths as a tree: at each node the elements that end a path (`members`) and
//! the elements that lead further (`children`). In `FieldsV1` a node is a JSON object whose
//! keys are the elements; a member that also has children carries `".": {}` (the item itself
//! belongs to the set, not only some of its fields). Elements are ordered by their spelling,
//! which is the order kube-sim prints JSON keys in anyway.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::go_fmt;

/// One step of a path, in its `FieldsV1` spelling (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathElement(String);

impl PathElement {
    /// The field `name` of an object.
    pub fn field(name: &str) -> Self {
        Self(format!("f:{name}"))
    }

    /// The item of an associative list whose key fields have these values.
    pub fn key(fields: &Map<String, Value>) -> Self {
        // serde_json's map is sorted by key: the order upstream sorts key fields in.
        Self(format!("k:{}", go_fmt::json(&Value::Object(fields.clone()))))
    }

    /// The item `value` of a set of scalars.
    pub fn value(value: &Value) -> Self {
        Self(format!("v:{}", go_fmt::json(value)))
    }

    /// The item at `index` of a list without keys.
    pub fn index(index: usize) -> Self {
        Self(format!("i:{index}"))
    }

    /// Reads a `FieldsV1` key; `None` for an unknown element type (which upstream skips) or a
    /// malformed one. Keys and values are re-spelled canonically.
    pub fn parse(text: &str) -> Option<Result<Self, String>> {
        let (kind, rest) = (text.get(..2)?, text.get(2..)?);
        let parsed = match kind {
            "f:" => Ok(Self::field(rest)),
            "k:" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(fields)) => Ok(Self::key(&fields)),
                Ok(_) => Err(format!("invalid key element {text:?}: not an object")),
                Err(error) => Err(format!("invalid key element {text:?}: {error}")),
            },
            "v:" => serde_json::from_str::<Value>(rest)
                .map(|value| Self::value(&value))
                .map_err(|error| format!("invalid value element {text:?}: {error}")),
            "i:" => rest
                .parse::<usize>()
                .map(Self::index)
                .map_err(|error| format!("invalid index element {text:?}: {error}")),
            _ => return None,
        };
        Some(parsed)
    }

    /// The field name, when this is a field.
    pub fn as_field(&self) -> Option<&str> {
        self.0.strip_prefix("f:")
    }

    /// The `FieldsV1` spelling.
    #[cfg(test)]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Upstream's `PathElement.String()`, as conflict messages print it.
    fn display(&self) -> String {
        let (kind, rest) = self.0.split_at(2.min(self.0.len()));
        match kind {
            "f:" => format!(".{rest}"),
            "k:" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(fields)) => {
                    let parts: Vec<String> =
                        fields.iter().map(|(name, value)| format!("{name}={}", go_string(value))).collect();
                    format!("[{}]", parts.join(","))
                }
                _ => format!("[{rest}]"),
            },
            "v:" => match serde_json::from_str::<Value>(rest) {
                Ok(value) => format!("[={}]", go_string(&value)),
                Err(_) => format!("[={rest}]"),
            },
            "i:" => format!("[{rest}]"),
            _ => self.0.clone(),
        }
    }
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

/// Upstream's `Path.String()`: `.spec.template.spec.containers[name="main"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// `value.ToString`: strings quoted (Go's `%q`), numbers and booleans as written.
fn go_string(value: &Value) -> String {
    match value {
        Value::String(text) => go_fmt::quote(text),
        Value::Null => "null".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_string).collect::<Vec<_>>().join(",")),
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}={}", go_string(v))).collect(),
        other => other.to_string(),
    }
}

/// A set of paths (see the module docs). Children are never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds `path` (the empty path is ignored: the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|child| child.has(rest)),
        }
    }

    /// Whether `element` is a member at this level.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, without it (`WithPrefix`).
    pub fn child(&self, element: &PathElement) -> Option<&Set> {
        self.children.get(element)
    }

    /// The members at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The children at this level.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    /// Adds `element` as a member at this level.
    pub fn insert_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    /// Puts `child` under `element` (merged with what is there).
    pub fn insert_child(&mut self, element: PathElement, child: Set) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&element) {
            Some(existing) => *existing = existing.union(&child),
            None => {
                self.children.insert(element, child);
            }
        }
    }

    /// Every path of either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            out.insert_child(element.clone(), child.clone());
        }
        out
    }

    /// The paths of `self` that are not in `other` (a removed member keeps its children).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(element.clone(), rest);
            }
        }
        Set { members, children }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    children.insert(element.clone(), both);
                }
            }
        }
        Set { members, children }
    }

    /// The paths of `self` that neither are in `other` nor lie below one of its paths.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, child) in &self.children {
            if other.members.contains(element) {
                continue;
            }
            let rest = match other.children.get(element) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(element.clone(), rest);
            }
        }
        Set { members, children }
    }

    /// Every path, members before children at each level (upstream's `Iterate` order).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` object of this set.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_contents(false))
    }

    fn fields_v1_contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for member in &self.members {
            if !self.children.contains_key(member) {
                out.insert(member.0.clone(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            let contents = child.fields_v1_contents(self.members.contains(element));
            out.insert(element.0.clone(), Value::Object(contents));
        }
        out
    }

    /// Reads a `fieldsV1` object (upstream's `FieldsToSet`).
    pub fn from_fields_v1(fields: &Value) -> Result<Set, String> {
        let Value::Object(map) = fields else {
            return Err(format!("FieldsV1 must be a JSON object, not {fields}"));
        };
        Self::read_node(map, 0).map(|(set, _)| set.unwrap_or_default())
    }

    /// One node: its children (None when it names none) and whether it is a member itself.
    fn read_node(map: &Map<String, Value>, depth: usize) -> Result<(Option<Set>, bool), String> {
        // managedFields come from clients: bound the recursion as the patch module does.
        if depth > crate::patch::MAX_DEPTH {
            return Err("FieldsV1 is nested too deeply".into());
        }
        let mut children: Option<Set> = None;
        let mut is_member = false;
        for (key, value) in map {
            if key == "." {
                is_member = true;
                continue;
            }
            let element = match PathElement::parse(key) {
                None => continue,
                Some(parsed) => parsed?,
            };
            let Value::Object(inner) = value else {
                return Err(format!("FieldsV1 entry {key:?} must be an object"));
            };
            let (grandchildren, child_is_member) = Self::read_node(inner, depth + 1)?;
            let set = children.get_or_insert_with(Set::new);
            if child_is_member {
                set.members.insert(element.clone());
            }
            if let Some(grandchildren) = grandchildren.filter(|g| !g.is_empty()) {
                set.insert_child(element, grandchildren);
            }
        }
        if children.is_none() {
            is_member = true;
        }
        Ok((children, is_member))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn f(name: &str) -> PathElement {
        PathElement::field(name)
    }

    #[test]
    fn elements_are_spelled_and_printed_as_upstream() {
        let key = PathElement::key(match &json!({"protocol": "TCP", "containerPort": 80}) {
            Value::Object(map) => map,
            _ => unreachable!(),
        });
        assert_eq!(key.as_str(), r#"k:{"containerPort":80,"protocol":"TCP"}"#);
        let path = vec![f("spec"), f("ports"), key, f("port")];
        assert_eq!(path_string(&path), r#".spec.ports[containerPort=80,protocol="TCP"].port"#);
        assert_eq!(PathElement::value(&json!("a<b")).as_str(), r#"v:"a\u003cb""#);
        assert_eq!(
            path_string(&[f("metadata"), f("finalizers"), PathElement::value(&json!("x"))]),
            r#".metadata.finalizers[="x"]"#
        );
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_with_children() {
        // The `kubectl-create` entry of a ConfigMap, as the real apiserver (v1.35.4) wrote it.
        let fields = json!({"f:data": {".": {}, "f:k1": {}, "f:k2": {}},
            "f:metadata": {"f:labels": {".": {}, "f:a": {}}}});
        let set = Set::from_fields_v1(&fields).expect("valid");
        assert!(set.has(&[f("data")]));
        assert!(set.has(&[f("data"), f("k1")]));
        assert!(!set.has(&[f("metadata")]));
        assert_eq!(set.to_fields_v1(), fields);
        let non_canonical =
            json!({"f:spec": {"k:{\"protocol\":\"TCP\",\"containerPort\":80}": {}}, "x:unknown": {}});
        let read = Set::from_fields_v1(&non_canonical).expect("valid");
        assert_eq!(
            read.to_fields_v1(),
            json!({"f:spec": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}}})
        );
        assert!(Set::from_fields_v1(&json!({"k:[1]": {}})).is_err());
        assert!(Set::from_fields_v1(&json!("f:a")).is_err());
    }

    #[test]
    fn set_algebra() {
        let set = |v: Value| Set::from_fields_v1(&v).expect("valid");
        let a = set(json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}}));
        let b = set(json!({"f:data": {"f:b": {}, "f:c": {}}}));
        assert_eq!(a.union(&b).to_fields_v1(), json!({"f:data": {".": {}, "f:a": {}, "f:b": {}, "f:c": {}}}));
        assert_eq!(a.difference(&b).to_fields_v1(), json!({"f:data": {".": {}, "f:a": {}}}));
        assert_eq!(a.intersection(&b).to_fields_v1(), json!({"f:data": {"f:b": {}}}));
        let status = set(json!({"f:status": {}}));
        let owned = set(json!({"f:spec": {"f:x": {}}, "f:status": {"f:phase": {}}}));
        assert_eq!(owned.recursive_difference(&status).to_fields_v1(), json!({"f:spec": {"f:x": {}}}));
        assert_eq!(owned.difference(&status).to_fields_v1(), owned.to_fields_v1());
        let paths: Vec<String> = a.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(paths, vec![".data", ".data.a", ".data.b"]);
    }
}
