//! After a Deployment's surge step: its EvictionAutoScaler objects (created, repaired,
//! status written only on change, removed when out of scope) and the Go project's leftovers
//! on them (finalizers released, pinned PDBs restored).

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
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
use crate::runtime::queue::ObjectKey;
use crate::surge::status::{StatusFacts, needs_write, render};
use crate::surge::{Observed, Plan, ScalerKind};

/// Writes the status of each EAS of the Deployment's PDBs, only where it changed.
pub async fn eas_status(
    ctx: &Context,
    key: &ObjectKey,
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
    key: &ObjectKey,
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
