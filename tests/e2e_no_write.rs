//! Situations where the product must not write any workload (issue 6 "Done when"), and its
//! request-log hygiene: pods read only with a selector, a blocked drain costs two scale writes
//! and at most two EAS status writes (issue 19), and an idle cluster costs only watch and Lease
//! traffic. Each no-write check waits for a positive marker that the product has
//! seen the situation before it reads the request log.

use e2e_support as support;

use std::time::Duration;

use support::scenario::{surged, unsurged, wait_state};
use support::{ClusterShape, Env, PRODUCT_AGENT, namespace, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const LONG: Duration = Duration::from_secs(60);
const FLAGS: [&str; 3] = ["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"];

/// Waits until the controller has settled `count` eviction signals: each taken into account by
/// a surge evaluation (after any write it made for it), or found to need none (a pod gone).
async fn wait_signals_settled(env: &Env, count: u32) {
    wait_for("the controller to settle the evictions' signals", LONG, || async {
        let settled = support::metrics::metric_sum(
            &env.metrics().await,
            "eviction_autoscaler_signals_settled_total",
            &[],
        );
        (settled >= f64::from(count)).then_some(())
    })
    .await;
}

/// Waits until `last_write` (the sequence number of the newest write of interest) has not
/// changed for `quiet`.
async fn wait_quiet(what: &str, quiet: Duration, last_write: impl Fn() -> Option<u64>) {
    let mut seen = last_write();
    let mut quiet_since = std::time::Instant::now();
    wait_for(what, LONG, || {
        let now = last_write();
        if now != seen {
            (seen, quiet_since) = (now, std::time::Instant::now());
        }
        let done = quiet_since.elapsed() >= quiet;
        async move { done.then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_on_a_node_that_is_not_draining_writes_nothing() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    env.wait_eas("demo", "web").await;
    let node = env.node_of("demo", "web").await;
    let pod = env.pods_on("demo", "web", &node).await.remove(0);

    // A descheduler's eviction: blocked by the PDB, but no drain anywhere.
    let (accepted, output) = env.evict("demo", &pod).await;
    assert!(!accepted, "the PDB refuses the eviction: {output}");
    env.wait_eas_last_eviction("demo", "web", &pod).await;
    wait_signals_settled(&env, 1).await;
    assert_eq!(env.workload_writes(), vec![], "no workload write for a descheduler eviction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_dry_run_drain_writes_nothing() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    let node = env.node_of("demo", "web").await;

    // kubectl retries the refused dry-run eviction until its timeout; only the requests matter.
    env.kubectl(&["drain", &node, "--dry-run=server", "--ignore-daemonsets", "--timeout=6s"]).await;
    let dry_evictions = env
        .requests()
        .into_iter()
        .filter(|r| r.subresource == "eviction" && r.name.starts_with("web-"))
        .count();
    assert!(dry_evictions >= 1, "kubectl sent dry-run evictions: {:?}", env.evictions());
    wait_for("the webhook to report the dry runs it ignored", LONG, || async {
        (support::metrics::metric_sum(
            &env.metrics().await,
            "eviction_autoscaler_webhook_dry_runs_ignored_total",
            &[],
        ) >= 1.0)
            .then_some(())
    })
    .await;
    let node_object = env.get(&["node", &node]).await.unwrap_or_default();
    assert!(node_object["spec"]["unschedulable"].is_null(), "a dry-run cordon changes nothing");
    assert_eq!(env.workload_writes(), vec![], "no workload write for a dry run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_out_of_scope_is_never_written() {
    // One node: both Deployments' pods share it; the in-scope one is the marker.
    let mut env = Env::start(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&namespace("elsewhere", &[])).await;
    env.protected_workload("elsewhere", "api", 1, 1).await;
    env.protected_workload("demo", "web", 1, 1).await;
    let out_of_scope = env.pods_on("elsewhere", "api", "node-1").await.remove(0);
    let in_scope = env.pods_on("demo", "web", "node-1").await.remove(0);
    let marker = env.record_deployment("demo", "web");

    env.kubectl_ok(&["cordon", "node-1"]).await;
    let (accepted, _) = env.evict("elsewhere", &out_of_scope).await;
    assert!(!accepted, "the out-of-scope PDB refuses the eviction");
    let (accepted, _) = env.evict("demo", &in_scope).await;
    assert!(!accepted, "the in-scope PDB refuses the eviction");
    wait_state(&marker, "the in-scope Deployment to surge", LONG, surged).await;
    wait_signals_settled(&env, 2).await;

    let foreign: Vec<_> = env.product_writes().into_iter().filter(|r| r.namespace == "elsewhere").collect();
    assert_eq!(foreign, vec![], "nothing in the out-of-scope namespace is written");
    assert!(
        env.get(&["evictionautoscalers", "-n", "elsewhere", "api"]).await.is_none(),
        "no EAS out of scope"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_the_pdb_allows_anyway_writes_nothing() {
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 2, 1).await;
    // Settled before the drain: the EAS created, its first status written, and no EAS write
    // for a few seconds (a write right after the create may trail the status).
    wait_for("the EAS status before the drain", LONG, || async {
        let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await?;
        (eas["status"]["conditions"][0]["reason"] == "Idle").then_some(())
    })
    .await;
    wait_quiet("the EAS writes to stop", Duration::from_secs(3), || {
        env.product_writes().into_iter().rfind(|r| r.resource == "evictionautoscalers").map(|r| r.seq)
    })
    .await;
    // As an operator checks before draining: the budget has room.
    wait_for("the PDB to allow one disruption", LONG, || async {
        let pdb = env.get(&["pdb", "-n", "demo", "web"]).await?;
        (pdb["status"]["disruptionsAllowed"] == 1).then_some(())
    })
    .await;
    let node = env.node_of("demo", "web").await;
    let pod = env.pods_on("demo", "web", &node).await.remove(0);

    let before = env.requests().len();
    let drain = env.kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"]).await;
    assert!(drain.status.success(), "drain failed: {}", String::from_utf8_lossy(&drain.stderr));
    assert_eq!(env.evictions(), vec![(pod.clone(), 201)], "evicted at the first attempt");
    wait_signals_settled(&env, 1).await;
    let writes: Vec<String> = env
        .requests()
        .into_iter()
        .skip(before)
        .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT) && r.is_write() && r.resource != "leases")
        .map(|r| format!("{} {}/{} {}", r.verb, r.resource, r.name, r.subresource))
        .collect();
    assert_eq!(
        writes,
        Vec::<String>::new(),
        "an eviction the PDB allows costs no write at all:\n{}",
        env.product_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_drain_costs_two_scale_writes_and_at_most_two_status_writes_then_idle_only_the_lease() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    wait_for("the EAS status before the drain", LONG, || async {
        let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await?;
        (eas["status"]["conditions"][0]["reason"] == "Idle").then_some(())
    })
    .await;
    let node = env.node_of("demo", "web").await;
    let history = env.record_deployment("demo", "web");
    let before = env.requests().last().map_or(0, |r| r.seq);
    let drain = env.kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"]).await;
    assert!(drain.status.success(), "drain failed: {}", String::from_utf8_lossy(&drain.stderr));
    wait_state(&history, "the revert to 1", LONG, |s| s.replicas == 1 && unsurged(s)).await;
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "the drain surged and reverted");
    assert_eq!(env.unselective_pod_reads(), vec![], "pods read only by node or label");

    // Settled: the revert's Event and EAS status are written before the idle window opens.
    env.wait_event("demo", "web", "SurgeReverted", LONG).await;
    wait_for("EAS status without a surge", LONG, || async {
        let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await?;
        (eas["status"]["surgeReplicas"] == 0).then_some(())
    })
    .await;

    // Idle means nobody writes anything but a Lease: the revert's scale-down (the pod's
    // graceful deletion, then the controllers' status updates, which the product re-reads)
    // has finished when no other write has come for a few seconds.
    wait_quiet("the cluster to go quiet", Duration::from_secs(5), || {
        env.requests().into_iter().rfind(|r| r.is_write() && r.resource != "leases").map(|r| r.seq)
    })
    .await;

    // The EAS status follows the surge, not the pods: written at the surge and at the revert
    // (which also acknowledges the eviction recorded on its spec meanwhile).
    let status_writes: Vec<_> = env
        .product_writes()
        .into_iter()
        .filter(|r| r.seq > before && r.resource == "evictionautoscalers" && r.subresource == "status")
        .collect();
    assert!(status_writes.len() <= 2, "EAS status writes for one blocked drain: {status_writes:?}");
    let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await.unwrap_or_default();
    assert_eq!(
        eas["status"]["lastEviction"], eas["spec"]["lastEviction"],
        "the eviction is acknowledged: {eas}"
    );
    assert_eq!(eas["status"]["observedGeneration"], eas["metadata"]["generation"], "{eas}");

    // The spec's 60 s: long enough for a dozen Lease renewals and any periodic resync.
    let start = env.requests().last().map_or(0, |r| r.seq);
    let idle_end = std::time::Instant::now() + Duration::from_secs(60);
    wait_for("60 s of idle cluster", Duration::from_secs(90), || async {
        (std::time::Instant::now() >= idle_end).then_some(())
    })
    .await;
    let idle: Vec<_> = env
        .requests()
        .into_iter()
        .filter(|r| r.seq > start && r.user_agent.starts_with(PRODUCT_AGENT))
        .collect();
    let other: Vec<_> = idle.iter().filter(|r| r.verb != "watch" && r.resource != "leases").collect();
    assert_eq!(other, Vec::<&support::Request>::new(), "idle traffic beyond watches and the Lease");
    assert!(idle.iter().any(|r| r.resource == "leases"), "the Lease was renewed while idle");
}
