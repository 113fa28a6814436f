//! Garbage collection through ownerReferences (k8s-semantics §8): which finalizer a DELETE
//! puts on the owner, how each dependent is classified (`attemptToDeleteItem`), when a
//! foreground owner may go, and the orphaning patch.

use serde_json::{Value, json};

use super::common::{is_terminating, namespace_of, uid_of};

/// The finalizer of a Foreground delete.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer of an Orphan delete.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// `DeleteOptions.propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now; the GC deletes dependents afterwards.
    Background,
    /// The owner waits (finalizer `foregroundDeletion`) until blocking dependents are gone.
    Foreground,
    /// The owner waits (finalizer `orphan`) until dependents no longer reference it.
    Orphan,
}

impl Propagation {
    /// `Background`, `Foreground`, `Orphan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Background => "Background",
            Self::Foreground => "Foreground",
            Self::Orphan => "Orphan",
        }
    }
    /// The finalizer a DELETE with this policy adds to the owner (None: delete at once).
    pub fn owner_finalizer(self) -> Option<&'static str> {
        match self {
            Self::Background => None,
            Self::Foreground => Some(FOREGROUND_FINALIZER),
            Self::Orphan => Some(ORPHAN_FINALIZER),
        }
    }
}

/// The policy of a DELETE: `propagationPolicy`, else the legacy `orphanDependents`, else
/// Background (the default of every resource kube-sim serves).
pub fn propagation_of(delete_options: &Value) -> Result<Propagation, String> {
    match delete_options.get("propagationPolicy").and_then(Value::as_str) {
        Some("Background") => Ok(Propagation::Background),
        Some("Foreground") => Ok(Propagation::Foreground),
        Some("Orphan") => Ok(Propagation::Orphan),
        Some(other) => Err(format!(
            "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        )),
        None if delete_options.get("orphanDependents") == Some(&Value::Bool(true)) => Ok(Propagation::Orphan),
        None => Ok(Propagation::Background),
    }
}

/// upstream `deletionFinalizersForGarbageCollection`: the finalizers a first DELETE leaves on
/// the object. Both GC finalizers are dropped, then added back as the policy says (an explicit
/// `propagationPolicy` wins; without one, the finalizer the object already had stays).
pub fn deletion_finalizers(finalizers: &[Value], policy: Option<&str>) -> Vec<Value> {
    let had = |f: &str| finalizers.iter().any(|x| x == f);
    let (orphan, foreground) = match policy {
        Some("Orphan") => (true, false),
        Some("Foreground") => (false, true),
        Some("Background") => (false, false),
        _ => (had(ORPHAN_FINALIZER), had(FOREGROUND_FINALIZER) && !had(ORPHAN_FINALIZER)),
    };
    let mut out: Vec<Value> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if orphan {
        out.push(json!(ORPHAN_FINALIZER));
    }
    if foreground {
        out.push(json!(FOREGROUND_FINALIZER));
    }
    out
}

/// The Namespace registry's version (`shouldHaveOrphanFinalizer` /
/// `shouldHaveDeleteDependentsFinalizer`): without a policy, each GC finalizer the namespace
/// has stays, both may.
pub fn namespace_deletion_finalizers(finalizers: &[Value], policy: Option<&str>) -> Vec<Value> {
    let had = |f: &str| finalizers.iter().any(|x| x == f);
    let (orphan, foreground) = match policy {
        Some("Orphan") => (true, false),
        Some("Foreground") => (false, true),
        Some(_) => (false, false),
        None => (had(ORPHAN_FINALIZER), had(FOREGROUND_FINALIZER)),
    };
    let mut out: Vec<Value> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if orphan {
        out.push(json!(ORPHAN_FINALIZER));
    }
    if foreground {
        out.push(json!(FOREGROUND_FINALIZER));
    }
    out
}

/// Looks owners up for the collector.
pub trait OwnerLookup {
    /// Whether objects of `kind` in `api_version` are namespaced (None when unknown).
    fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
    /// The object, in `namespace` (`""` for cluster-scoped kinds).
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value>;
}

fn owner_refs(object: &Value) -> Vec<Value> {
    object.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// What the collector does with one dependent.
#[derive(Clone, Debug, PartialEq)]
pub enum DependentAction {
    /// Leave it: it has a live owner, or no owner is gone.
    Keep,
    /// Patch `metadata.ownerReferences` to this list (dangling or waiting owners removed).
    SetOwnerReferences(Vec<Value>),
    /// DELETE it with `preconditions.uid` = its uid and this propagation.
    Delete(Propagation),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    Solid,
    Dangling,
    WaitingForDependents,
}

fn owner_state(dependent: &Value, reference: &Value, lookup: &(impl OwnerLookup + ?Sized)) -> OwnerState {
    let text = |f: &str| reference.get(f).and_then(Value::as_str).unwrap_or("");
    let namespace = match lookup.namespaced(text("apiVersion"), text("kind")) {
        // A cluster-scoped dependent cannot have a namespaced owner: treated as absent.
        Some(true) if namespace_of(dependent).is_empty() => return OwnerState::Dangling,
        Some(true) => namespace_of(dependent),
        Some(false) => "",
        None => return OwnerState::Dangling,
    };
    match lookup.get(text("apiVersion"), text("kind"), namespace, text("name")) {
        Some(owner) if uid_of(&owner) == text("uid") => {
            if is_terminating(&owner) && has_finalizer(&owner, FOREGROUND_FINALIZER) {
                OwnerState::WaitingForDependents
            } else {
                OwnerState::Solid
            }
        }
        _ => OwnerState::Dangling,
    }
}

/// upstream `attemptToDeleteItem` for `dependent`: owners are resolved by namespace, name and
/// uid (a missing owner or a different uid is dangling). `has_dependents` says whether
/// anything references the dependent itself (it is then deleted in Foreground when an owner
/// waits for it).
pub fn classify_dependent(
    dependent: &Value,
    has_dependents: bool,
    lookup: &(impl OwnerLookup + ?Sized),
) -> DependentAction {
    let references = owner_refs(dependent);
    if references.is_empty() || (is_terminating(dependent) && !has_finalizer(dependent, FOREGROUND_FINALIZER))
    {
        return DependentAction::Keep;
    }
    let states: Vec<OwnerState> = references.iter().map(|r| owner_state(dependent, r, lookup)).collect();
    if states.contains(&OwnerState::Solid) {
        if states.iter().all(|s| *s == OwnerState::Solid) {
            return DependentAction::Keep;
        }
        let kept = references
            .into_iter()
            .zip(&states)
            .filter(|(_, s)| **s == OwnerState::Solid)
            .map(|(r, _)| r)
            .collect();
        return DependentAction::SetOwnerReferences(kept);
    }
    if states.contains(&OwnerState::WaitingForDependents) && has_dependents {
        return DependentAction::Delete(Propagation::Foreground);
    }
    if has_finalizer(dependent, ORPHAN_FINALIZER) {
        DependentAction::Delete(Propagation::Orphan)
    } else if has_finalizer(dependent, FOREGROUND_FINALIZER) {
        DependentAction::Delete(Propagation::Foreground)
    } else {
        DependentAction::Delete(Propagation::Background)
    }
}

/// The objects (from `objects`) whose ownerReferences name `owner`'s uid.
pub fn dependents_of<'a>(owner: &Value, objects: &'a [Value]) -> Vec<&'a Value> {
    let uid = uid_of(owner);
    objects.iter().filter(|o| !uid.is_empty() && owner_refs(o).iter().any(|r| r["uid"] == uid)).collect()
}

/// For a foreground-deleting owner: the dependents that still block it
/// (`blockOwnerDeletion: true` on the reference). Empty → remove `foregroundDeletion`.
pub fn foreground_blockers<'a>(owner: &Value, objects: &'a [Value]) -> Vec<&'a Value> {
    let uid = uid_of(owner);
    dependents_of(owner, objects)
        .into_iter()
        .filter(|o| owner_refs(o).iter().any(|r| r["uid"] == uid && r["blockOwnerDeletion"] == true))
        .collect()
}

/// For an orphaning owner: the dependent's ownerReferences without the owner.
pub fn without_owner(dependent: &Value, owner_uid: &str) -> Vec<Value> {
    owner_refs(dependent).into_iter().filter(|r| r["uid"] != json!(owner_uid)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Objects(Vec<(bool, Value)>);

    impl OwnerLookup for Objects {
        fn namespaced(&self, _api_version: &str, kind: &str) -> Option<bool> {
            match kind {
                "Deployment" | "ReplicaSet" | "Pod" => Some(true),
                "Node" | "ClusterThing" => Some(false),
                _ => None,
            }
        }
        fn get(&self, _api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
            self.0
                .iter()
                .find(|(_, o)| {
                    o["kind"] == kind && namespace_of(o) == namespace && o["metadata"]["name"] == name
                })
                .map(|(_, o)| o.clone())
        }
    }

    fn object(kind: &str, namespace: &str, name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace, "uid": uid}})
    }

    fn owned_by(mut object: Value, refs: &[(&str, &str, &str)]) -> Value {
        object["metadata"]["ownerReferences"] = refs
            .iter()
            .map(|(kind, name, uid)| json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "blockOwnerDeletion": true}))
            .collect();
        object
    }

    #[test]
    fn propagation_policy_parsing() {
        assert_eq!(propagation_of(&json!({})), Ok(Propagation::Background));
        assert_eq!(propagation_of(&json!({"orphanDependents": true})), Ok(Propagation::Orphan));
        assert_eq!(propagation_of(&json!({"propagationPolicy": "Foreground"})), Ok(Propagation::Foreground));
        assert!(propagation_of(&json!({"propagationPolicy": "Sideways"})).is_err());
        assert_eq!(Propagation::Foreground.owner_finalizer(), Some("foregroundDeletion"));
    }

    #[test]
    fn a_first_delete_sets_the_gc_finalizers_its_policy_asks_for() {
        let f = |list: &[&str]| list.iter().map(|x| json!(x)).collect::<Vec<Value>>();
        let cases: &[(&[&str], Option<&str>, &[&str])] = &[
            (&[], None, &[]),
            (&[], Some("Background"), &[]),
            (&[], Some("Orphan"), &["orphan"]),
            (&["example.com/x"], Some("Foreground"), &["example.com/x", "foregroundDeletion"]),
            // An explicit policy replaces the other GC finalizer; none keeps it.
            (&["orphan", "example.com/x"], Some("Foreground"), &["example.com/x", "foregroundDeletion"]),
            (&["orphan"], Some("Background"), &[]),
            (&["orphan"], None, &["orphan"]),
            (&["foregroundDeletion"], None, &["foregroundDeletion"]),
        ];
        for (before, policy, after) in cases {
            assert_eq!(deletion_finalizers(&f(before), *policy), f(after), "{before:?} {policy:?}");
        }
        let both = f(&["orphan", "foregroundDeletion"]);
        assert_eq!(namespace_deletion_finalizers(&both, None), both, "a namespace keeps both");
        assert_eq!(deletion_finalizers(&both, None), f(&["orphan"]), "another object: orphan wins");
        assert_eq!(namespace_deletion_finalizers(&both, Some("Background")), f(&[]));
    }

    #[test]
    fn dependents_are_classified_by_uid_not_name() {
        let deployment = object("Deployment", "prod", "web", "u1");
        let lookup =
            Objects(vec![(true, deployment.clone()), (true, object("ClusterThing", "", "ct", "c1"))]);
        let rs = owned_by(object("ReplicaSet", "prod", "web-1", "r1"), &[("Deployment", "web", "u1")]);
        assert_eq!(classify_dependent(&rs, true, &lookup), DependentAction::Keep);
        let stale =
            owned_by(object("ReplicaSet", "prod", "web-1", "r1"), &[("Deployment", "web", "old-uid")]);
        assert_eq!(
            classify_dependent(&stale, true, &lookup),
            DependentAction::Delete(Propagation::Background)
        );
        let gone = owned_by(object("ReplicaSet", "prod", "x", "r2"), &[("Deployment", "missing", "u9")]);
        assert_eq!(
            classify_dependent(&gone, false, &lookup),
            DependentAction::Delete(Propagation::Background)
        );
        let two = owned_by(
            object("ReplicaSet", "prod", "y", "r3"),
            &[("Deployment", "missing", "u9"), ("Deployment", "web", "u1")],
        );
        let DependentAction::SetOwnerReferences(kept) = classify_dependent(&two, false, &lookup) else {
            panic!("expected a patch")
        };
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0]["uid"], "u1");
        // A namespaced object owned by a cluster-scoped one lives while the owner does.
        let namespaced = owned_by(object("ConfigMap", "prod", "cm", "m1"), &[("ClusterThing", "ct", "c1")]);
        assert_eq!(classify_dependent(&namespaced, false, &lookup), DependentAction::Keep);
        let empty = Objects(Vec::new());
        assert_eq!(
            classify_dependent(&namespaced, false, &empty),
            DependentAction::Delete(Propagation::Background)
        );
        // A cluster-scoped dependent cannot have a namespaced owner.
        let invalid = owned_by(object("ClusterThing", "", "other", "c2"), &[("Deployment", "web", "u1")]);
        assert_eq!(
            classify_dependent(&invalid, false, &lookup),
            DependentAction::Delete(Propagation::Background)
        );
        assert_eq!(
            classify_dependent(&object("Pod", "prod", "bare", "p"), false, &lookup),
            DependentAction::Keep
        );
    }

    #[test]
    fn foreground_owners_wait_for_blocking_dependents() {
        let mut deployment = object("Deployment", "prod", "web", "u1");
        deployment["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        deployment["metadata"]["finalizers"] = json!([FOREGROUND_FINALIZER]);
        let lookup = Objects(vec![(true, deployment.clone())]);
        let rs = owned_by(object("ReplicaSet", "prod", "web-1", "r1"), &[("Deployment", "web", "u1")]);
        assert_eq!(classify_dependent(&rs, true, &lookup), DependentAction::Delete(Propagation::Foreground));
        assert_eq!(classify_dependent(&rs, false, &lookup), DependentAction::Delete(Propagation::Background));
        let mut loose = owned_by(object("ConfigMap", "prod", "cm", "m1"), &[("Deployment", "web", "u1")]);
        loose["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(false);
        let objects = vec![rs.clone(), loose.clone()];
        assert_eq!(foreground_blockers(&deployment, &objects), vec![&rs]);
        assert!(foreground_blockers(&deployment, std::slice::from_ref(&loose)).is_empty());
        assert_eq!(dependents_of(&deployment, &objects).len(), 2);
        assert!(without_owner(&rs, "u1").is_empty());
    }
}
