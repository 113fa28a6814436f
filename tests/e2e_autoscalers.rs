//! Autoscaled and unsupported Deployments, end to end: an HPA's (or a KEDA ScaledObject's)
//! minimum is raised for the drain and restored after, never above its maximum; setups where no
//! surge can help (KEDA plus an HPA, two PDBs, `maxUnavailable: 0`, zero maxSurge) leave the
//! EvictionAutoScaler `Degraded` with the reason and write nothing; the zero-surge override
//! turns the last one into a surge.

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::autoscalers::{hpa, scaled_object};
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SURGE: &str = "evictionSurgeReplicas";
const ORIGINAL: &str = "eviction-autoscaler.azure.com/original-min-replicas";
const FLAGS: [&str; 3] = ["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"];

/// A 1-replica Deployment whose rolling update has `maxSurge: 0, maxUnavailable: 1`.
fn zero_surge_deployment(name: &str) -> String {
    let mut d: Value = serde_json::from_str(&deployment("demo", name, 1, &[])).expect("deployment JSON");
    d["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}});
    d.to_string()
}

/// The product's acknowledged writes to `resource` once the audit log shows at least `count`:
/// a write's audit entry is completed after its answer, so it can trail the watch event the
/// test waited for.
async fn audited_writes(env: &Env, resource: &str, count: usize) -> Vec<support::Request> {
    wait_for(&format!("{count} {resource} writes in the audit log"), Duration::from_secs(10), || {
        let writes = env.acknowledged_writes_to(resource);
        async move { (writes.len() >= count).then_some(writes) }
    })
    .await
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][key].as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hpa_minimum_is_raised_for_the_drain_and_restored_never_above_its_maximum() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment("demo", "web", 1, &[])).await;
    env.apply(&hpa("demo", "web", 1, 2)).await;
    env.apply(&pdb("demo", "web", "web", json!({"minAvailable": 1}))).await;
    env.wait_ready("demo", "web", 1).await;
    let hpa_gvr = support::Resource::new("autoscaling", "v2", "horizontalpodautoscalers");
    let hpa_history = env.record_object(&hpa_gvr, "demo", "web");
    let history = env.record_deployment("demo", "web");

    env.drain(&env.node_of("demo", "web").await).await;
    wait_for("the HPA minimum restored to 1 without surge annotations", Duration::from_secs(60), || {
        let h = env.object("autoscaling", "v2", "horizontalpodautoscalers", "demo", "web");
        async move {
            h.filter(|h| {
                h["spec"]["minReplicas"] == 1
                    && annotation(h, SURGE).is_none()
                    && annotation(h, ORIGINAL).is_none()
            })
        }
    })
    .await;

    let hpas = hpa_history.states();
    let raised =
        hpas.iter().find(|h| h["spec"]["minReplicas"] == 2).expect("the HPA minimum was raised to 2");
    assert_eq!(annotation(raised, ORIGINAL), Some("1"), "the baseline is recorded on the HPA");
    assert!(
        hpas.iter().all(|h| h["spec"]["minReplicas"].as_i64() <= h["spec"]["maxReplicas"].as_i64()),
        "minReplicas never above maxReplicas: {hpas:?}"
    );
    let states = history.states();
    assert!(states.iter().all(|s| s.replicas <= 2 && s.ready >= 1), "within max, never down: {states:?}");
    // The product also scales the Deployment up to the raised floor at once (the autoscaler acts
    // on its own schedule); scaling back down is left to the autoscaler.
    let writes = env.acknowledged_writes_to("deployments");
    assert_eq!(writes.len(), 1, "one immediate scale to the raised floor: {writes:?}");
    let writes = audited_writes(&env, "horizontalpodautoscalers", 2).await;
    assert_eq!(writes.len(), 2, "one raise, one restore: {writes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keda_minimum_is_raised_for_the_drain_and_restored() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let _keda = env.install_keda("demo").await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment("demo", "web", 1, &[])).await;
    env.apply(&scaled_object("demo", "web", 1, 2)).await;
    env.apply(&pdb("demo", "web", "web", json!({"minAvailable": 1}))).await;
    env.wait_ready("demo", "web", 1).await;
    let so_gvr = support::Resource::new("keda.sh", "v1alpha1", "scaledobjects");
    let so_history = env.record_object(&so_gvr, "demo", "web");
    let history = env.record_deployment("demo", "web");

    env.drain(&env.node_of("demo", "web").await).await;
    wait_for("the ScaledObject minimum restored to 1", Duration::from_secs(60), || {
        let so = env.object("keda.sh", "v1alpha1", "scaledobjects", "demo", "web");
        async move { so.filter(|s| s["spec"]["minReplicaCount"] == 1 && annotation(s, SURGE).is_none()) }
    })
    .await;

    let objects = so_history.states();
    let raised =
        objects.iter().find(|s| s["spec"]["minReplicaCount"] == 2).expect("minReplicaCount was raised to 2");
    assert_eq!(annotation(raised, ORIGINAL), Some("1"), "the baseline is recorded on the ScaledObject");
    assert!(
        objects
            .iter()
            .all(|s| s["spec"]["minReplicaCount"].as_i64() <= s["spec"]["maxReplicaCount"].as_i64()),
        "minReplicaCount never above maxReplicaCount: {objects:?}"
    );
    assert!(
        objects.iter().all(|s| s["spec"]["triggers"].is_array()),
        "fields we do not model survive our writes"
    );
    let states = history.states();
    assert!(states.iter().all(|s| s.replicas <= 2 && s.ready >= 1), "within max, never down: {states:?}");
    let writes = env.acknowledged_writes_to("deployments");
    assert_eq!(writes.len(), 1, "one immediate scale to the raised floor: {writes:?}");
    assert!(env.product_writes_to("horizontalpodautoscalers").is_empty(), "KEDA owns its HPA");
    let writes = audited_writes(&env, "scaledobjects", 2).await;
    assert_eq!(writes.len(), 2, "one raise, one restore: {writes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setups_no_surge_can_help_are_degraded_with_the_reason_and_never_written() {
    // One node: every pod is on the drained node.
    let mut env = Env::start(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }).await;
    let _keda = env.install_keda("demo").await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    // KEDA plus a separate HPA on one Deployment.
    env.apply(&deployment("demo", "both", 1, &[])).await;
    env.apply(&hpa("demo", "both", 1, 3)).await;
    env.apply(&scaled_object("demo", "both", 1, 3)).await;
    env.apply(&pdb("demo", "both", "both", json!({"minAvailable": 1}))).await;
    // Two PDBs over one pod.
    env.apply(&deployment("demo", "twice", 1, &[])).await;
    env.apply(&pdb("demo", "twice-a", "twice", json!({"minAvailable": 1}))).await;
    env.apply(&pdb("demo", "twice-b", "twice", json!({"minAvailable": 1}))).await;
    // A budget that grows with the replicas.
    env.apply(&deployment("demo", "strict", 1, &[])).await;
    env.apply(&pdb("demo", "strict", "strict", json!({"maxUnavailable": 0}))).await;
    // An HPA already at its maximum: a surge would have to exceed it.
    env.apply(&deployment("demo", "capped", 1, &[])).await;
    env.apply(&hpa("demo", "capped", 1, 1)).await;
    env.apply(&pdb("demo", "capped", "capped", json!({"minAvailable": 1}))).await;
    // No surge room in the rollout strategy.
    env.apply(&zero_surge_deployment("nosurge")).await;
    env.apply(&pdb("demo", "nosurge", "nosurge", json!({"minAvailable": 1}))).await;
    for name in ["both", "twice", "strict", "capped", "nosurge"] {
        env.wait_ready("demo", name, 1).await;
    }

    // Every eviction is refused; the drain gives up after its first round.
    let (ok, output) =
        env.kubectl_combined(&["drain", "node-1", "--ignore-daemonsets", "--timeout=3s"]).await;
    assert!(!ok, "nothing could be evicted: {output}");
    env.wait_degraded("demo", "both", "UnsupportedAutoscalerConfiguration").await;
    env.wait_degraded("demo", "twice-a", "MultiplePDBs").await;
    let message = env.wait_degraded("demo", "strict", "SurgeCannotOpenBudget").await;
    assert!(message.contains("maxUnavailable"), "the message says what to change: {message}");
    env.wait_degraded("demo", "nosurge", "UnsupportedSurgeConfiguration").await;
    let capped = env.wait_degraded("demo", "capped", "SurgeCannotOpenBudget").await;
    assert!(capped.contains("max"), "the message names the autoscaler maximum: {capped}");

    for resource in ["deployments", "horizontalpodautoscalers", "scaledobjects"] {
        let writes = env.product_writes_to(resource);
        assert!(writes.is_empty(), "no write to {resource}: {writes:?}");
    }
    for name in ["both", "twice", "strict", "capped", "nosurge"] {
        let d = env.deployment_now("demo", name).expect("deployment");
        assert_eq!(d["spec"]["replicas"], 1, "{name} keeps its replicas");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zero_surge_override_lets_a_zero_max_surge_deployment_surge() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let mut flags = FLAGS.to_vec();
    flags.push("--zero-surge-override=1");
    env.start_product(&flags).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&zero_surge_deployment("web")).await;
    env.apply(&pdb("demo", "web", "web", json!({"minAvailable": 1}))).await;
    env.wait_ready("demo", "web", 1).await;
    let history = env.record_deployment("demo", "web");

    env.drain(&env.node_of("demo", "web").await).await;
    wait_for("the revert to 1 replica", Duration::from_secs(60), || {
        let last = history.states().last().cloned();
        async move { last.filter(|s| s.replicas == 1 && !s.annotations.contains_key(SURGE)) }
    })
    .await;
    let states = history.states();
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(2), "surged by the override's 1: {states:?}");
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
    let writes = audited_writes(&env, "deployments", 2).await;
    assert_eq!(writes.len(), 2, "one surge, one revert: {writes:?}");
}
