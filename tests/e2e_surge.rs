//! Surge on a blocked drain, end to end: real binary, the real control plane (tests/cluster/:
//! kube-apiserver, etcd, kube-controller-manager, kube-scheduler built from their Go modules,
//! kwok as the kubelets), real `kubectl drain` of the same version. The audit log is the
//! request log.

use e2e_support as support;

use std::time::Duration;

use serde_json::Value;
use support::metrics::metric_sum;
use support::scenario::{SURGE_KEYS, wait_state};
use support::{ClusterShape, Env, PRODUCT_AGENT, cluster, namespace, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_drain_completes_on_real_kubernetes_and_the_deployment_reverts() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let version: Value =
        serde_json::from_str(&env.kubectl_ok(&["version", "-o", "json"]).await).expect("JSON");
    assert_eq!(version["serverVersion"]["gitVersion"], cluster::kube_version().as_str(), "{version}");
    assert_eq!(version["clientVersion"]["gitVersion"], cluster::kube_version().as_str(), "{version}");

    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    wait_for("the PDB to allow 0 disruptions", Duration::from_secs(60), || async {
        let p = env.get(&["pdb", "-n", "demo", "web"]).await?;
        (p["status"]["observedGeneration"] == 1 && p["status"]["disruptionsAllowed"] == 0).then_some(())
    })
    .await;
    let history = env.record_deployment("demo", "web");

    let node = env.node_of("demo", "web").await;
    let (drained, output) = env
        .kubectl_combined(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=120s",
        ])
        .await;
    assert!(drained, "drain failed:\n{output}\n--- product log ---\n{}", env.product_log());
    assert!(!output.contains("Cannot evict pod"), "no eviction was refused: {output}");

    wait_state(&history, "the revert to 1 replica without surge annotations", Duration::from_secs(60), |s| {
        s.replicas == 1 && SURGE_KEYS.iter().all(|k| !s.annotations.contains_key(*k))
    })
    .await;
    let states = history.states();
    assert!(states.iter().all(|s| s.ready >= 1), "Ready replicas dropped below 1: {states:?}");
    assert_eq!(
        states.iter().map(|s| s.replicas).max(),
        Some(2),
        "surged by the one displaced pod: {states:?}"
    );

    // The audit log: one eviction, let through on its first request. It arrived while the
    // budget was closed (the webhook held it), and completed only after the disruption
    // controller had counted the Ready surge pod and opened the budget.
    let events = env.audit_events();
    let completed = |e: &&Value| e["stage"] == "ResponseComplete";
    let evictions: Vec<&Value> =
        events.iter().filter(completed).filter(|e| e["objectRef"]["subresource"] == "eviction").collect();
    let codes: Vec<&Value> = evictions.iter().map(|e| &e["responseStatus"]["code"]).collect();
    assert_eq!(codes, [201], "one eviction, passed on its first request (no 429)");
    let eviction = evictions[0];
    let product_writes: Vec<&Value> = events
        .iter()
        .filter(completed)
        .filter(|e| e["userAgent"].as_str().is_some_and(|a| a.starts_with(PRODUCT_AGENT)))
        .filter(|e| e["objectRef"]["resource"] == "deployments" && e["verb"] == "patch")
        .filter(|e| e["responseStatus"]["code"] != 409)
        .collect();
    let summary: Vec<String> = product_writes
        .iter()
        .map(|e| {
            format!(
                "{} {} {}",
                e["responseStatus"]["code"], e["requestObject"]["spec"], e["requestObject"]["metadata"]
            )
        })
        .collect();
    // A conflict (a guarded write that lost to the deployment controller) is re-read and
    // decided again; the writes that took effect are the surge and the revert.
    assert_eq!(env.deployment_write_codes("demo", "web"), [200, 200], "{summary:#?}");
    assert_eq!(product_writes.len(), 2, "one surge, one revert: {summary:#?}");
    let (surge, revert) = (product_writes[0], product_writes[1]);
    assert_eq!(surge["requestObject"]["spec"]["replicas"], 2, "{surge}");
    let at = |e: &Value, stage: &str| e[stage].as_str().unwrap_or_default().to_owned();
    let opened = events
        .iter()
        .filter(completed)
        .filter(|e| {
            e["objectRef"]["resource"] == "poddisruptionbudgets" && e["objectRef"]["subresource"] == "status"
        })
        .find(|e| {
            e["requestObject"]["status"]["disruptionsAllowed"] == 1
                && e["requestObject"]["status"]["currentHealthy"] == 2
        })
        .expect("the disruption controller opened the budget with the surge pod Ready");
    // The surge, decided from the caches at the drain edge, may reach the apiserver before
    // kubectl's eviction does; either way the eviction came while the budget was closed.
    assert!(
        at(eviction, "requestReceivedTimestamp") < at(opened, "stageTimestamp"),
        "held from before the budget opened"
    );
    assert!(
        at(opened, "stageTimestamp") <= at(eviction, "stageTimestamp"),
        "let through once the budget opened"
    );
    assert!(
        at(eviction, "stageTimestamp") < at(revert, "requestReceivedTimestamp"),
        "reverted after the drain"
    );
    let metrics = env.metrics().await;
    let held =
        metric_sum(&metrics, "eviction_autoscaler_webhook_evictions_held_total", &[r#"outcome="opened""#]);
    assert_eq!(held, 1.0, "the webhook held it until the budget opened");

    // The apiserver called the webhook over verified TLS for every eviction, before its PDB
    // check, and never failed open.
    let signals = metric_sum(&metrics, "eviction_autoscaler_webhook_signals_emitted_total", &[]);
    assert_eq!(signals, evictions.len() as f64, "one webhook call per eviction");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed open");
}
