//! The controller run in-process against a real apiserver: a bare one ([`ApiServer`]: etcd and
//! kube-apiserver, objects created with the status the cluster's controllers would have
//! written) for most behaviours, the whole control plane (`drain.rs`) where the scheduler,
//! kwok's kubelets and the disruption controller are the point.

use std::sync::Arc;
use std::time::Duration;

use e2e_support::apiserver::ApiServer;
use eviction_autoscaler_controller::Controller;
use eviction_autoscaler_shared::admission::{AdmissionQueue, admission_queue};
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_shared::health::Readiness;
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use e2e_support::Request;

/// A bare apiserver with the product's CRD installed.
pub async fn apiserver() -> ApiServer {
    with_crd(ApiServer::start().await).await
}

/// The whole control plane with `shape`'s nodes, and the product's CRD.
pub async fn cluster(shape: e2e_support::ClusterShape) -> ApiServer {
    with_crd(ApiServer::start_cluster(shape).await).await
}

async fn with_crd(apiserver: ApiServer) -> ApiServer {
    apiserver.create(&eviction_autoscaler_shared::crd::crd_yaml()).await;
    apiserver
}

/// Test configuration: every namespace enabled, short clocks, no leader election.
pub fn config(cooldown: &str, max_hold: &str) -> Arc<Config> {
    settings(SettingsArgs {
        cooldown: Some(cooldown.into()),
        max_hold: Some(max_hold.into()),
        ..SettingsArgs::default()
    })
}

/// `args` with every namespace enabled and no leader election unless `args` says otherwise.
pub fn settings(args: SettingsArgs) -> Arc<Config> {
    let args = SettingsArgs {
        enabled_by_default: args.enabled_by_default.or(Some("true".into())),
        leader_elect: args.leader_elect.or(Some("false".into())),
        ..args
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

    /// Waits until every cache has listed.
    pub async fn synced(&self) {
        eventually("caches synced", Duration::from_secs(30), || async {
            self.readiness.caches_synced().then_some(())
        })
        .await;
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

/// The controller on `apiserver`'s client for the code under test.
pub async fn start_controller(apiserver: &ApiServer, config: Arc<Config>) -> Running {
    start_custom(apiserver, config, |c| c).await
}

/// Like [`start_controller`], with the controller adjusted by `adjust` (identity, lease timings).
pub async fn start_custom(
    apiserver: &ApiServer,
    config: Arc<Config>,
    adjust: impl FnOnce(Controller) -> Controller,
) -> Running {
    let client = apiserver.client_under_test().await;
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

/// Writes (patch or update) the code under test sent to Deployments, whatever their answer.
pub fn deployment_writes(apiserver: &ApiServer) -> Vec<Request> {
    apiserver
        .requests_under_test()
        .into_iter()
        .filter(|r| r.resource == "deployments" && matches!(r.verb.as_str(), "patch" | "update"))
        .collect()
}

/// Namespace `apps`, node `n1` (cordoned when `node_unschedulable`), a Deployment `web`
/// (app=web, `replicas`, extra annotations), a `minAvailable: 1` PDB reporting no allowed
/// disruption, and, with `pod_on_node`, one Ready pod of web's ReplicaSet on the node.
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

impl Running {
    /// The value of metric line `name{labels}` (e.g. `eviction_autoscaler_evictions_seen_total{source="webhook"}`), 0 when absent.
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.metrics_text();
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// Waits until `count` signals are settled: each taken into account by a surge evaluation
    /// (after any write it made for it), or found to need none.
    pub async fn signals_settled(&self, count: u64) {
        let settled = "eviction_autoscaler_signals_settled_total";
        eventually("the signals settled", Duration::from_secs(30), || async {
            (self.metric(settled) >= count as f64).then_some(())
        })
        .await;
    }
}
