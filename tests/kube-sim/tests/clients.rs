//! Clients nobody here wrote read what a running kube-sim cluster holds (list, get, watch) of
//! every kind it serves, without a decode error: kube-rs's typed API and the official Python
//! client, whose models reject a missing required field (a Node's `nodeInfo.bootID`, say).

mod common;

use std::fmt::Debug;
use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};
use futures::StreamExt as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, Namespace, Node, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
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
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: default}
subsets: [{addresses: [{ip: 10.1.0.1}], ports: [{port: 80}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
stringData: {password: hunter2}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: main, image: agent}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 0
  serviceName: db
  selector: {matchLabels: {app: db}}
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: main, image: db}]}}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: db-1, namespace: default}
revision: 1
data: {spec: {template: {}}}
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.2, namespace: default}
eventTime: \"2026-01-01T00:00:00.000000Z\"
reportingController: example.com/hand
reportingInstance: hand-1
action: Wrote
reason: Hello
note: written by hand
type: Normal
regarding: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guard}
webhooks:
- name: guard.example.com
  clientConfig: {url: \"https://127.0.0.1:9/guard\"}
  rules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: defaults}
webhooks:
- name: defaults.example.com
  clientConfig: {url: \"https://127.0.0.1:9/defaults\"}
  rules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: default}
rules: [{apiGroups: [\"\"], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: robot, namespace: default}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
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

/// Every kind the clients below read (`group/Kind`): each built-in kind kube-sim serves must be
/// here, so a kind added to kube-sim fails this file until both clients read it.
const READ: &[&str] = &[
    "/Node",
    "/Namespace",
    "/Pod",
    "/Event",
    "/Service",
    "/Endpoints",
    "/ConfigMap",
    "/Secret",
    "/ServiceAccount",
    "apps/Deployment",
    "apps/ReplicaSet",
    "apps/DaemonSet",
    "apps/StatefulSet",
    "apps/ControllerRevision",
    "policy/PodDisruptionBudget",
    "autoscaling/HorizontalPodAutoscaler",
    "coordination.k8s.io/Lease",
    "events.k8s.io/Event",
    "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
    "admissionregistration.k8s.io/MutatingWebhookConfiguration",
    "rbac.authorization.k8s.io/Role",
    "rbac.authorization.k8s.io/RoleBinding",
    "rbac.authorization.k8s.io/ClusterRole",
    "rbac.authorization.k8s.io/ClusterRoleBinding",
    "apiextensions.k8s.io/CustomResourceDefinition",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_kube_sim_serves_is_read_by_both_clients() {
    let sim = Sim::start().await;
    // The access reviews are create-only: nothing to list, get or watch.
    let served: Vec<String> = sim
        .cluster()
        .catalogue()
        .all()
        .iter()
        .filter(|r| r.builtin && !r.create_only)
        .map(|r| format!("{}/{}", r.group, r.kind))
        .collect();
    let unread: Vec<&String> = served.iter().filter(|k| !READ.contains(&k.as_str())).collect();
    assert!(unread.is_empty(), "kinds kube-sim serves that neither client test reads: {unread:?}");
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
    reads::<Event>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Service>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Endpoints>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ConfigMap>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Secret>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ServiceAccount>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Deployment>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ReplicaSet>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<DaemonSet>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<StatefulSet>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ControllerRevision>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<PodDisruptionBudget>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<HorizontalPodAutoscaler>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<Lease>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<EventsV1Event>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ValidatingWebhookConfiguration>(c, |_| Api::all(c.clone())).await;
    reads::<MutatingWebhookConfiguration>(c, |_| Api::all(c.clone())).await;
    reads::<Role>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<RoleBinding>(c, |n| Api::namespaced(c.clone(), &ns(n))).await;
    reads::<ClusterRole>(c, |_| Api::all(c.clone())).await;
    reads::<ClusterRoleBinding>(c, |_| Api::all(c.clone())).await;
    reads::<CustomResourceDefinition>(c, |_| Api::all(c.clone())).await;
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
    for kind in READ {
        assert!(stdout.contains(&format!("ok {kind}:")), "{kind} not read:\n{stdout}\n{stderr}");
    }
}
