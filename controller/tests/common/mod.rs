//! Harness for runtime tests: a kube-sim per test on an ephemeral port, objects seeded with
//! their status (kube-sim runs no cluster controllers), the controller run in-process.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use eviction_autoscaler_controller::Controller;
use eviction_autoscaler_shared::admission::{AdmissionQueue, admission_queue};
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_shared::health::Readiness;
use kube_sim::{RequestRecord, Server, ServerOptions};
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running kube-sim.
pub struct Sim {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

impl Sim {
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// With `behaviour`: nodes, controllers, the eviction subresource (kube-sim part 2).
    pub async fn start_with(behaviour: Option<kube_sim::ClusterBehaviour>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut options = ServerOptions::new(dir.path().join("kubeconfig"));
        options.behaviour = behaviour;
        let server = Server::start(options).await.expect("kube-sim starts");
        let sim = Self { server, dir };
        // The product's CRD is installed with it; the controller's caches need it.
        sim.seed(&eviction_autoscaler_shared::crd::crd_yaml()).await;
        sim
    }

    pub async fn client(&self) -> kube::Client {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(self.server.kubeconfig_path()).expect("kubeconfig parses");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .expect("kube config");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Creates or replaces objects in-process from YAML, status kept, no admission.
    pub async fn seed(&self, yaml: &str) {
        let objects = kube_sim::seed::parse_manifests(yaml).expect("manifests parse");
        kube_sim::seed::apply(self.server.cluster(), objects).await.expect("seed applies");
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.server.cluster().request_log().records()
    }
}

/// Test configuration: every namespace enabled, short clocks, no leader election.
pub fn config(cooldown: &str, max_hold: &str) -> Arc<Config> {
    let args = SettingsArgs {
        enabled_by_default: Some("true".into()),
        cooldown: Some(cooldown.into()),
        max_hold: Some(max_hold.into()),
        leader_elect: Some("false".into()),
        ..Default::default()
    };
    Arc::new(Config::resolve(&args, None).expect("valid test config"))
}

/// A controller running in the background.
pub struct Running {
    pub stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<Result<(), eviction_autoscaler_controller::Error>>,
    pub readiness: Readiness,
    /// Where the webhook hands evictions and admitted objects over (before the apiserver
    /// stores them).
    pub admissions: AdmissionQueue,
    /// The registry the controller's metrics were registered in.
    pub registry: Registry,
}

impl Running {
    /// The metrics as Prometheus text.
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("metrics encode");
        text
    }

    /// Stops it and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = tokio::time::timeout(Duration::from_secs(15), self.task).await;
        assert!(matches!(result, Ok(Ok(Ok(())))), "controller stops cleanly: {result:?}");
    }
}

pub async fn start_controller(sim: &Sim, config: Arc<Config>) -> Running {
    start_custom(sim, config, |c| c).await
}

/// Like [`start_controller`], with the controller adjusted by `adjust` (identity, lease timings).
pub async fn start_custom(
    sim: &Sim,
    config: Arc<Config>,
    adjust: impl FnOnce(Controller) -> Controller,
) -> Running {
    let client = sim.client().await;
    let readiness = Readiness::new();
    let mut registry = Registry::with_prefix("eviction_autoscaler");
    let controller = adjust(Controller::new(config, client, readiness.clone(), &mut registry));
    let (admissions, receiver) = admission_queue(64, 64);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(controller.run(receiver, async move {
        let _ = stopped.await;
    }));
    Running { stop: Some(stop), task, readiness, admissions, registry }
}

/// Polls `check` until it returns `Some`, or fails the test naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Namespace, a cordoned node, a Deployment `web` (app=web, `replicas`, extra annotations),
/// a `minAvailable: 1` PDB reporting no allowed disruption, and one Ready pod on the node.
pub fn drain_fixture(
    replicas: i32,
    annotations: &str,
    node_unschedulable: bool,
    pod_on_node: bool,
) -> String {
    let pod = if pod_on_node {
        r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: web-5d9c7-x1
  namespace: apps
  labels: {app: web, pod-template-hash: 5d9c7}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9c7, uid: 1c1b8a56-0000-4000-8000-000000000001, controller: true}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx}]
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
"#
    } else {
        ""
    };
    format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{name: apps}}
---
apiVersion: v1
kind: Node
metadata: {{name: n1}}
spec: {{unschedulable: {node_unschedulable}}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  annotations: {{{annotations}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: apps}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: web}}}}
status:
  disruptionsAllowed: 0
  currentHealthy: 1
  desiredHealthy: 1
  expectedPods: 1
  observedGeneration: 1
{pod}"#
    )
}
