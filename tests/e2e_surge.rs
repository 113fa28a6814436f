//! Surge on a blocked drain, end to end: real binary, kube-sim, real `kubectl drain`.

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;

use support::{ClusterShape, Env, deployment, namespace, pdb};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SURGE_KEYS: [&str; 2] =
    ["evictionSurgeReplicas", "eviction-autoscaler.azure.com/original-min-replicas"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_behind_min_available_one_drains_without_downtime_and_reverts() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment("demo", "web", 1, &[])).await;
    env.apply(&pdb("demo", "web", "web", serde_json::json!({"minAvailable": 1}))).await;
    env.wait_ready("demo", "web", 1).await;
    let history = env.record_deployment("demo", "web");

    let node = env.node_of("demo", "web").await;
    let drain = env
        .kubectl(&["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"])
        .await;
    assert!(
        drain.status.success(),
        "drain failed: {}\n--- product log ---\n{}",
        String::from_utf8_lossy(&drain.stderr),
        env.product_log()
    );

    // Back to exactly what it was: 1 replica, no surge annotations.
    support::wait_for("the revert to 1 replica without surge annotations", Duration::from_secs(60), || {
        let last = history.states().last().cloned();
        async move {
            last.filter(|s| s.replicas == 1 && SURGE_KEYS.iter().all(|k| !s.annotations.contains_key(*k)))
        }
    })
    .await;

    let states = history.states();
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(2), "surged by exactly the one displaced pod");
    let evictions = env.evictions();
    assert!(evictions.iter().any(|(_, code)| *code == 429), "the first eviction was refused: {evictions:?}");
    assert!(
        evictions.iter().any(|(_, code)| *code == 201),
        "the pod was evicted, not deleted: {evictions:?}"
    );
    let scale_writes: Vec<_> =
        env.product_writes().into_iter().filter(|r| r.resource == "deployments" && r.code < 300).collect();
    assert_eq!(scale_writes.len(), 2, "one surge write and one revert write: {scale_writes:?}");
}
