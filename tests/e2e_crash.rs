//! Crash safety and fail-over, end to end: the product is SIGKILLed mid-surge (during the
//! drain, or after it but before the revert) and a fresh process — or a standby replica that
//! takes the Lease — finishes the job from the annotations on the Deployment.

use e2e_support as support;

use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use support::stalled::Stall;
use support::{ClusterShape, Env, PRODUCT_AGENT, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SURGE_KEYS: [&str; 2] =
    ["evictionSurgeReplicas", "eviction-autoscaler.azure.com/original-min-replicas"];
const FLAGS: [&str; 3] = ["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"];

/// Starts the product, waits until it holds the Lease, then starts a second replica named
/// `second`: the holder's identity and the second replica.
async fn holder_and_second(env: &mut Env, second: &str, flags: &[&str]) -> (String, support::Product) {
    env.start_product(flags).await;
    let holder = wait_for("the first process to hold the Lease", Duration::from_secs(30), || {
        let holder = env.lease_holder();
        async move { holder }
    })
    .await;
    let replica = env.start_extra_product(second, flags).await;
    assert!(!holder.starts_with(&format!("{second}_")), "the first process holds the Lease: {holder}");
    (holder, replica)
}

/// One replica behind `minAvailable: 1` in namespace `demo`, Ready; returns its node.
async fn one_protected_replica(env: &Env) -> String {
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    env.node_of("demo", "web").await
}

fn surged(env: &Env) -> bool {
    env.deployment_now("demo", "web")
        .and_then(|d| d["metadata"]["annotations"].as_object().cloned())
        .is_some_and(|a| SURGE_KEYS.iter().all(|k| a.contains_key(*k)))
}

/// Polls tightly (20 ms) so the kill lands right after the surge write.
async fn wait_surged(env: &Env) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !surged(env) {
        assert!(std::time::Instant::now() < deadline, "no surge annotations:\n{}", env.product_log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether Deployment `demo/name` is back at 1 replica with no surge annotations.
fn reverted(env: &Env, name: &str) -> bool {
    env.deployment_now("demo", name).is_some_and(|d| {
        let annotations = d["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
        d["spec"]["replicas"] == 1 && SURGE_KEYS.iter().all(|k| !annotations.contains_key(*k))
    })
}

/// Waits for `web` to be reverted.
async fn wait_reverted(env: &Env, what: &str) {
    wait_for(what, Duration::from_secs(60), || {
        let done = reverted(env, "web");
        async move { done.then_some(()) }
    })
    .await;
}

/// Waits for the standby replica to hold the Lease.
async fn wait_standby_holds(env: &Env) {
    wait_for("the standby to hold the Lease", Duration::from_secs(60), || {
        let holder = env.lease_holder();
        async move { holder.filter(|h| h.starts_with("standby_")) }
    })
    .await;
}

/// Sequence numbers of successful product writes to Deployments.
fn scale_write_seqs(env: &Env) -> Vec<u64> {
    env.acknowledged_writes_to("deployments").into_iter().map(|r| r.seq).collect()
}

/// Sequence number of the last successful eviction (the drain's end, as the server saw it).
fn last_eviction_seq(env: &Env) -> Option<u64> {
    env.requests()
        .into_iter()
        .filter(|r| r.subresource == "eviction" && r.code == 201)
        .map(|r| r.seq)
        .next_back()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_drain_a_fresh_process_keeps_the_surge_and_reverts_after_the_drain() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    let node = one_protected_replica(&env).await;
    let history = env.record_deployment("demo", "web");

    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=120s"]);
    wait_surged(&env).await;
    env.kill_product().await;
    // The dead holder's Lease must expire before the fresh process may write.
    env.start_product(&FLAGS).await;

    let (ok, output) = drain.finish().await;
    assert!(ok, "drain failed: {output}\n--- product log ---\n{}", env.product_log());
    wait_reverted(&env, "the fresh process to revert to 1 replica").await;

    let states = history.states();
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
    assert_eq!(
        states.iter().map(|s| s.replicas).max(),
        Some(2),
        "surged by the one displaced pod: {states:?}"
    );
    let writes = scale_write_seqs(&env);
    assert_eq!(writes.len(), 2, "one surge (first process), one revert (fresh process): {writes:?}");
    let drained_at = last_eviction_seq(&env).expect("the pod was evicted");
    assert!(
        writes[1] > drained_at,
        "the surge was kept until the drain finished: {writes:?} vs {drained_at}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_the_drain_before_the_revert_the_fresh_process_reverts() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    // A cooldown long enough that the first process cannot revert before it is killed.
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=10m", "--signal-window=10s"]).await;
    let node = one_protected_replica(&env).await;

    env.drain(&node).await;
    assert!(surged(&env), "the Deployment is surged after the drain");
    env.kill_product().await;
    assert_eq!(scale_write_seqs(&env).len(), 1, "only the surge was written before the kill");

    env.start_product(&FLAGS).await;
    wait_reverted(&env, "the fresh process to revert to 1 replica").await;
    assert_eq!(scale_write_seqs(&env).len(), 2, "exactly one revert write");
    env.wait_ready("demo", "web", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_takes_the_lease_from_a_killed_holder_and_reverts() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let (_, standby) = holder_and_second(&mut env, "standby", &FLAGS).await;
    let node = one_protected_replica(&env).await;
    let history = env.record_deployment("demo", "web");

    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=120s"]);
    wait_surged(&env).await;
    env.kill_product().await;
    env.route_webhook_to(standby.webhook_addr).await;

    let (ok, output) = drain.finish().await;
    assert!(ok, "drain failed: {output}\n--- standby log ---\n{}", standby.log());
    wait_standby_holds(&env).await;
    wait_reverted(&env, "the standby to revert to 1 replica").await;

    let states = history.states();
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(2), "never more than one surge pod: {states:?}");
    let writes = scale_write_seqs(&env);
    assert_eq!(writes.len(), 2, "one surge (holder), one revert (standby): {writes:?}");
    drop(standby);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_that_reaches_only_the_follower_is_acted_on_by_the_holder() {
    // `any`: a descheduler-style eviction (no draining node) surges, so the webhook signal is
    // the only thing that can start it.
    // No draining node holds this surge, only the cooldown after the signal: long enough for
    // the surge pod to become Ready and the eviction to be retried.
    let flags =
        ["--actioned-namespaces=demo", "--cooldown=10s", "--signal-window=10s", "--surge-trigger=any"];
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let (holder, follower) = holder_and_second(&mut env, "follower", &flags).await;
    env.route_webhook_to(follower.webhook_addr).await;
    one_protected_replica(&env).await;
    // A follower hands its signals over on the EvictionAutoScaler, which the holder creates once
    // it has seen the PDB; a signal from before that is lost, and a drain's next retry (5 s)
    // brings another. This single eviction waits for it instead.
    env.wait_eas("demo", "web").await;
    let pod = env
        .kubectl_ok(&[
            "get",
            "pods",
            "-n",
            "demo",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    let body = env.dir.path().join("eviction.json");
    let eviction = serde_json::json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "demo"}});
    std::fs::write(&body, eviction.to_string()).expect("write eviction body");
    let path = format!("/api/v1/namespaces/demo/pods/{pod}/eviction");
    let args = ["create", "--raw", path.as_str(), "-f", body.to_str().expect("utf-8 path")];

    let refused = env.kubectl(&args).await;
    assert!(!refused.status.success(), "the PDB refuses the first eviction");
    wait_for("the holder to surge on the follower's signal", Duration::from_secs(30), || {
        let up = surged(&env);
        async move { up.then_some(()) }
    })
    .await;
    env.wait_ready("demo", "web", 2).await;
    let evicted = env.kubectl(&args).await;
    assert!(evicted.status.success(), "the budget opened: {}", String::from_utf8_lossy(&evicted.stderr));
    wait_reverted(&env, "the revert to 1 replica").await;

    assert_eq!(env.lease_holder().as_deref(), Some(holder.as_str()), "the holder never changed");
    // Only the follower's webhook saw the eviction; it left the signal on the EAS.
    let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await.expect("the EAS exists");
    assert_eq!(
        eas["spec"]["lastEviction"]["podName"].as_str(),
        Some(pod.as_str()),
        "the follower recorded the signal: {eas}\n--- follower log ---\n{}",
        follower.log()
    );
    assert_eq!(scale_write_seqs(&env).len(), 2, "one surge, one revert");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_holder_that_wakes_after_losing_the_lease_writes_nothing() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let (first, standby) = holder_and_second(&mut env, "standby", &FLAGS).await;
    let node = one_protected_replica(&env).await;

    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=120s"]);
    wait_surged(&env).await;
    // Frozen (a long GC pause, a stalled node): its Lease runs out, the standby takes over.
    env.product.as_ref().expect("product runs").signal("STOP");
    env.route_webhook_to(standby.webhook_addr).await;
    let (ok, output) = drain.finish().await;
    assert!(ok, "drain failed: {output}\n--- standby log ---\n{}", standby.log());
    wait_standby_holds(&env).await;
    wait_reverted(&env, "the standby to revert to 1 replica").await;
    let writes_before = scale_write_seqs(&env);

    let woke_at = env.requests().last().map(|r| r.seq).unwrap_or_default();
    env.product.as_ref().expect("product runs").signal("CONT");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let log = env.product_log();
        // The log may carry ANSI styling between a field's name and its value.
        if log.lines().any(|l| l.contains("leadership changed") && l.trim_end().ends_with("false")) {
            break;
        }
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        assert!(
            std::time::Instant::now() < deadline,
            "the woken process never logged that it lost the Lease; last lines:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let late: Vec<_> = env
        .product_writes()
        .into_iter()
        .filter(|r| r.seq > woke_at && r.resource != "leases" && r.resource != "events")
        .collect();
    let holder = env.lease_holder().unwrap_or_default();
    assert!(holder.starts_with("standby_") && holder != first, "the standby keeps the Lease: {holder}");
    assert_eq!(writes_before.len(), 2, "one surge, one revert: {writes_before:?}");
    // Any product write after the wake-up must be the standby's own (it is the holder); the
    // Deployment must not be touched again.
    let touched: Vec<_> = late.iter().filter(|r| r.resource == "deployments").collect();
    assert!(touched.is_empty(), "no Deployment write after the old holder woke: {touched:?}");
    let d = env.deployment_now("demo", "web").expect("deployment");
    assert_eq!(d["spec"]["replicas"], 1, "still at the baseline");
}

/// A product write from the audit log: which replica, what, when the apiserver received it
/// and when it answered.
#[derive(Debug)]
struct Write {
    standby: bool,
    what: String,
    code: u64,
    received: Timestamp,
    answered: Timestamp,
}

fn product_writes(env: &Env) -> Vec<Write> {
    let at = |e: &Value, field: &str| e[field].as_str().and_then(|t| t.parse().ok()).expect("a timestamp");
    env.audit_events()
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter(|e| e["userAgent"].as_str().is_some_and(|a| a.starts_with(PRODUCT_AGENT)))
        .filter(|e| ["create", "update", "patch", "delete"].contains(&e["verb"].as_str().unwrap_or_default()))
        .map(|e| {
            let o = &e["objectRef"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            Write {
                standby: text(&e["userAgent"]).contains("(standby)"),
                what: format!(
                    "{} {}/{} {}/{}",
                    text(&e["verb"]),
                    text(&o["resource"]),
                    text(&o["subresource"]),
                    text(&o["namespace"]),
                    text(&o["name"])
                ),
                code: e["responseStatus"]["code"].as_u64().unwrap_or(0),
                received: at(e, "requestReceivedTimestamp"),
                answered: at(e, "stageTimestamp"),
            }
        })
        .collect()
}

impl Write {
    fn is_lease(&self) -> bool {
        self.what.contains(" leases/")
    }

    /// Writes only the Lease holder makes: all but the Lease itself and an eviction signal
    /// recorded on an EvictionAutoScaler, which any replica writes by design.
    fn holder_only(&self) -> bool {
        !self.is_lease() && !self.what.starts_with("patch evictionautoscalers/ ")
    }
}

/// SIGTERM to the holder while one of its surge writes is held up in a slow admission webhook
/// (which lets it through after 3 s) and ten other Deployments are being surged by a drain: the
/// holder refuses new writes, waits for that one to land, and only then releases the Lease; the
/// standby writes nothing a holder writes before it has taken the Lease. From the audit log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_hand_over_leaves_no_holder_write_outside_its_lease() {
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    let (_, standby) = holder_and_second(&mut env, "standby", &FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    // Eleven Deployments with their only pod on node-1, behind PDBs allowing no disruption;
    // every update of `slow` waits 3 s in a webhook that never answers, then lands.
    env.kubectl_ok(&["cordon", "node-2"]).await;
    let names: Vec<String> = (1..=10).map(|i| format!("app-{i:02}")).chain(["slow".to_owned()]).collect();
    let manifests: Vec<String> = names
        .iter()
        .flat_map(|n| {
            let mut d: Value = serde_json::from_str(&deployment("demo", n, 1, &[])).expect("a Deployment");
            if n == "slow" {
                d["metadata"]["labels"] = json!({"writes": "slow"});
            }
            [d.to_string(), pdb("demo", n, n, json!({"minAvailable": 1}))]
        })
        .collect();
    env.apply(&manifests.join("\n---\n")).await;
    for name in &names {
        env.wait_ready("demo", name, 1).await;
    }
    env.kubectl_ok(&["uncordon", "node-2"]).await;
    let slow =
        Stall { failure_policy: "Ignore", timeout_seconds: 3, operation: "UPDATE", only_product: true };
    let stalled =
        env.register_stalled_webhook("slow", json!({"matchLabels": {"writes": "slow"}}), slow).await;

    let drain = env.spawn_kubectl(&["drain", "node-1", "--ignore-daemonsets", "--timeout=120s"]);
    wait_for("the holder's surge of slow to be held in the webhook", Duration::from_secs(30), || {
        let called = stalled.handshakes() > 0;
        async move { called.then_some(()) }
    })
    .await;
    let sigterm = Timestamp::now();
    let mut product = env.product.take().expect("the first process runs");
    product.signal("TERM");
    env.route_webhook_to(standby.webhook_addr).await;
    let exited = wait_for("the first process to exit after SIGTERM", Duration::from_secs(30), || {
        let status = product.child.try_wait().ok().flatten();
        async move { status }
    })
    .await;
    let first_log = product.log();
    assert!(exited.success(), "the first process exits cleanly: {exited}\n{first_log}");
    assert!(first_log.contains("released the leader lease"), "it released the Lease:\n{first_log}");

    let (ok, output) = drain.finish().await;
    assert!(ok, "drain failed: {output}\n--- standby log ---\n{}", standby.log());
    wait_standby_holds(&env).await;
    wait_for("every Deployment back at 1 replica without surge annotations", Duration::from_secs(90), || {
        let done = names.iter().all(|n| reverted(&env, n));
        async move { done.then_some(()) }
    })
    .await;

    let writes = product_writes(&env);
    let held = writes
        .iter()
        .find(|w| !w.standby && w.what.starts_with("patch deployments/") && w.what.ends_with("demo/slow"))
        .expect("the first process's surge of slow");
    assert!(
        held.received < sigterm && sigterm < held.answered,
        "the surge of slow was in flight at the SIGTERM: {held:?}, SIGTERM {sigterm}"
    );
    let lease_writes =
        |standby: bool| writes.iter().filter(move |w| w.is_lease() && w.standby == standby && w.code < 300);
    let released = lease_writes(false).next_back().expect("the first process's Lease writes").received;
    let taken = lease_writes(true).next().expect("the standby's takeover").answered;
    let late: Vec<&Write> =
        writes.iter().filter(|w| !w.standby && w.holder_only() && w.answered > released).collect();
    assert!(late.is_empty(), "first-process writes after its Lease release at {released}: {late:#?}");
    assert_eq!(held.code, 200, "the write in flight was waited for and landed, not cut off: {held:?}");
    let early: Vec<&Write> =
        writes.iter().filter(|w| w.standby && w.holder_only() && w.received < taken).collect();
    assert!(early.is_empty(), "standby writes before its takeover at {taken}: {early:#?}");
    assert!(
        writes.iter().any(|w| w.standby && w.holder_only()),
        "the standby finished the job as the holder: {writes:#?}"
    );
}
