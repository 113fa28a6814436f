//! Who owns what after a write: structured-merge-diff's `merge.Updater` (`merge/update.go`).
//!
//! * An **update** (create, PUT, any non-apply patch) gives its manager every field it added or
//!   changed, takes those fields from everyone else, and drops removed fields from every set.
//! * An **apply** merges the configuration into the object, makes the configuration's fields
//!   the applier's set, removes the fields the applier owned before and no longer applies unless
//!   someone else owns them ("prune"), and fails with conflicts when it changes a field another
//!   manager owns, unless forced (then the field moves to the applier).
//!
//! The reset-fields filter (the strategy's `GetResetFields`, e.g. `status` on the main
//! resource) keeps those fields out of every comparison and set. Objects here carry no
//! `managedFields`.

use serde_json::Value;

use super::entries::{Fields, ManagerId, VersionedSet};
use super::fieldpath::{Path, Set};
use super::schema::Slot;
use super::typed::{self, Comparison};

/// Why an apply could not be done.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// Fields other managers own with another value: each manager with the path.
    Conflicts(Vec<(ManagerId, Path)>),
    /// The configuration or the object is not valid for its schema.
    Invalid(String),
}

/// The updater of one request: the object's schema, the request's API version and the fields
/// its strategy resets.
pub(crate) struct Updater<'s> {
    pub slot: Slot<'s>,
    pub api_version: String,
    pub reset: Set,
}

impl Updater<'_> {
    fn compare(&self, live: &Value, new: &Value) -> Result<Comparison, String> {
        let mut comparison = typed::compare(Some(live), Some(new), self.slot)?;
        comparison.filter(&self.reset);
        Ok(comparison)
    }

    /// `Updater.update`: takes what `workflow` changed from the other managers (or reports the
    /// conflicts when not forced) and drops removed fields from their sets.
    fn update_others(
        &self,
        live: &Value,
        new: &Value,
        managers: &mut Fields,
        workflow: &ManagerId,
        force: bool,
    ) -> Result<Comparison, ApplyError> {
        let comparison = self.compare(live, new).map_err(ApplyError::Invalid)?;
        let changed = comparison.modified.union(&comparison.added);
        let mut conflicts: Vec<(ManagerId, Set)> = Vec::new();
        for (manager, versioned) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let conflict = versioned.set.intersection(&changed);
            if !conflict.is_empty() {
                conflicts.push((manager.clone(), conflict));
            }
        }
        if !force && !conflicts.is_empty() {
            let all = conflicts
                .into_iter()
                .flat_map(|(m, set)| set.paths().into_iter().map(move |p| (m.clone(), p)));
            return Err(ApplyError::Conflicts(all.collect()));
        }
        for (manager, versioned) in managers.iter_mut() {
            if manager == workflow {
                continue;
            }
            if let Some((_, conflict)) = conflicts.iter().find(|(m, _)| m == manager) {
                versioned.set = versioned.set.difference(conflict);
            }
            versioned.set = versioned.set.difference(&comparison.removed);
        }
        managers.retain(|_, versioned| !versioned.set.is_empty());
        Ok(comparison)
    }

    /// `Updater.Update`: `manager` wrote `new` over `live`.
    pub(crate) fn update(
        &self,
        live: &Value,
        new: &Value,
        mut managers: Fields,
        manager: &ManagerId,
    ) -> Result<Fields, String> {
        let comparison = match self.update_others(live, new, &mut managers, manager, true) {
            Ok(comparison) => comparison,
            Err(ApplyError::Invalid(error)) => return Err(error),
            Err(ApplyError::Conflicts(_)) => return Err("conflicts in a forced update".into()),
        };
        let previous = managers.remove(manager).map(|v| v.set).unwrap_or_default();
        let set = previous
            .difference(&comparison.removed)
            .union(&comparison.modified)
            .union(&comparison.added)
            .recursive_difference(&self.reset);
        if !set.is_empty() {
            managers.insert(
                manager.clone(),
                VersionedSet { set, api_version: self.api_version.clone(), applied: false },
            );
        }
        Ok(managers)
    }

    /// `Updater.Apply`: `manager` applied `config` to `live`. Returns the new object (`None`
    /// when nothing changes) and the managers' new fields.
    pub(crate) fn apply(
        &self,
        live: &Value,
        config: &Value,
        mut managers: Fields,
        manager: &ManagerId,
        force: bool,
    ) -> Result<(Option<Value>, Fields), ApplyError> {
        let merged = typed::merge(Some(live), Some(config), self.slot)
            .map_err(ApplyError::Invalid)?
            .unwrap_or(Value::Null);
        let last = managers.get(manager).map(|v| v.set.clone());
        let set = typed::field_set(config, self.slot)
            .map_err(ApplyError::Invalid)?
            .recursive_difference(&self.reset);
        managers.insert(
            manager.clone(),
            VersionedSet { set, api_version: self.api_version.clone(), applied: true },
        );
        let new = match last {
            Some(last) if !last.is_empty() => {
                self.prune(&merged, &managers, &last).map_err(ApplyError::Invalid)?
            }
            _ => merged,
        };
        self.update_others(live, &new, &mut managers, manager, force)?;
        Ok(((new != *live).then_some(new), managers))
    }

    /// Removes the fields the applier owned (`last`) and nobody owns now, keeping those someone
    /// else owns or that never were the applier's (`prune`, `addBackOwnedItems`,
    /// `addBackDanglingItems`).
    fn prune(&self, merged: &Value, managers: &Fields, last: &Set) -> Result<Value, String> {
        let named = |set: &Set| typed::with_named_fields(set, self.slot);
        let all_fields = |value: &Value| typed::field_set(value, self.slot).map(|set| named(&set));
        let last = named(last);
        let pruned = typed::remove_items(merged, &last, self.slot);
        // Add back what any manager (the applier's new configuration included) owns.
        let owned = named(&managers.values().fold(Set::new(), |all, v| all.union(&v.set)));
        let merged_fields = all_fields(merged)?;
        let unowned = merged_fields.difference(&all_fields(&pruned)?.union(&owned));
        let pruned = typed::remove_items(merged, &unowned, self.slot);
        // Remove only what the applier owned: fields nobody ever owned stay.
        let dangling = merged_fields.difference(&all_fields(&pruned)?).intersection(&last);
        Ok(typed::remove_items(merged, &dangling, self.slot))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::managed_fields::entries::Operation;

    fn updater() -> Updater<'static> {
        Updater { slot: Slot::root("Deployment", None), api_version: "apps/v1".into(), reset: Set::new() }
    }

    fn id(name: &str, op: Operation) -> ManagerId {
        ManagerId::new(name, op, "apps/v1", "")
    }

    fn owned(managers: &Fields, name: &str, op: Operation) -> Value {
        managers.get(&id(name, op)).map_or(Value::Null, |v| v.set.to_fields_v1())
    }

    #[test]
    fn apply_prunes_what_the_applier_stopped_applying() {
        // Difference 4 of the differential suite: the real apiserver removes `spec.replicas`
        // (and defaults it again) when the only manager that set it omits it.
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
            "spec": {"replicas": 0, "paused": true}});
        let (created, managers) = updater()
            .apply(&json!({}), &config, Fields::new(), &id("alpha", Operation::Apply), false)
            .expect("applies");
        let created = created.expect("changed");
        let second = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}, "spec": {"paused": true}});
        let (after, managers) = updater()
            .apply(&created, &second, managers, &id("alpha", Operation::Apply), false)
            .expect("applies");
        let after = after.expect("changed");
        assert_eq!(after["spec"], json!({"paused": true}));
        assert_eq!(after["metadata"]["name"], "api");
        assert_eq!(owned(&managers, "alpha", Operation::Apply)["f:spec"], json!({"f:paused": {}}));
    }

    #[test]
    fn apply_conflicts_only_on_changed_values() {
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}, "spec": {"replicas": 1}});
        let mut managers = Fields::new();
        let set = Set::from_fields_v1(&json!({"f:spec": {"f:replicas": {}}})).expect("valid");
        managers.insert(
            id("kubectl-create", Operation::Update),
            VersionedSet { set, api_version: "apps/v1".into(), applied: false },
        );
        let same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}, "spec": {"replicas": 1}});
        let (unchanged, shared) = updater()
            .apply(&live, &same, managers.clone(), &id("beta", Operation::Apply), false)
            .expect("no conflict");
        assert!(unchanged.is_none());
        assert_eq!(
            owned(&shared, "kubectl-create", Operation::Update),
            json!({"f:spec": {"f:replicas": {}}})
        );
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}, "spec": {"replicas": 2}});
        match updater().apply(&live, &other, managers.clone(), &id("beta", Operation::Apply), false) {
            Err(ApplyError::Conflicts(conflicts)) => {
                assert_eq!(conflicts.len(), 1);
                assert_eq!(crate::managed_fields::fieldpath::path_string(&conflicts[0].1), ".spec.replicas");
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        let (_, forced) =
            updater().apply(&live, &other, managers, &id("beta", Operation::Apply), true).expect("forced");
        assert_eq!(owned(&forced, "kubectl-create", Operation::Update), Value::Null);
    }

    #[test]
    fn updates_take_changed_fields_and_drop_removed_ones() {
        let live = json!({"spec": {"replicas": 1, "paused": true}});
        let new = json!({"spec": {"replicas": 2}});
        let mut managers = Fields::new();
        let set = Set::from_fields_v1(&json!({"f:spec": {"f:replicas": {}, "f:paused": {}}})).expect("valid");
        managers.insert(
            id("alpha", Operation::Apply),
            VersionedSet { set, api_version: "apps/v1".into(), applied: true },
        );
        let managers =
            updater().update(&live, &new, managers, &id("kubectl-scale", Operation::Update)).expect("valid");
        assert_eq!(owned(&managers, "alpha", Operation::Apply), Value::Null);
        assert_eq!(
            owned(&managers, "kubectl-scale", Operation::Update),
            json!({"f:spec": {"f:replicas": {}}})
        );
    }
}
