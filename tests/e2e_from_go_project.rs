//! Switching from the Go project's Helm release to ours, as an operator would, on the real
//! control plane: its objects as its code leaves them in kube-system (which it always manages),
//! then our chart with its defaults (`pdb.create` off, kube-system only). Nothing of theirs is
//! lost, what differs is said, and their monitoring finds ours.

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::cluster::METRICS_SERVICE_PORT;
use support::{
    ClusterOptions, ClusterShape, Env, PRODUCT_ACCOUNT, deployment, http_get_on, repo_path, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const NS: &str = PRODUCT_ACCOUNT.0;
const SURGE: &str = "evictionSurgeReplicas";
const ORIGINAL: &str = "eviction-autoscaler.azure.com/original-min-replicas";
/// The ServiceMonitor the Go chart renders for release `eviction-autoscaler` (its
/// `templates/servicemonitor.yaml` with its default values).
const GO_SERVICE_MONITOR: &str = r#"{
  "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
  "metadata": {"name": "eviction-autoscaler-metrics-monitor", "namespace": "eviction-autoscaler"},
  "spec": {
    "endpoints": [{"path": "/metrics", "port": "http", "scheme": "http"}],
    "selector": {"matchLabels": {
      "app.kubernetes.io/name": "eviction-autoscaler",
      "app.kubernetes.io/instance": "eviction-autoscaler",
      "app.kubernetes.io/component": "metrics"}}
  }
}"#;

/// Two Deployments with the PDBs the Go project made (named like them), one surged 2 → 3 with
/// its EvictionAutoScaler holding the Go finalizers; then our chart with its defaults. Every PDB
/// survives as the same object and follows its Deployment, the surge reverts, and NOTES and the
/// log say that creation is off and which setting resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_chart_with_its_defaults_keeps_every_go_pdb_in_sync_and_reverts_its_surge() {
    let options = ClusterOptions { service_network: true, bare: true, ..ClusterOptions::default() };
    let env = Env::start_with(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }, options).await;
    env.create_release_namespace().await;
    // What `helm uninstall` of the Go release leaves when its CRD is kept (README, "Switching
    // from the Go project"): the CRD, still marked as that release's.
    let crd = std::fs::read_to_string(repo_path("deploy/base/crd.yaml")).expect("the CRD");
    let mut crd: Value = serde_saphyr::from_str(&crd).expect("CRD YAML");
    crd["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "Helm"});
    crd["metadata"]["annotations"] = json!({
        "meta.helm.sh/release-name": "eviction-autoscaler",
        "meta.helm.sh/release-namespace": "kube-system",
        "helm.sh/resource-policy": "keep",
    });
    env.apply(&crd.to_string()).await;
    env.apply(&deployment("kube-system", "web", 3, &[(SURGE, "3"), (ORIGINAL, "2")])).await;
    env.apply(&deployment("kube-system", "api", 2, &[])).await;
    let web_uid = env.apply_go_pdb("kube-system", "web", 2).await;
    let api_uid = env.apply_go_pdb("kube-system", "api", 2).await;
    env.apply_go_eas("kube-system", "web").await;
    env.wait_ready("kube-system", "web", 3).await;

    // The README's hand-over of the CRD to our release, then our chart.
    env.kubectl_ok(&[
        "annotate",
        "crd",
        "evictionautoscalers.eviction-autoscaler.azure.com",
        "--overwrite",
        "meta.helm.sh/release-name=eviction-autoscaler",
        "meta.helm.sh/release-namespace=eviction-autoscaler",
        "helm.sh/resource-policy-",
    ])
    .await;
    let release = env.helm_install(&[]).await;
    assert!(
        release.output.contains("Default PDB creation is off")
            && release.output.contains("The 2 default PDBs that exist are kept and kept in sync")
            && release.output.contains("--set controllerConfig.pdb.create=true"),
        "NOTES say what happens to the existing PDBs and how to resume creation:\n{}",
        release.output
    );
    let replica = env.start_release_replica(&release, &[]).await;

    wait_for("web back at 2 replicas, unannotated", 2 * Duration::from_secs(60), || {
        let d = env.deployment_now("kube-system", "web");
        async move {
            d.filter(|d| d["spec"]["replicas"] == 2 && d["metadata"]["annotations"][SURGE].is_null())
                .map(|_| ())
        }
    })
    .await;
    env.kubectl_ok(&["scale", "deployment", "api", "-n", "kube-system", "--replicas=3"]).await;
    env.wait_pdb("kube-system", "api", "api's PDB at minAvailable 3", |p| p["spec"]["minAvailable"] == 3)
        .await;
    for (name, uid, min_available) in [("web", &web_uid, 2), ("api", &api_uid, 3)] {
        let pdb = env.pdb_object("kube-system", name).expect("the Go project's PDB is kept");
        assert_eq!(&pdb["metadata"]["uid"], uid, "{name}: the same PDB, adopted in place");
        assert_eq!(pdb["spec"]["minAvailable"], min_available, "{name}: {pdb}");
    }
    let lifecycle: Vec<_> = env
        .product_writes_to("poddisruptionbudgets")
        .into_iter()
        .filter(|r| matches!(r.verb.as_str(), "create" | "delete"))
        .collect();
    assert_eq!(lifecycle, [], "no PDB created or deleted");
    let log = replica.log();
    assert!(
        log.contains("pdb.create is off: the default PDBs that exist are kept")
            && log.contains("controllerConfig.pdb.create=true"),
        "the log says it too:\n{log}"
    );
}

/// A ServiceMonitor written for the Go chart selects our metrics Service, and the port it names
/// serves /metrics, read through the Service as Prometheus would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_monitor_written_for_the_go_chart_scrapes_our_metrics() {
    let options = ClusterOptions { service_network: true, bare: true, ..ClusterOptions::default() };
    let env = Env::start_with(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }, options).await;
    env.apply_module_crds(&["monitoring.coreos.com_servicemonitors.yaml"]).await;
    env.create_release_namespace().await;
    let release = env.helm_install(&[]).await;
    let replica = env.start_release_replica(&release, &[]).await;
    env.apply(GO_SERVICE_MONITOR).await;

    // What the prometheus-operator does with it: the Services in its namespace whose labels
    // include its selector, and on each the port its endpoint names.
    let monitor = env
        .object("monitoring.coreos.com", "v1", "servicemonitors", NS, "eviction-autoscaler-metrics-monitor")
        .expect("the ServiceMonitor");
    let selector = monitor["spec"]["selector"]["matchLabels"].as_object().cloned().unwrap_or_default();
    let port_name = monitor["spec"]["endpoints"][0]["port"].clone();
    let services = env.get(&["services", "-n", NS]).await.expect("the Services");
    let selected: Vec<&Value> = services["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| selector.iter().all(|(k, v)| &s["metadata"]["labels"][k] == v))
        .collect();
    assert_eq!(selected.len(), 1, "one Service selected: {selected:?}");
    let service = selected[0];
    assert_eq!(service["metadata"]["name"], "eviction-autoscaler-metrics-service");
    let port = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == port_name)
        .unwrap_or_else(|| panic!("the Service has the port the monitor names: {service}"));
    assert_eq!(port["port"], json!(METRICS_SERVICE_PORT), "{port}");

    // The Service's targetPort is the container port the replica serves /metrics on: route the
    // Service address there, as kube-proxy would, and read through it.
    let containers = release
        .objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .map(|d| d["spec"]["template"]["spec"]["containers"][0]["ports"].clone())
        .expect("the Deployment");
    let target =
        containers.as_array().into_iter().flatten().find(|p| p["name"] == port["targetPort"]).unwrap_or_else(
            || panic!("targetPort {} names a container port: {containers}", port["targetPort"]),
        );
    assert_eq!(target["containerPort"], 8081, "the health and metrics port: {target}");
    let ip: std::net::IpAddr =
        service["spec"]["clusterIP"].as_str().and_then(|ip| ip.parse().ok()).expect("a ClusterIP");
    let address = std::net::SocketAddr::from((ip, METRICS_SERVICE_PORT));
    env.cluster.route_service(address, replica.health_addr);
    let stream = env.cluster.connect_service(address).expect("connect to the Service");
    stream.set_nonblocking(true).expect("non-blocking");
    let stream = tokio::net::TcpStream::from_std(stream).expect("a tokio stream");
    let (code, body) = http_get_on(stream, address, "/metrics").await.expect("an answer through the Service");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("eviction_autoscaler_webhook_requests_total"), "our metrics:\n{body}");
}
