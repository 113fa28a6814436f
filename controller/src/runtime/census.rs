//! The `pdbs{class}` and `drain_blockers{reason}` gauges: the audit's judgement over the
//! caches ([`crate::audit::census`]), every [`CENSUS_EVERY`] while this replica holds the Lease
//! (two replicas reporting would double every sum), off the async workers (it matches every
//! PDB's selector against its namespace's Deployments).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use eviction_autoscaler_shared::config::Config;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::ObjectRef;
use tracing::warn;

use super::context::Context;
use super::kube::cached::{CachedDeployment, CachedPdb};
use super::kube::caches::Caches;
use crate::audit::census::{Census, NamespaceCache};
use crate::keda::ScaledObject;

/// How often the gauges are recomputed: a usual scrape interval.
pub const CENSUS_EVERY: Duration = Duration::from_secs(30);

/// Publishes the census while leading, zeros otherwise, until the task is dropped.
pub async fn publish(ctx: &Arc<Context>) {
    let mut leader = ctx.leader.clone();
    loop {
        let census = if *leader.borrow_and_update() {
            let (caches, config) = (ctx.caches.clone(), ctx.config());
            match tokio::task::spawn_blocking(move || census_of(&caches, &config)).await {
                Ok(census) => Some(census),
                Err(error) => {
                    warn!(%error, "the PDB census failed; its gauges read 0 until the next one");
                    None
                }
            }
        } else {
            None
        };
        ctx.metrics.publish_census(census.as_ref());
        tokio::select! {
            () = tokio::time::sleep(CENSUS_EVERY) => {}
            changed = leader.changed() => if changed.is_err() { return },
        }
    }
}

/// What the census reads of one namespace, gathered in one pass over each cache.
#[derive(Default)]
struct Gathered<'a> {
    pdbs: Vec<&'a CachedPdb>,
    deployments: Vec<&'a CachedDeployment>,
    hpas: Vec<HorizontalPodAutoscaler>,
    scaled_objects: Vec<ScaledObject>,
}

/// The census of every cached PDB, one namespace at a time (a namespace's Deployments and
/// PDBs are rebuilt from the compact caches only while it is counted). Namespaces without a PDB are
/// not looked at.
fn census_of(caches: &Caches, config: &Config) -> Census {
    let (pdbs, deployments, hpas) = (caches.pdbs.state(), caches.deployments.state(), caches.hpas.state());
    let scaled_objects = caches.scaled_objects.read().ok().and_then(|s| s.as_ref().map(|s| s.state()));
    let mut by_namespace: HashMap<&str, Gathered> = HashMap::new();
    for pdb in &pdbs {
        by_namespace.entry(pdb.meta().namespace().unwrap_or_default()).or_default().pdbs.push(pdb);
    }
    for deployment in &deployments {
        if let Some(gathered) = by_namespace.get_mut(deployment.namespace().unwrap_or_default()) {
            gathered.deployments.push(deployment);
        }
    }
    for hpa in &hpas {
        if let Some(gathered) = by_namespace.get_mut(hpa.metadata.namespace.as_deref().unwrap_or_default()) {
            gathered.hpas.push((**hpa).clone());
        }
    }
    for scaled_object in scaled_objects.iter().flatten() {
        if let Some(gathered) =
            by_namespace.get_mut(scaled_object.metadata.namespace.as_deref().unwrap_or_default())
        {
            gathered.scaled_objects.push((**scaled_object).clone());
        }
    }
    let mut census = Census::default();
    for (namespace, gathered) in by_namespace {
        let deployments: Vec<_> = gathered.deployments.iter().map(|d| d.to_deployment()).collect();
        let pdbs: Vec<_> = gathered.pdbs.iter().map(|p| p.to_pdb()).collect();
        let ns = caches.namespaces.get(&ObjectRef::<Namespace>::new(namespace));
        census.count(
            NamespaceCache {
                annotations: ns.as_ref().and_then(|n| n.metadata.annotations.as_ref()),
                pdbs: &pdbs,
                deployments: &deployments,
                hpas: &gathered.hpas,
                scaled_objects: &gathered.scaled_objects,
            },
            config,
        );
    }
    census
}
