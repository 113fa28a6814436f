//! The cost of one census: the `pdbs{class}` and `drain_blockers{reason}` gauges the Lease
//! holder recomputes every 30 s (figures in BENCHMARKS.md, "census"). Run by hand:
//! `cargo bench --bench census` (`NAMESPACES` × `PER_NS` Deployments, default 100 × 100, one
//! PDB each; `RUNS`, default 5).
//!
//! No cluster: the objects are built as the caches hold them (each Deployment through the
//! compact cache entry and back, as `runtime/census.rs` rebuilds a namespace's Deployments), and
//! what is timed is that rebuild plus `Census::count` for every namespace, on one thread, as the
//! runtime runs it.

use std::time::Instant;

use eviction_autoscaler_controller::audit::census::{Census, NamespaceCache};
use eviction_autoscaler_controller::runtime::kube::cached::{CachedDeployment, CachedPdb};
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::json;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One namespace: `per_ns` Deployments of 3 replicas, each with a PDB: a quarter
/// `minAvailable: 3` (`blocks_all`), the rest `minAvailable: 1` (`ok`).
fn namespace(ns: usize, per_ns: usize) -> (Vec<CachedDeployment>, Vec<CachedPdb>) {
    (0..per_ns)
        .map(|i| {
            let (namespace, name) = (format!("ns-{ns}"), format!("app-{i}"));
            let labels = json!({"app": name, "tier": "web"});
            let deployment: Deployment = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": namespace, "annotations": {"team": "a"}},
                "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels}}}
            }))
            .expect("a Deployment");
            let min = if i % 4 == 0 { 3 } else { 1 };
            let pdb: PodDisruptionBudget = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": name}}},
                "status": {"expectedPods": 3, "desiredHealthy": min, "currentHealthy": 3,
                           "disruptionsAllowed": 3 - min, "observedGeneration": 1}
            }))
            .expect("a PDB");
            (CachedDeployment::from(deployment), CachedPdb::from(pdb))
        })
        .unzip()
}

fn main() {
    let (namespaces, per_ns, runs) = (setting("NAMESPACES", 100), setting("PER_NS", 100), setting("RUNS", 5));
    let config = Config::resolve(&SettingsArgs::default(), None).expect("defaults");
    let cluster: Vec<_> = (0..namespaces).map(|ns| namespace(ns, per_ns)).collect();
    let annotations = [("eviction-autoscaler.azure.com/enable".to_owned(), "true".to_owned())].into();
    println!("{namespaces} namespaces × {per_ns} Deployments, one PDB each");
    for run in 1..=runs {
        let started = Instant::now();
        let mut census = Census::default();
        for (cached, pdbs) in &cluster {
            let deployments: Vec<Deployment> = cached.iter().map(CachedDeployment::to_deployment).collect();
            let pdbs: Vec<PodDisruptionBudget> = pdbs.iter().map(CachedPdb::to_pdb).collect();
            let namespace = NamespaceCache {
                annotations: Some(&annotations),
                pdbs: &pdbs,
                deployments: &deployments,
                hpas: &[],
                scaled_objects: &[],
            };
            census.count(namespace, &config);
        }
        let took = started.elapsed();
        println!("run {run}: {:.1} ms  {:?}", took.as_secs_f64() * 1000.0, census.pdbs);
    }
}
