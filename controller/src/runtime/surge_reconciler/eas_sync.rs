//! After a Deployment's surge step: its EvictionAutoScaler objects (created, repaired,
//! status written only on change, removed when out of scope) and the Go project's leftovers
//! on them (finalizers released, pinned PDBs restored).

use std::collections::HashMap;
use std::sync::Mutex;

use eviction_autoscaler_shared::crd::{EvictionAutoScaler, EvictionAutoScalerStatus};
use jiff::Timestamp;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tracing::{info, warn};

use super::observe::cached_eas;
use crate::adopt::{self, PinnedPdb};
use crate::eas;
use crate::error;
use crate::runtime::context::Context;
use crate::runtime::lock;
use crate::runtime::queue::Key;
use crate::surge::status::{StatusFacts, needs_write, render};
use crate::surge::{Observed, Plan, ScalerKind};

/// A status we wrote: the cached resourceVersion it was computed from, and the status.
type WrittenStatus = (Option<String>, EvictionAutoScalerStatus);

/// The last status written per EAS, and the cached resourceVersion it was computed from: two
/// evaluations close together would otherwise both write it before the watch delivers the
/// first write.
#[derive(Debug, Default)]
pub struct StatusWrites(Mutex<HashMap<(String, String), WrittenStatus>>);

impl StatusWrites {
    /// Whether `status` was already written to EAS `namespace/name` while the cache still
    /// shows the version it was computed from. A record the cache has moved past is dropped:
    /// it only bridges the moment until the watch delivers our write.
    fn already_written(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<&String>,
        status: &EvictionAutoScalerStatus,
    ) -> bool {
        let mut writes = lock(&self.0);
        let key = (namespace.to_owned(), name.to_owned());
        match writes.get(&key) {
            Some((version, written)) if version.as_ref() == cached_version => written == status,
            Some(_) => {
                writes.remove(&key);
                false
            }
            None => false,
        }
    }

    fn record(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<String>,
        status: EvictionAutoScalerStatus,
    ) {
        lock(&self.0).insert((namespace.to_owned(), name.to_owned()), (cached_version, status));
    }

    /// Forgets a deleted EAS.
    pub fn forget(&self, namespace: &str, name: &str) {
        lock(&self.0).remove(&(namespace.to_owned(), name.to_owned()));
    }
}

/// Writes the status of each EAS of the Deployment's PDBs, only where it changed.
pub async fn eas_status(
    ctx: &Context,
    key: &Key,
    observed: &Observed,
    plan: &Plan,
    now: Timestamp,
) -> Result<(), kube::Error> {
    if !observed.namespace_enabled {
        return Ok(());
    }
    let (namespace, name) = key;
    let deployment_replicas = observed.deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let target_replicas = match &plan.write {
        Some(w) if w.kind == ScalerKind::Deployment => w.value.unwrap_or(deployment_replicas),
        Some(w) => w.deployment_replicas.unwrap_or(deployment_replicas),
        None => deployment_replicas,
    };
    let api: Api<EvictionAutoScaler> = Api::namespaced(ctx.client.clone(), namespace);
    for pdb in &observed.pdbs {
        let pdb_name = pdb.metadata.name.as_deref().unwrap_or_default();
        let Some(existing) = cached_eas(ctx, namespace, pdb_name) else { continue };
        if existing.spec.target_name != *name {
            continue;
        }
        let facts = StatusFacts {
            target_replicas,
            last_eviction: existing.spec.last_eviction.clone(),
            generation: existing.metadata.generation,
        };
        let status = render(existing.status.as_ref(), plan, &facts, now);
        let version = existing.metadata.resource_version.as_ref();
        if ctx.statuses.already_written(namespace, pdb_name, version, &status)
            || !needs_write(existing.status.as_ref(), &status)
        {
            continue;
        }
        let patch = Patch::Merge(json!({ "status": status }));
        match api.patch_status(pdb_name, &PatchParams::default(), &patch).await {
            Ok(_) => ctx.statuses.record(namespace, pdb_name, version.cloned(), status),
            Err(e) if error::is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Ensures one EAS per PDB protecting this Deployment in scope, and adopts Go leftovers.
pub async fn eas_objects(
    ctx: &Context,
    key: &Key,
    observed: &Observed,
    surged: bool,
) -> Result<(), kube::Error> {
    let (namespace, name) = key;
    let api: Api<EvictionAutoScaler> = Api::namespaced(ctx.client.clone(), namespace);
    for pdb in &observed.pdbs {
        let pdb_name = pdb.metadata.name.as_deref().unwrap_or_default();
        // The Deployment a PDB protects is the first by name among those it covers.
        if ctx.caches.deployments_covered_by(pdb).first().map(|(_, d)| d) != Some(name) {
            continue; // another Deployment's evaluation owns this PDB's EAS
        }
        let existing = cached_eas(ctx, namespace, pdb_name);
        if !observed.namespace_enabled {
            let ours = existing.as_ref().is_some_and(|e| {
                e.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| Some(&o.uid) == pdb.metadata.uid.as_ref())
            });
            if ours && !surged {
                match api.delete(pdb_name, &DeleteParams::default()).await {
                    Ok(_) => info!(eas = pdb_name, "namespace left scope: EvictionAutoScaler removed"),
                    Err(e) if error::is_not_found(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            continue;
        }
        match existing {
            // The CRD is gone or being deleted (the apiserver refuses creates with 403 then);
            // its watch schedules everything again when it is back.
            None if ctx.default_pdbs.crd_uid().is_none() => {}
            None => match api.create(&PostParams::default(), &eas::desired(pdb, name)).await {
                Ok(_) => info!(eas = pdb_name, "EvictionAutoScaler created"),
                Err(e) if error::is_already_exists(&e) => {}
                Err(e) => return Err(e),
            },
            Some(existing) => {
                if let Some(patch) = eas::repair(&existing, pdb, name) {
                    patch_ignoring_races(&api, pdb_name, Patch::Merge(patch)).await?;
                }
                if let Some(patch) = adopt::release_go_finalizers(&existing) {
                    // Guarded by a JSON-patch `test`: a concurrent edit gets 422 and we retry later.
                    match serde_json::from_value::<json_patch::Patch>(patch) {
                        Ok(patch) => {
                            patch_ignoring_races(&api, pdb_name, Patch::Json(patch)).await?;
                            info!(eas = pdb_name, "released the Go project's finalizers");
                        }
                        Err(e) => warn!(error = %e, "could not build the finalizer patch"),
                    }
                }
            }
        }
        restore_pin(ctx, namespace, pdb).await?;
    }
    Ok(())
}

async fn patch_ignoring_races(
    api: &Api<EvictionAutoScaler>,
    name: &str,
    patch: Patch<serde_json::Value>,
) -> Result<(), kube::Error> {
    match api.patch(name, &PatchParams::default(), &patch).await {
        Ok(_) => Ok(()),
        // The watch brings the newer object and the next evaluation tries again.
        Err(e) if error::is_conflict(&e) || error::is_not_found(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn restore_pin(ctx: &Context, namespace: &str, pdb: &PodDisruptionBudget) -> Result<(), kube::Error> {
    let name = pdb.metadata.name.as_deref().unwrap_or_default();
    match adopt::restore_pinned_pdb(pdb) {
        PinnedPdb::No => Ok(()),
        PinnedPdb::Unreadable(message) => {
            warn!(pdb = name, %message, "cannot restore a PDB pinned by the Go project");
            Ok(())
        }
        PinnedPdb::Restore(patch) => {
            let api: Api<PodDisruptionBudget> = Api::namespaced(ctx.client.clone(), namespace);
            match api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await {
                Ok(_) => {
                    info!(pdb = name, "restored a PDB pinned by the Go project");
                    Ok(())
                }
                Err(e) if error::is_conflict(&e) || error::is_not_found(&e) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_status_is_remembered_only_until_the_cache_shows_a_newer_version() {
        let writes = StatusWrites::default();
        let status = EvictionAutoScalerStatus { min_replicas: Some(1), ..Default::default() };
        let (v7, v8) = (Some("7".to_owned()), Some("8".to_owned()));
        assert!(!writes.already_written("ns", "web", v7.as_ref(), &status));
        writes.record("ns", "web", v7.clone(), status.clone());
        assert!(writes.already_written("ns", "web", v7.as_ref(), &status), "the cache has not caught up");
        let other = EvictionAutoScalerStatus { min_replicas: Some(2), ..Default::default() };
        assert!(!writes.already_written("ns", "web", v7.as_ref(), &other), "another status goes out");
        assert!(!writes.already_written("ns", "web", v8.as_ref(), &status), "planned from a newer version");
        assert_eq!(lock(&writes.0).len(), 0, "and the record is dropped");
    }
}
