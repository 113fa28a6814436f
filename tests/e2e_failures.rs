//! When the surge cannot do its job, end to end: an admission policy forbidding the scale
//! (a ValidatingAdmissionPolicy answering 403), a cluster with no room for the surge pod, and
//! objects left behind by the Go project (Azure/eviction-autoscaler) that the product must bring
//! back to a clean state, a switch-over from it mid-surge included.

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::metrics::metric_sum;
use support::stalled::Stall;
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SURGE: &str = "evictionSurgeReplicas";
const ORIGINAL: &str = "eviction-autoscaler.azure.com/original-min-replicas";
const FLAGS: [&str; 3] = ["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"];

/// An admission policy (like AKS Deployment Safeguards) refusing any change of a Deployment's
/// replicas with 403: a ValidatingAdmissionPolicy. Returns once the apiserver enforces it (a
/// server-side dry-run scale is refused).
async fn forbid_scaling(env: &Env) {
    env.apply(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: fixed-replicas}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["deployments", "deployments/scale"]}
  validations:
  - expression: "object.spec.replicas == oldObject.spec.replicas"
    message: "policy: replicas are fixed here"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: fixed-replicas}
spec:
  policyName: fixed-replicas
  validationActions: [Deny]
"#,
    )
    .await;
    wait_for("the policy to refuse a dry-run scale", Duration::from_secs(30), || async {
        let (ok, output) = env
            .kubectl_combined(&[
                "scale",
                "deployment",
                "web",
                "-n",
                "demo",
                "--replicas=7",
                "--dry-run=server",
            ])
            .await;
        (!ok && output.contains("replicas are fixed here")).then_some(())
    })
    .await;
}

/// Deployment writes the apiserver refused with 403, whoever sent them (the dry-run probes of
/// [`forbid_scaling`] left out).
fn refused_scales(env: &Env) -> Vec<support::Request> {
    env.requests()
        .into_iter()
        .filter(|r| r.resource == "deployments" && r.code == 403 && !r.query.contains("dryRun"))
        .collect()
}

async fn one_protected_replica(env: &Env) -> String {
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    env.node_of("demo", "web").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_forbidding_the_scale_degrades_with_surge_forbidden_and_bounded_writes() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&FLAGS).await;
    let node = one_protected_replica(&env).await;
    env.expect_forbidden();
    forbid_scaling(&env).await;

    // Three rounds of refused evictions (kubectl retries every 5 s): a signal each time.
    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=12s"]);
    let message = env.wait_degraded("demo", "web", "SurgeForbidden").await;
    let (ok, output) = drain.finish().await;
    assert!(!ok, "the drain cannot finish while scaling is forbidden: {output}");
    assert!(!message.is_empty(), "the condition explains the refusal");

    let attempts: Vec<_> =
        env.product_writes_to("deployments").into_iter().filter(|r| r.method == "PATCH").collect();
    assert!((1..=2).contains(&attempts.len()), "a refused write is not retried in a loop: {attempts:?}");
    assert!(attempts.iter().all(|r| r.code == 403), "every attempt was refused: {attempts:?}");
    assert_eq!(refused_scales(&env), attempts, "only the product tried to scale");
    let d = env.deployment_now("demo", "web").expect("deployment");
    assert_eq!(d["spec"]["replicas"], 1, "replicas untouched");
    // Bookkeeping follows the signals, not a retry loop: per refused eviction spec.lastEviction
    // and one status (two evaluations close together do not both write it), plus creating the
    // EAS and its first statuses. A loop would write every few hundred ms.
    let signals = env.evictions().len();
    let eas_writes = env.product_writes_to("evictionautoscalers");
    assert!(eas_writes.len() <= 2 * signals + 4, "{signals} evictions, EAS writes: {eas_writes:?}");
}

/// A revert refused past max-hold is what the "surges held past their expected time" alert
/// watches: `surges_overdue` goes to 1 (the Lease holder also reports `leader 1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_refused_past_max_hold_shows_as_an_overdue_surge() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&[
        "--actioned-namespaces=demo",
        "--cooldown=1s",
        "--signal-window=10s",
        "--max-hold=3s",
    ])
    .await;
    let node = one_protected_replica(&env).await;
    let history = env.record_deployment("demo", "web");
    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"]);
    history.wait_seen("the surge to 2", Duration::from_secs(30), |s| s.replicas == 2).await;
    // From now on every change of replicas is refused, the revert included.
    env.expect_forbidden();
    forbid_scaling(&env).await;
    let (ok, output) = drain.finish().await;
    assert!(ok, "the drain finishes on the surged replica: {output}");

    let overdue = wait_for("surges_overdue 1", Duration::from_secs(30), || async {
        let text = env.metrics().await;
        (metric_sum(&text, "eviction_autoscaler_surges_overdue", &[]) == 1.0).then_some(text)
    })
    .await;
    assert_eq!(metric_sum(&overdue, "eviction_autoscaler_leader", &[]), 1.0, "{overdue}");
    let d = env.deployment_now("demo", "web").expect("deployment");
    assert_eq!(d["spec"]["replicas"], 2, "the refused revert left the surge up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_into_a_full_cluster_says_why_and_reverts_after_uncordon() {
    // Two nodes with room for one pod each: the surge pod has nowhere to go.
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 1 }).await;
    env.start_product(&FLAGS).await;
    let node = one_protected_replica(&env).await;
    env.apply(&deployment("demo", "filler", 1, &[])).await;
    env.wait_ready("demo", "filler", 1).await;
    let history = env.record_deployment("demo", "web");

    let (ok, output) = env.kubectl_combined(&["drain", &node, "--ignore-daemonsets", "--timeout=6s"]).await;
    assert!(!ok, "the drain cannot finish without room: {output}");
    let message = env.wait_degraded("demo", "web", "SurgeUnschedulable").await;
    assert!(message.contains("Pending"), "the condition says the surge pod is Pending: {message}");
    // The held eviction was let go once the surge pod proved unschedulable, not at the hold's end.
    let metrics = env.metrics().await;
    let held = |outcome: &str| {
        let label = format!(r#"outcome="{outcome}""#);
        metric_sum(&metrics, "eviction_autoscaler_webhook_evictions_held_total", &[label.as_str()])
    };
    assert_eq!((held("stopped"), held("expired")), (1.0, 0.0), "{metrics}");
    let events =
        wait_for("a SurgeUnschedulable Event on the Deployment", Duration::from_secs(30), || async {
            let events = env.events("demo").await;
            events
                .iter()
                .any(|(reason, object, _)| reason == "SurgeUnschedulable" && object == "web")
                .then_some(events)
        })
        .await;
    assert!(
        events.iter().any(|(reason, _, _)| reason == "SurgeStarted"),
        "the surge was announced: {events:?}"
    );

    env.kubectl_ok(&["uncordon", &node]).await;
    wait_for("the revert to the 1-replica baseline", Duration::from_secs(60), || {
        let d = env.deployment_now("demo", "web");
        async move {
            d.filter(|d| d["spec"]["replicas"] == 1 && d["metadata"]["annotations"][SURGE].is_null())
                .map(|_| ())
        }
    })
    .await;
    env.wait_ready("demo", "web", 1).await;
    // Once reverted, the EAS no longer claims the surge is stuck.
    let cleared = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let degraded = env.eas_condition("demo", "web", "Degraded").await;
            if degraded.is_none_or(|c| c.status != "True") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
    .await;
    let eas = env.get(&["evictionautoscalers", "-n", "demo", "web"]).await;
    assert!(cleared.is_ok(), "Degraded cleared after the revert: {eas:?}");
    let states = history.states();
    assert_eq!(states.iter().map(|s| s.replicas).max(), Some(2), "one surge pod asked for: {states:?}");
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_left_by_the_go_project_end_in_the_clean_state() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.apply(&namespace("demo", &[])).await;
    // A Deployment surged from 2 to 3 by the Go controller, which then went away.
    env.apply(&deployment("demo", "web", 3, &[(SURGE, "3"), (ORIGINAL, "2")])).await;
    // Its PDB, pinned by the Go floor feature: originally `maxUnavailable: 1`.
    let mut pinned: Value =
        serde_json::from_str(&pdb("demo", "web", "web", json!({"minAvailable": 1}))).expect("pdb JSON");
    pinned["metadata"]["annotations"] = json!({
        "eviction-autoscaler.azure.com/original-pdb-spec": "{\"maxUnavailable\":1}",
        "eviction-autoscaler.azure.com/pinned-floor": "1",
    });
    env.apply(&pinned.to_string()).await;
    // Its EvictionAutoScaler, owned by the PDB, with both Go finalizers.
    let pdb_uid = env.apply_go_eas("demo", "web").await;
    env.wait_ready("demo", "web", 3).await;

    env.start_product(&FLAGS).await;
    wait_for("the Deployment back at its baseline of 2, unannotated", Duration::from_secs(60), || {
        let d = env.deployment_now("demo", "web");
        async move {
            d.filter(|d| {
                d["spec"]["replicas"] == 2
                    && d["metadata"]["annotations"][SURGE].is_null()
                    && d["metadata"]["annotations"][ORIGINAL].is_null()
            })
            .map(|_| ())
        }
    })
    .await;
    wait_go_finalizers_released(&env).await;
    let restored = wait_for("the PDB restored to maxUnavailable: 1", Duration::from_secs(60), || {
        let p = env.object("policy", "v1", "poddisruptionbudgets", "demo", "web");
        async move {
            p.filter(|p| {
                let annotations = p["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
                p["spec"]["maxUnavailable"] == 1
                    && p["spec"]["minAvailable"].is_null()
                    && !annotations
                        .keys()
                        .any(|k| k.ends_with("original-pdb-spec") || k.ends_with("pinned-floor"))
            })
        }
    })
    .await;
    assert_eq!(restored["metadata"]["uid"], pdb_uid, "the same PDB, restored in place");
    env.wait_ready("demo", "web", 2).await;
}

/// Waits until EAS `demo/web` holds none of the Go project's finalizers.
async fn wait_go_finalizers_released(env: &Env) {
    wait_for("the Go finalizers released", Duration::from_secs(60), || {
        let eas = env.object("eviction-autoscaler.azure.com", "v1", "evictionautoscalers", "demo", "web");
        async move {
            eas.filter(|e| {
                e["metadata"]["finalizers"].as_array().is_none_or(|f| {
                    f.iter().all(|f| {
                        !f.as_str().unwrap_or_default().starts_with("eviction-autoscaler.azure.com/")
                    })
                })
            })
        }
    })
    .await;
}

/// Waits until Deployment `demo/name` has `replicas` and no surge annotations.
async fn wait_clean(env: &Env, name: &str, replicas: i64) {
    wait_for(
        &format!("{name} at {replicas} replicas without surge annotations"),
        Duration::from_secs(60),
        || {
            let d = env.deployment_now("demo", name);
            async move {
                d.filter(|d| {
                    d["spec"]["replicas"] == replicas
                        && d["metadata"]["annotations"][SURGE].is_null()
                        && d["metadata"]["annotations"][ORIGINAL].is_null()
                })
                .map(|_| ())
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_leftovers_edited_autoscaled_zero_baseline_or_terminating_end_clean_without_data_loss() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.apply(&namespace("demo", &[])).await;
    // Surged to 3 by the Go controller, then scaled to 5 by a user: the user's 5 stays.
    env.apply(&deployment("demo", "edited", 5, &[(SURGE, "3"), (ORIGINAL, "2")])).await;
    env.apply(&pdb("demo", "edited", "edited", json!({"minAvailable": 1}))).await;
    // Surged through its HPA (minimum 1 raised to 2).
    env.apply(&deployment("demo", "auto", 2, &[])).await;
    env.apply(&pdb("demo", "auto", "auto", json!({"minAvailable": 1}))).await;
    env.apply(
        &json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "auto", "namespace": "demo", "annotations": {SURGE: "2", ORIGINAL: "1"}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "auto"},
                "minReplicas": 2, "maxReplicas": 4}
        })
        .to_string(),
    )
    .await;
    // A recorded baseline of 0 (the Go bug fixed in its #181): never a reason to scale to 0.
    env.apply(&deployment("demo", "zero", 2, &[(SURGE, "2"), (ORIGINAL, "0")])).await;
    env.apply(&pdb("demo", "zero", "zero", json!({"minAvailable": 1}))).await;
    // An EvictionAutoScaler being deleted, kept Terminating by the Go finalizers.
    let eas = json!({
        "apiVersion": "eviction-autoscaler.azure.com/v1", "kind": "EvictionAutoScaler",
        "metadata": {"name": "edited", "namespace": "demo",
            "finalizers": ["eviction-autoscaler.azure.com/surge-revert", "eviction-autoscaler.azure.com/pdb-floor"]},
        "spec": {"targetName": "edited", "targetKind": "deployment"}
    });
    env.apply(&eas.to_string()).await;
    env.kubectl_ok(&["delete", "evictionautoscaler", "-n", "demo", "edited", "--wait=false"]).await;
    let terminating = env
        .object("eviction-autoscaler.azure.com", "v1", "evictionautoscalers", "demo", "edited")
        .expect("the EAS is kept by its finalizers");
    assert!(terminating["metadata"]["deletionTimestamp"].is_string(), "Terminating: {terminating}");
    let zero_history = env.record_deployment("demo", "zero");

    env.start_product(&FLAGS).await;
    wait_clean(&env, "edited", 5).await;
    wait_clean(&env, "zero", 2).await;
    wait_for("the HPA minimum restored to 1 without surge annotations", Duration::from_secs(60), || {
        let h = env.object("autoscaling", "v2", "horizontalpodautoscalers", "demo", "auto");
        async move {
            h.filter(|h| {
                h["spec"]["minReplicas"] == 1
                    && h["metadata"]["annotations"][SURGE].is_null()
                    && h["metadata"]["annotations"][ORIGINAL].is_null()
            })
        }
    })
    .await;
    let old_uid = terminating["metadata"]["uid"].clone();
    wait_for("the Terminating EAS released and gone", Duration::from_secs(60), || {
        let eas = env.object("eviction-autoscaler.azure.com", "v1", "evictionautoscalers", "demo", "edited");
        let gone = eas.is_none_or(|e| e["metadata"]["uid"] != old_uid);
        async move { gone.then_some(()) }
    })
    .await;

    let zero_states = zero_history.states();
    assert!(zero_states.iter().all(|s| s.replicas >= 2), "never scaled below 2: {zero_states:?}");
    let writes = env.acknowledged_writes_to("deployments");
    assert!(writes.len() <= 2, "only annotation clean-ups on edited and zero: {writes:?}");
}

/// The switch-over from the Go project in the middle of a surge, as its code leaves the objects
/// (its module is not served here, so it cannot be run: tests/cluster/README.md): a Deployment
/// surged from 2 to 3, the PDB its DeploymentToPDB controller created (named like the
/// Deployment, owned by it), and that PDB's EvictionAutoScaler holding both Go finalizers.
/// Ours reverts the surge, releases the finalizers, and adopts the PDB in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_over_from_the_go_project_mid_surge_adopts_its_pdb_without_recreating_it() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment("demo", "web", 3, &[(SURGE, "3"), (ORIGINAL, "2")])).await;
    env.apply_go_pdb("demo", "web", 2).await;
    let pdb_uid = env.apply_go_eas("demo", "web").await;
    env.wait_ready("demo", "web", 3).await;

    let mut flags = FLAGS.to_vec();
    flags.push("--pdb-create=true");
    env.start_product(&flags).await;
    wait_clean(&env, "web", 2).await;
    let crd = env.get(&["crd", support::pdbs::CRD]).await.expect("the CRD");
    let adopted = wait_for("the Go PDB owned by the CRD", Duration::from_secs(60), || {
        let p = env.object("policy", "v1", "poddisruptionbudgets", "demo", "web");
        let crd_uid = crd["metadata"]["uid"].clone();
        async move {
            p.filter(|p| {
                let owners = p["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
                owners.len() == 1 && owners[0]["uid"] == crd_uid
            })
        }
    })
    .await;
    assert_eq!(adopted["metadata"]["uid"], pdb_uid, "the same PDB, adopted in place: {adopted}");
    assert_eq!(adopted["spec"]["minAvailable"], 2, "{adopted}");
    wait_go_finalizers_released(&env).await;
    let pdb_lifecycle: Vec<_> = env
        .product_writes_to("poddisruptionbudgets")
        .into_iter()
        .filter(|r| r.namespace == "demo" && matches!(r.verb.as_str(), "create" | "delete"))
        .collect();
    assert_eq!(pdb_lifecycle, [], "no PDB created or deleted");
}

/// One Deployment whose writes hang (a validating webhook on it that never answers,
/// `failurePolicy: Fail`, `timeoutSeconds: 30`, while a surge of it waits to be reverted) holds
/// back none of the others: a drain begun while its revert hangs surges the 20 others at once,
/// all before that write is given up — well before the apiserver's 30 s — and reverts them
/// after the cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_write_on_one_deployment_holds_back_no_other_surge_or_revert() {
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    env.start_product(&FLAGS).await;
    env.apply(&namespace("demo", &[])).await;
    // 20 Deployments with their only pod on node-1, behind a PDB allowing no disruption.
    env.kubectl_ok(&["cordon", "node-2"]).await;
    let others: Vec<String> = (1..=20).map(|i| format!("app-{i:02}")).collect();
    let manifests: Vec<String> = others
        .iter()
        .flat_map(|n| [deployment("demo", n, 1, &[]), pdb("demo", n, n, json!({"minAvailable": 1}))])
        .collect();
    env.apply(&manifests.join("\n---\n")).await;
    for name in &others {
        env.wait_ready("demo", name, 1).await;
    }
    env.kubectl_ok(&["uncordon", "node-2"]).await;
    // And one left surged (its revert due), every write to which hangs.
    let stalled = env
        .register_stalled_webhook("hang", json!({"matchLabels": {"writes": "hang"}}), Stall::REFUSE_AFTER_30S)
        .await;
    let mut stuck: Value =
        serde_json::from_str(&deployment("demo", "stuck", 2, &[(SURGE, "2"), (ORIGINAL, "1")]))
            .expect("a Deployment");
    stuck["metadata"]["labels"] = json!({"writes": "hang"});
    env.apply(&stuck.to_string()).await;
    wait_for("the revert of stuck to hang in the webhook", Duration::from_secs(60), || {
        let called = stalled.handshakes() > 0;
        async move { called.then_some(()) }
    })
    .await;

    let drained = jiff::Timestamp::now();
    env.drain("node-1").await;
    let writes_to = |name: &str| -> Vec<jiff::Timestamp> {
        env.requests()
            .iter()
            .filter(|r| r.user_agent.starts_with(support::PRODUCT_AGENT) && r.verb == "patch")
            .filter(|r| r.resource == "deployments" && r.name == name && r.succeeded())
            .map(|r| r.timestamp.parse().expect("a timestamp"))
            .collect()
    };
    wait_for("every other Deployment reverted", Duration::from_secs(60), || async {
        others.iter().all(|n| writes_to(n).len() >= 2).then_some(())
    })
    .await;
    for name in &others {
        let writes = writes_to(name);
        assert_eq!(writes.len(), 2, "{name}: one surge, one revert: {writes:?}");
        let surged = writes[0].duration_since(drained).as_secs_f64();
        assert!(surged < 10.0, "{name} surged {surged:.1} s after the drain began: {writes:?}");
    }
    let reverts = others.iter().map(|n| writes_to(n)[1]).max().expect("reverts");
    let settle = reverts.duration_since(drained).as_secs_f64();
    assert!(settle < 30.0, "the last revert came {settle:.1} s after the drain began");
    assert!(writes_to("stuck").is_empty(), "no write to stuck went through");
    // The hung revert, in flight since before the drain, was given up after 20 s — after every
    // other surge had gone through, and before the apiserver's own 30 s.
    let given_up = wait_for("stuck's revert given up", Duration::from_secs(60), || async {
        env.product_log()
            .lines()
            .filter(|l| l.contains("deployment=stuck") && l.contains("took longer than 20s"))
            .find_map(|l| l.split_whitespace().next()?.parse::<jiff::Timestamp>().ok())
    })
    .await;
    let surges = others.iter().map(|n| writes_to(n)[0]).max().expect("surges");
    assert!(
        surges < given_up,
        "every other surge ({surges}) came while stuck's write hung (until {given_up})"
    );
    // The write began before the drain did: given up at most 20 s after that (1 s of slack
    // for the log's clock), where the apiserver would wait 30 s.
    let hung = given_up.duration_since(drained).as_secs_f64();
    assert!(hung < 21.0, "given up {hung:.1} s after the drain began");
}
