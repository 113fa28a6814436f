//! Drains end to end (issue 6 "Done when"): several displaced pods under a maxSurge cap, a
//! taint-only drain, consecutive drains under one surge, a forgotten cordon expiring, and
//! evictions paused longer than kubectl's back-off. Real binary, the real control plane, real kubectl.

use e2e_support as support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::scenario::{deployment_with_max_surge, surged, unsurged, wait_state};
use support::{ClusterShape, Env, namespace, pdb};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const LONG: Duration = Duration::from_secs(60);

/// A namespace `demo` with Deployment `web` (`replicas`, maxSurge 1) behind a PDB
/// `minAvailable: min_available`, all Ready.
async fn web(env: &Env, replicas: i32, min_available: i32) {
    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment_with_max_surge("demo", "web", replicas, json!(1))).await;
    env.apply(&pdb("demo", "web", "web", json!({"minAvailable": min_available}))).await;
    env.wait_ready("demo", "web", i64::from(replicas)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_displaced_pods_surge_by_max_surge_only_and_the_drain_completes() {
    // Two nodes: the scheduler (least loaded, ties by name) puts 2 of 3 pods on node-1.
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    web(&env, 3, 3).await;
    let node = if env.pods_on("demo", "web", "node-1").await.len() == 2 { "node-1" } else { "node-2" };
    assert_eq!(env.pods_on("demo", "web", node).await.len(), 2, "two pods share one node");
    let history = env.record_deployment("demo", "web");

    env.drain(node).await;
    wait_state(&history, "the revert to 3 replicas without surge annotations", LONG, |s| {
        s.replicas == 3 && unsurged(s)
    })
    .await;

    let states = history.states();
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(4), "capped at 3 + maxSurge 1: {states:?}");
    assert!(states.iter().all(|s| s.ready >= 3), "Ready replicas dropped below minAvailable: {states:?}");
    let evicted = env.evictions().into_iter().filter(|(_, code)| *code == 201).count();
    assert_eq!(evicted, 2, "both pods were evicted: {:?}", env.evictions());
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "one surge write, one revert write");
    assert_eq!(env.unselective_pod_reads(), vec![], "pods read only by node or label");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taint_only_drain_surges_and_the_eviction_then_goes_through() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    web(&env, 1, 1).await;
    let node = env.node_of("demo", "web").await;
    let pod = env.pods_on("demo", "web", &node).await.remove(0);
    let history = env.record_deployment("demo", "web");

    // Karpenter's way: a taint, no cordon.
    env.kubectl_ok(&["taint", "node", &node, "karpenter.sh/disrupted:NoSchedule"]).await;
    wait_state(&history, "a surge to 2 on the taint alone", LONG, |s| s.replicas == 2 && surged(s)).await;
    let node_object = env.get(&["node", &node]).await.unwrap_or_default();
    assert!(node_object["spec"]["unschedulable"].is_null(), "the node was never cordoned");

    // Like kubectl's retry loop: the eviction goes through once the surge pod is Ready.
    let (accepted, output) = support::wait_for("the eviction to be accepted", LONG, || async {
        let (ok, out) = env.evict("demo", &pod).await;
        ok.then_some((ok, out))
    })
    .await;
    assert!(accepted, "{output}");
    wait_state(&history, "the revert to 1 once the tainted node is empty", LONG, |s| {
        s.replicas == 1 && unsurged(s)
    })
    .await;
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "one surge write, one revert write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_drains_in_a_row_are_covered_by_one_surge() {
    // Four nodes, one pod each on node-1..3; node-4 takes the surge pod.
    let mut env = Env::start(BIN, ClusterShape { nodes: 4, pods_per_node: 110 }).await;
    // Between two drains the drained node is empty, so nothing is "in progress": only the
    // last eviction (within the cooldown) holds the surge across kubectl's restart and the
    // next cordon. That gap is well under a second; 10 s leaves room for a loaded CI box.
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=10s", "--signal-window=10s"]).await;
    // node-4 cordoned meanwhile: the scheduler breaks ties between empty nodes at random.
    env.kubectl_ok(&["cordon", "node-4"]).await;
    web(&env, 3, 3).await;
    env.kubectl_ok(&["uncordon", "node-4"]).await;
    for node in ["node-1", "node-2", "node-3"] {
        assert_eq!(env.pods_on("demo", "web", node).await.len(), 1, "one pod on {node}");
    }
    let history = env.record_deployment("demo", "web");

    for node in ["node-1", "node-2", "node-3"] {
        env.drain(node).await;
        let last = history.states().last().cloned().unwrap_or_default();
        assert!(surged(&last) && last.replicas == 4, "still surged after draining {node}: {last:?}");
    }
    wait_state(&history, "the revert to 3 after the last drain", LONG, |s| s.replicas == 3 && unsurged(s))
        .await;

    let states = history.states();
    let surge_starts = states.windows(2).filter(|w| !surged(&w[0]) && surged(&w[1])).count();
    assert_eq!(surge_starts, 1, "one surge for all three drains: {states:?}");
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(4), "{states:?}");
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "one surge write, one revert write");
    let evicted = env.evictions().into_iter().filter(|(_, code)| *code == 201).count();
    assert!(evicted >= 3, "every drain evicted: {:?}", env.evictions());
    assert_eq!(env.unselective_pod_reads(), vec![], "pods read only by node or label");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_cordon_expires_after_max_hold() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&[
        "--actioned-namespaces=demo",
        "--cooldown=2s",
        "--signal-window=10s",
        "--max-hold=6s",
    ])
    .await;
    web(&env, 1, 1).await;
    let node = env.node_of("demo", "web").await;
    let history = env.record_deployment("demo", "web");

    env.kubectl_ok(&["cordon", &node]).await;
    wait_state(&history, "a surge to 2 on the cordon", LONG, |s| s.replicas == 2 && surged(s)).await;
    assert!(!env.pods_on("demo", "web", &node).await.is_empty(), "the pod sits on the cordoned node");
    let message = env.wait_event("demo", "web", "SurgeExpired", LONG).await;
    wait_state(&history, "the revert to 1 after max-hold", LONG, |s| s.replicas == 1 && unsurged(s)).await;

    // Nothing was evicted: the pod sat on the cordon until the end, so max-hold ended it.
    assert_eq!(env.evictions(), vec![], "no eviction was ever attempted");
    // The cordon stays: past two more cooldowns, the forgotten node does not surge again.
    let quiet_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < quiet_until {
        let last = history.states().last().cloned().unwrap_or_default();
        assert!(last.replicas == 1 && unsurged(&last), "surged again after expiring: {last:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(message.contains("web"), "the Event names the Deployment: {message}");
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "one surge write, one revert write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_paused_past_kubectls_backoff_keep_the_surge_while_pods_remain() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    web(&env, 1, 1).await;
    let node = env.node_of("demo", "web").await;
    let pod = env.pods_on("demo", "web", &node).await.remove(0);
    let history = env.record_deployment("demo", "web");

    // The kubelet paused: the surge pod cannot become Ready, so the first eviction is refused.
    env.pause_kubelets();
    env.kubectl_ok(&["cordon", &node]).await;
    wait_state(&history, "a surge to 2 on the cordon", LONG, |s| s.replicas == 2 && surged(s)).await;
    let (accepted, output) = env.evict("demo", &pod).await;
    assert!(!accepted, "the first eviction is refused by the PDB: {output}");
    env.resume_kubelets();
    env.wait_ready("demo", "web", 2).await;

    // No eviction for 8 s (> kubectl's 5 s back-off, > the 2 s cooldown, well inside the
    // signal window's spirit): the pod is still on the draining node, so the surge holds.
    let quiet_until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < quiet_until {
        let last = history.states().last().cloned().unwrap_or_default();
        assert!(surged(&last) && last.replicas == 2, "reverted while a pod was still on {node}: {last:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(env.pods_on("demo", "web", &node).await, vec![pod], "the pod waited on the draining node");

    env.drain(&node).await;
    wait_state(&history, "the revert to 1 after the drain", LONG, |s| s.replicas == 1 && unsurged(s)).await;
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "one surge write, one revert write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_scale_mid_surge_is_kept_after_the_drain() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    let node = env.node_of("demo", "web").await;
    let history = env.record_deployment("demo", "web");

    env.kubectl_ok(&["cordon", &node]).await;
    wait_state(&history, "a surge to 2 on the cordon", LONG, |s| s.replicas == 2 && surged(s)).await;
    env.kubectl_ok(&["scale", "deployment", "web", "-n", "demo", "--replicas=5"]).await;
    env.drain(&node).await;

    let last = wait_state(&history, "surge annotations gone", LONG, unsurged).await;
    assert_eq!(last.replicas, 5, "the user's 5 is kept");
    let message = env.wait_event("demo", "web", "SurgeReverted", LONG).await;
    assert!(
        message.contains("changed to 5 meanwhile; keeping 5"),
        "the Event says the user's value was kept: {message}"
    );
    assert_eq!(
        env.deployment_write_codes("demo", "web"),
        [200, 200],
        "one surge write, one annotation-only revert"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_writer_resetting_replicas_gets_bounded_resurges_not_a_write_fight() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    web(&env, 1, 1).await;
    let node = env.node_of("demo", "web").await;
    let history = env.record_deployment("demo", "web");

    // A cordon left in place holds the surge (default max-hold: 1 h) while GitOps resets it.
    env.kubectl_ok(&["cordon", &node]).await;
    wait_state(&history, "a surge to 2 on the cordon", LONG, |s| s.replicas == 2 && surged(s)).await;
    let surges = |states: &[support::DeploymentState]| {
        states.windows(2).filter(|w| w[0].replicas == 1 && w[1].replicas == 2).count()
    };
    for reset in 1..=3 {
        env.kubectl_ok(&["scale", "deployment", "web", "-n", "demo", "--replicas=1"]).await;
        if reset < 3 {
            // Re-surged after a back-off of 10 s, then 20 s.
            support::wait_for(&format!("the re-surge after reset {reset}"), LONG, || {
                let seen = surges(&history.states());
                async move { (seen == reset + 1).then_some(()) }
            })
            .await;
        }
    }
    let gave_up = support::wait_for("a SurgeOverridden Event giving up", LONG, || async {
        let messages = env.deployment_events("demo", "web", "SurgeOverridden").await;
        messages.iter().any(|m| m.contains("no longer re-surging")).then_some(messages)
    })
    .await;
    assert_eq!(gave_up.len(), 3, "one SurgeOverridden Event per reset: {gave_up:?}");
    let writes_at_give_up = env.deployment_writes("demo", "web");
    // Longer than the cooldown and any re-surge the product would still plan: no write.
    let quiet_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < quiet_until {
        let last = history.states().last().cloned().unwrap_or_default();
        assert_eq!(last.replicas, 1, "the outside writer's value stands: {last:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(env.deployment_writes("demo", "web"), writes_at_give_up, "no write attempt after giving up");

    let states = history.states();
    assert_eq!(surges(&states), 3, "the surge and two re-surges, no more: {states:?}");
    // Surge, 3 override records (annotation only), 2 re-surges; the conflicts are bounded below.
    let acknowledged = writes_at_give_up.iter().filter(|r| r.succeeded()).count();
    assert!(acknowledged <= 6, "bounded writes: {writes_at_give_up:?}");
    // A 409 means someone else wrote the Deployment between our read and our write (on a real
    // cluster mostly the deployment controller's status updates); each is retried once after a
    // fresh read, so conflicts never outnumber the other writers' writes: no hot loop.
    let conflicts = env.product_writes_to("deployments").into_iter().filter(|r| r.code == 409).count();
    let others = env
        .requests()
        .into_iter()
        .filter(|r| r.resource == "deployments" && r.name == "web" && r.is_write())
        .filter(|r| !r.user_agent.starts_with(support::PRODUCT_AGENT))
        .count();
    assert!(conflicts <= others, "{conflicts} conflict retries for {others} writes by others");

    env.kubectl_ok(&["uncordon", &node]).await;
    let last = wait_state(&history, "surge annotations gone", LONG, unsurged).await;
    assert_eq!(last.replicas, 1);
}
