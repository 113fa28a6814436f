//! Held evictions (ARCHITECTURE.md §4.8) on the real control plane: the webhook holds a
//! PDB-blocked eviction of a draining node's pod until the surge opens its budget. Every way a
//! hold can end — expired, shed, the product killed or stopped, a drainer with few API seats —
//! must leave the drain no worse than without the product (a frozen one, through the shipped
//! install: `tests/e2e_install.rs`). Times come from the apiserver's audit log.

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::metrics::metric_sum;
use support::scenario::{unsurged, wait_state};
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const LONG: Duration = Duration::from_secs(60);
const FLAGS: &[&str] = &["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"];

/// Creates `apply` (each a manifest) with every pod on node-1: the other nodes are tainted
/// (a taint that is not a drain taint) until `ready` Deployments are Ready.
async fn on_node_1(env: &Env, apply: &[String], ready: &[&str]) -> String {
    for node in ["node-2", "node-3"] {
        env.kubectl_ok(&["taint", "node", node, "placement=elsewhere:NoSchedule"]).await;
    }
    for manifest in apply {
        env.apply(manifest).await;
    }
    for name in ready {
        env.wait_ready("demo", name, 1).await;
    }
    for node in ["node-2", "node-3"] {
        env.kubectl_ok(&["taint", "node", node, "placement-"]).await;
    }
    "node-1".to_owned()
}

/// `count` single-replica Deployments `web-0…`, each pinned by a PDB `minAvailable: 1`, on node-1.
async fn pinned_on_node_1(env: &Env, count: usize) -> (String, Vec<String>) {
    env.apply(&namespace("demo", &[])).await;
    let names: Vec<String> = (0..count).map(|i| format!("web-{i}")).collect();
    let manifests: Vec<String> = names
        .iter()
        .flat_map(|n| [deployment("demo", n, 1, &[]), pdb("demo", n, n, json!({"minAvailable": 1}))])
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    (on_node_1(env, &manifests, &refs).await, names)
}

/// Completed evictions from the audit log: (pod, HTTP code, when it arrived, seconds it took).
fn evictions(env: &Env) -> Vec<(String, u64, jiff::Timestamp, f64)> {
    let at = |e: &Value, key: &str| e[key].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
    env.audit_events()
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["subresource"] == "eviction")
        .filter_map(|e| {
            let (received, done) = (at(e, "requestReceivedTimestamp")?, at(e, "stageTimestamp")?);
            let took = (done - received).total(jiff::Unit::Second).ok()?;
            let pod = e["objectRef"]["name"].as_str().unwrap_or_default().to_owned();
            Some((pod, e["responseStatus"]["code"].as_u64().unwrap_or(0), received, took))
        })
        .collect()
}

fn held(metrics: &str, outcome: &str) -> f64 {
    let label = format!(r#"outcome="{outcome}""#);
    metric_sum(metrics, "eviction_autoscaler_webhook_evictions_held_total", &[label.as_str()])
}

fn holding(metrics: &str) -> f64 {
    metric_sum(metrics, "eviction_autoscaler_webhook_evictions_holding", &[])
}

/// Waits until the product holds `count` evictions.
async fn wait_holding(env: &Env, count: f64) {
    wait_for(&format!("{count} held evictions"), LONG, || async move {
        (holding(&env.metrics().await) == count).then_some(())
    })
    .await;
}

fn drain_args(node: &str) -> [&str; 5] {
    ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_that_expires_is_refused_as_without_it_and_the_retry_is_held_again_until_room_appears() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&[FLAGS, &["--eviction-hold=2s"]].concat()).await;
    let (node, _) = pinned_on_node_1(&env, 1).await;

    // The kubelets frozen: the surge pod stays Pending, the budget cannot open.
    env.pause_kubelets();
    let drain = env.spawn_kubectl(&drain_args(&node));
    wait_for("two holds expired", LONG, || async {
        (held(&env.metrics().await, "expired") >= 2.0).then_some(())
    })
    .await;
    let message = env.wait_event("demo", "web-0", "EvictionHoldExpired", LONG).await;
    assert!(message.contains("1 pod(s) Pending"), "says what the budget waited for: {message}");
    env.resume_kubelets();
    let (drained, output) = drain.finish().await;
    assert!(drained, "{output}\n--- product log ---\n{}", env.product_log());

    let evictions = evictions(&env);
    let (refused, passed): (Vec<_>, Vec<_>) = evictions.iter().partition(|e| e.1 == 429);
    assert!(refused.len() >= 2, "{evictions:?}");
    for (_, _, _, took) in &refused {
        assert!(
            (1.9..3.5).contains(took),
            "each refused attempt was held --eviction-hold first: {evictions:?}"
        );
    }
    assert_eq!(passed.iter().map(|e| e.1).collect::<Vec<_>>(), [201], "then the retry passed: {evictions:?}");
    assert!(output.contains("Cannot evict pod"), "kubectl saw the refusals as without a hold: {output}");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no call outlived the apiserver's deadline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_product_fails_open_and_the_drain_goes_on_as_without_it() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(FLAGS).await;
    let (node, _) = pinned_on_node_1(&env, 1).await;
    let history = env.record_deployment("demo", "web-0");

    env.pause_kubelets();
    let drain = env.spawn_kubectl(&drain_args(&node));
    wait_holding(&env, 1.0).await;
    env.kill_product().await;
    wait_for("the held call failed open", LONG, || async {
        (!env.failed_open_calls().is_empty()).then_some(())
    })
    .await;
    // As without the product: refused, kubectl retries. Its replacement (a restarted pod)
    // takes over from the surge annotations and the cordon; the next retry passes.
    wait_for("a refusal while the product is gone", LONG, || async {
        evictions(&env).iter().any(|e| e.1 == 429).then_some(())
    })
    .await;
    env.resume_kubelets();
    env.start_product(FLAGS).await;
    let (drained, output) = drain.finish().await;
    assert!(drained, "{output}\n--- product log ---\n{}", env.product_log());
    let codes: Vec<u64> = evictions(&env).iter().map(|e| e.1).collect();
    assert_eq!(codes.last(), Some(&201), "{codes:?}");
    wait_state(&history, "the revert by the restarted product", LONG, |s| s.replicas == 1 && unsurged(s))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_held_evictions_at_once() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(FLAGS).await;
    let (node, _) = pinned_on_node_1(&env, 1).await;

    env.pause_kubelets();
    let drain = env.spawn_kubectl(&drain_args(&node));
    wait_holding(&env, 1.0).await;
    let mut product = env.product.take().expect("running");
    let term = jiff::Timestamp::now();
    product.signal("TERM");
    let status = wait_for("the product to exit", Duration::from_secs(20), || {
        let exited = product.child.try_wait().ok().flatten();
        async move { exited }
    })
    .await;
    assert!(status.success(), "{status}\n{}", product.log());

    let answered = evictions(&env).into_iter().find(|e| e.2 < term).expect("the held eviction is audited");
    let after_term = answered.2 + jiff::SignedDuration::from_secs_f64(answered.3);
    let waited = (after_term - term).total(jiff::Unit::Second).unwrap_or(f64::MAX);
    assert!(waited < 2.0, "answered at SIGTERM, not at the 10 s hold's end: {waited} s after it");
    assert_eq!(answered.1, 429, "refused by the still closed budget, as without a hold");
    env.resume_kubelets();
    drop(drain);
}

/// A person who may drain nodes (kubectl drain's requests, nothing else).
const DRAINER_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: drainer}
rules:
- {apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "patch", "update"]}
- {apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "delete"]}
- {apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"]}
- {apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: drainer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: drainer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: drainer}
"#;

/// A priority level of one share (3 of a default apiserver's 600 seats) for user `drainer`.
const SMALL_PRIORITY_LEVEL: &str = r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: drain-small}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 50}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: drain-small}
spec:
  priorityLevelConfiguration: {name: drain-small}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: drainer}}]
    resourceRules:
    - {verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}
    nonResourceRules:
    - {verbs: ["*"], nonResourceURLs: ["*"]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_by_a_user_in_a_small_priority_level_completes() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.apply(DRAINER_RBAC).await;
    env.apply(SMALL_PRIORITY_LEVEL).await;
    env.start_product(FLAGS).await;
    let (node, _) = pinned_on_node_1(&env, 4).await;

    // Four held evictions want more seats than the level has: the rest wait in its queues.
    let mut args = vec!["--as=drainer"];
    args.extend(drain_args(&node));
    let (drained, output) = env.kubectl_combined(&args).await;
    assert!(drained, "{output}\n--- product log ---\n{}", env.product_log());

    let evictions: Vec<Value> = env
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["subresource"] == "eviction")
        .collect();
    assert!(evictions.iter().all(|e| e["impersonatedUser"]["username"] == "drainer"), "{evictions:#?}");
    let passed = evictions.iter().filter(|e| e["responseStatus"]["code"] == 201).count();
    assert_eq!(passed, 4, "{evictions:#?}");
    assert!(held(&env.metrics().await, "opened") >= 1.0, "held in the small level");
    let apiserver = env.kubectl_ok(&["get", "--raw", "/metrics"]).await;
    let dispatched = metric_sum(
        &apiserver,
        "apiserver_flowcontrol_dispatched_requests_total",
        &[r#"priority_level="drain-small""#],
    );
    assert!(dispatched >= 4.0, "the drain ran in the small priority level: {dispatched}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_evictions_are_answered_at_once_and_counted() {
    const CAP: f64 = 12.0; // HELD_PER_REPLICA
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.apply(DRAINER_RBAC).await;
    env.start_product(FLAGS).await;
    let (node, _) = pinned_on_node_1(&env, 14).await;

    env.pause_kubelets();
    let mut args = vec!["--as=drainer"];
    args.extend(drain_args(&node));
    let drain = env.spawn_kubectl(&args);
    let most = std::cell::Cell::new(0.0_f64);
    wait_for("the cap reached and the rest shed", LONG, || async {
        let metrics = env.metrics().await;
        most.set(most.get().max(holding(&metrics)));
        (holding(&metrics) == CAP && held(&metrics, "shed") >= 2.0).then_some(())
    })
    .await;
    assert!(most.get() <= CAP, "never more than the cap held at once: {}", most.get());
    env.resume_kubelets();
    let (drained, output) = drain.finish().await;
    assert!(drained, "{output}");
    let shed = evictions(&env).into_iter().filter(|e| e.1 == 429 && e.3 < 1.0).count();
    assert!(shed >= 2, "the shed ones were answered at once and refused by their budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_no_surge_can_help_is_not_held() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    let locked =
        [deployment("demo", "locked", 1, &[]), pdb("demo", "locked", "locked", json!({"maxUnavailable": 0}))];
    let pinned =
        [deployment("demo", "pinned", 1, &[]), pdb("demo", "pinned", "pinned", json!({"minAvailable": 1}))];
    let node = on_node_1(&env, &[locked, pinned].concat(), &["locked", "pinned"]).await;
    env.wait_eas("demo", "locked").await;

    // A descheduler's eviction: its node is not draining.
    let pod = env.pods_on("demo", "pinned", &node).await.remove(0);
    let (evicted, output) = env.evict("demo", &pod).await;
    assert!(!evicted, "{output}");
    // A drain of a budget that scales with the replicas.
    let (drained, output) = env
        .kubectl_combined(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--pod-selector=app=locked",
            "--timeout=3s",
        ])
        .await;
    assert!(!drained, "no surge opens maxUnavailable: 0: {output}");

    let evictions = evictions(&env);
    assert!(evictions.len() >= 2, "{evictions:?}");
    for (pod, code, _, took) in &evictions {
        assert_eq!(*code, 429, "{pod}");
        assert!(*took < 1.0, "{pod} answered at once: {took} s");
    }
    let metrics = env.metrics().await;
    assert_eq!(
        metric_sum(&metrics, "eviction_autoscaler_webhook_eviction_hold_duration_seconds_count", &[]),
        0.0
    );
}
