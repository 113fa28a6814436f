//! CustomResourceDefinitions in the write pipeline: the strategy's status on create and update,
//! and the apiextensions-apiserver's naming and establishing controllers. Those run inside the
//! apiserver (not the controller-manager), so kube-sim runs them in every mode, right after each
//! CRD write and deletion, writing the status straight to storage: a client sees the create
//! answer with the zero status, then `NamesAccepted` and `Established` in two more writes, and
//! the resources are served from the first.

use std::sync::Arc;

use serde_json::Value;

use super::Cluster;
use crate::cluster_logic::crd_status::{create_status, establishing, naming, update_status};
use crate::resources::{ResourceInfo, StorageKey};
use crate::store::{Mutation, object_rv};

/// Passes over a group before giving up on a settled state (each pass makes progress).
const MAX_PASSES: usize = 8;

pub(super) fn is_crd(info: &ResourceInfo) -> bool {
    info.storage_group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

fn crd_key() -> StorageKey {
    StorageKey { group: "apiextensions.k8s.io".into(), plural: "customresourcedefinitions".into() }
}

/// `PrepareForCreate`: the status a new CRD is stored with.
pub(super) fn prepare_create(info: &ResourceInfo, object: &mut Value) {
    if is_crd(info) && object.is_object() {
        object["status"] = create_status(object);
    }
}

/// `PrepareForUpdate`: the stored status (already copied in) plus the new storage version.
pub(super) fn prepare_update(info: &ResourceInfo, object: &mut Value) {
    if is_crd(info) && object.is_object() {
        let status = update_status(object, &object["status"]);
        object["status"] = status;
    }
}

impl Cluster {
    /// Runs the naming and establishing controllers over the CRDs of `group` until they settle
    /// (a create, an update or a deletion can free or take names of the others).
    pub(super) fn sync_crd_group(&self, group: &str) {
        let Some(info) = self.catalogue().find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        else {
            return;
        };
        for _ in 0..MAX_PASSES {
            let in_group = |o: &Value| o["spec"]["group"].as_str() == Some(group);
            let crds: Vec<Value> = self
                .store()
                .list(&crd_key(), None, None, 0, &in_group)
                .items
                .iter()
                .map(|o| (**o).clone())
                .collect();
            let mut changed = false;
            for crd in &crds {
                let now = jiff::Timestamp::now();
                let mut current = crd.clone();
                if let Some(status) = naming(&current, &crds, now) {
                    match self.write_crd_status(&info, &current, status) {
                        Some(stored) => current = (*stored).clone(),
                        None => {
                            changed = true;
                            continue;
                        }
                    }
                    changed = true;
                }
                if let Some(status) = establishing(&current, now) {
                    self.write_crd_status(&info, &current, status);
                    changed = true;
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// A controller's status write (no admission), keeping the catalogue in step. `None` when
    /// the CRD changed meanwhile (the next pass looks again).
    fn write_crd_status(
        &self,
        info: &Arc<ResourceInfo>,
        current: &Value,
        status: Value,
    ) -> Option<Arc<Value>> {
        let mut updated = current.clone();
        updated["status"] = status;
        let mutation = Mutation::Update { key: crd_key(), object: updated, expected_rv: object_rv(current) };
        let stored = self.store().commit(mutation).ok()?;
        self.after_write(info, &stored, false);
        Some(stored)
    }
}
