//! Clients nobody here wrote read what a running kube-sim cluster holds (list, get, watch)
//! without a decode error: kube-rs's typed API and the official Python client, whose models
//! reject a missing required field (a Node's `nodeInfo.bootID`, say).

mod common;

use std::fmt::Debug;
use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt as _};
use serde::de::DeserializeOwned;

const OBJECTS: &str = "
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 4
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: holder, namespace: default}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: default}
---
apiVersion: v1
kind: Event
metadata: {name: web.1, namespace: default}
involvedObject: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}
reason: Hello
message: written by hand
type: Normal
";

/// Lists every object of `K`, gets the first by name (through `at(namespace)`), and takes one
/// watch event.
async fn reads<K>(client: &kube::Client, at: impl Fn(Option<&str>) -> Api<K>)
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&Default::default()).to_string();
    let api: Api<K> = Api::all_with(client.clone(), &Default::default());
    let list = api.list(&ListParams::default()).await.unwrap_or_else(|e| panic!("list {kind}: {e}"));
    let first = list.items.first().unwrap_or_else(|| panic!("no {kind} to read"));
    at(first.namespace().as_deref())
        .get(&first.name_any())
        .await
        .unwrap_or_else(|e| panic!("get {kind}: {e}"));
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
    match tokio::time::timeout(Duration::from_secs(10), events.next()).await {
        Ok(Some(Ok(_))) => {}
        other => panic!("watch {kind}: {other:?}"),
    }
}

/// A cluster holding a rolled-out Deployment and one object of each kind in OBJECTS.
async fn cluster_with_objects() -> Sim {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 2)).await;
    sim.apply("objects.yaml", OBJECTS).await;
    sim.wait_until("web rolled out", Duration::from_secs(30), |s| {
        s.get("apps/v1", "deployments", Some("default"), "web")["status"]["availableReplicas"] == 2
    })
    .await;
    sim
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_typed_clients_list_get_and_watch_every_kind_the_cluster_fills() {
    let sim = cluster_with_objects().await;
    let client = sim.client().await;
    let c = &client;
    let ns = |namespace: Option<&str>| namespace.expect("a namespaced object").to_owned();
    reads::<Node>(c, |_| Api::all(c.clone())).await;
    reads::<Namespace>(c, |_| Api::all(c.clone())).await;
    reads::<Pod>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ReplicaSet>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Deployment>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<PodDisruptionBudget>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<HorizontalPodAutoscaler>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Lease>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Event>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ServiceAccount>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
}

/// The pinned client (python-requirements.txt) must be installed: `.ci/run` installs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_lists_reads_and_watches_every_kind_the_cluster_fills() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let installed = std::process::Command::new("python3").args(["-c", "import kubernetes"]).output();
    assert!(
        installed.is_ok_and(|o| o.status.success()),
        "the official Kubernetes Python client is missing: python3 -m pip install -r {}",
        here.join("python-requirements.txt").display()
    );
    let sim = cluster_with_objects().await;
    let output = tokio::process::Command::new("python3")
        .arg(here.join("tests/python_client.py"))
        .env("KUBECONFIG", sim.kubeconfig())
        .env("HOME", sim.dir.path())
        .output()
        .await
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python client failed:\n{stdout}\n{stderr}");
    for kind in [
        "Node",
        "Namespace",
        "Pod",
        "ServiceAccount",
        "Event",
        "ReplicaSet",
        "Deployment",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "Lease",
    ] {
        assert!(stdout.contains(&format!("ok {kind}:")), "{kind} not read:\n{stdout}\n{stderr}");
    }
}
