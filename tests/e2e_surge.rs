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
    assert!(output.contains("Cannot evict pod as it would violate the pod's disruption budget"), "{output}");

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

    // The audit log, in order of arrival: the real 429, the surge, the eviction, the revert.
    let story: Vec<String> = env
        .requests()
        .into_iter()
        .filter_map(|r| match (r.subresource.as_str(), r.resource.as_str()) {
            ("eviction", _) => Some(format!("eviction {}", r.code)),
            ("", "deployments") if r.user_agent.starts_with(PRODUCT_AGENT) && r.is_write() => {
                Some(format!("product {} deployment {}", r.verb, r.code))
            }
            _ => None,
        })
        .collect();
    let first_429 = story.iter().position(|s| s == "eviction 429");
    let writes: Vec<usize> =
        story.iter().enumerate().filter(|(_, s)| s.starts_with("product ")).map(|(i, _)| i).collect();
    let evicted = story.iter().position(|s| s == "eviction 201");
    assert!(
        writes.len() == 2
            && first_429.is_some_and(|i| i < writes[0])
            && evicted.is_some_and(|i| writes[0] < i && i < writes[1])
            && story[writes[0]].ends_with(" 200")
            && story[writes[1]].ends_with(" 200"),
        "expected 429, surge, 201, revert: {story:#?}"
    );
    // The surge as written, from its audited request body.
    let surge = env
        .audit_events()
        .into_iter()
        .find(|e| {
            let by_product = e["userAgent"].as_str().is_some_and(|a| a.starts_with(PRODUCT_AGENT));
            by_product && e["objectRef"]["resource"] == "deployments" && e["verb"] == "patch"
        })
        .expect("the surge write is audited");
    assert_eq!(surge["requestObject"]["spec"]["replicas"], 2, "{surge}");

    // The apiserver called the webhook over verified TLS for every eviction, before its PDB
    // check, and never failed open.
    let evictions = story.iter().filter(|s| s.starts_with("eviction ")).count();
    let signals = metric_sum(&env.metrics().await, "eviction_autoscaler_webhook_signals_emitted_total", &[]);
    assert_eq!(signals, evictions as f64, "one webhook call per eviction: {story:#?}");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed open");
}
