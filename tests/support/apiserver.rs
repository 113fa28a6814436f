//! A bare apiserver for component tests: etcd and kube-apiserver of the real control plane
//! (`tests/cluster/`) and nothing else — no controllers, no scheduler, no kubelets, no nodes. A
//! test creates every object as those would have left it, status included
//! ([`ApiServer::create`]), runs the code under test in-process with
//! [`ApiServer::client_under_test`], and reads what that code sent from the audit log
//! ([`ApiServer::requests_under_test`]).
//!
//! One per test, like the end-to-end clusters: the controller watches the whole cluster (every
//! node and namespace, and it holds a surge while *any* node drains), so two tests on one
//! apiserver would steer each other. A start takes about three seconds (`tests/cluster/README.md`).

use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::{Value, json};

use super::Request;
use super::cluster::{ClusterOptions, ClusterShape, ControlPlane};

/// The `User-Agent` of [`ApiServer::client_under_test`]: how the audit log tells the code under
/// test from the test's own requests.
pub const UNDER_TEST: &str = "code-under-test";

/// A running etcd and kube-apiserver; stopped when dropped.
pub struct ApiServer {
    plane: ControlPlane,
    /// No controllers: objects they would make (a Namespace's ServiceAccount) are made here.
    bare: bool,
}

impl ApiServer {
    /// Starts etcd and the apiserver.
    pub async fn start() -> ApiServer {
        let options = ClusterOptions { apiserver_only: true, ..ClusterOptions::default() };
        ApiServer::start_with(ClusterShape { nodes: 0, pods_per_node: 0 }, options).await
    }

    /// [`ApiServer::start`] with the whole control plane (controllers, scheduler, kwok's
    /// kubelets on `shape`'s nodes): for behaviour those make, such as a drain's evictions.
    pub async fn start_cluster(shape: ClusterShape) -> ApiServer {
        ApiServer::start_with(shape, ClusterOptions::default()).await
    }

    async fn start_with(shape: ClusterShape, options: ClusterOptions) -> ApiServer {
        let bare = options.apiserver_only;
        let plane = tokio::task::spawn_blocking(move || ControlPlane::start_with(&shape, &options))
            .await
            .expect("the apiserver start does not panic");
        ApiServer { plane, bare }
    }

    /// The control plane (its kubeconfig, logs, kubectl).
    pub fn plane(&self) -> &ControlPlane {
        &self.plane
    }

    /// A client of the admin user, for the test's own requests.
    pub async fn client(&self) -> kube::Client {
        self.client_with_agent("component-test").await
    }

    /// A client of the admin user for the code under test: its requests carry
    /// [`UNDER_TEST`] as their `User-Agent`.
    pub async fn client_under_test(&self) -> kube::Client {
        self.client_with_agent(UNDER_TEST).await
    }

    /// A client for the code under test that authenticates as ServiceAccount
    /// `namespace/account` (which must exist), under the apiserver's RBAC.
    pub async fn client_under_test_as(&self, namespace: &str, account: &str) -> kube::Client {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kubeconfig");
        self.plane.write_service_account_kubeconfig(namespace, account, &path);
        client_from(&path, UNDER_TEST).await
    }

    async fn client_with_agent(&self, agent: &str) -> kube::Client {
        client_from(&self.plane.kubeconfig_path(), agent).await
    }

    /// Creates the objects of `manifests` (YAML documents, `---` between them) in order, as a
    /// cluster's controllers would have left them: each object's `status` is written through
    /// its status subresource after the create, a Namespace gets its `default` ServiceAccount
    /// (what a Pod needs to be admitted; on a bare apiserver, where no controller makes it),
    /// and a CustomResourceDefinition is waited for until its resources are served.
    pub async fn create(&self, manifests: &str) {
        let client = self.client().await;
        for object in parse(manifests) {
            let kind = object["kind"].as_str().unwrap_or_default().to_owned();
            let created = create_one(&client, object).await;
            match kind.as_str() {
                "Namespace" if self.bare => {
                    let name = created.metadata.name.clone().unwrap_or_default();
                    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": name}});
                    create_one(&client, account).await;
                }
                "CustomResourceDefinition" => wait_served(&client, &created).await,
                _ => {}
            }
        }
    }

    /// Every request the apiserver has answered (its audit log), in order of arrival.
    pub fn requests(&self) -> Vec<Request> {
        self.plane.requests()
    }

    /// The requests the code under test sent ([`ApiServer::client_under_test`]), in order.
    pub fn requests_under_test(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.user_agent == UNDER_TEST).collect()
    }
}

/// The objects of `manifests`; `kind: List` documents are flattened.
fn parse(manifests: &str) -> Vec<Value> {
    let options = serde_saphyr::options! { budget: None };
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(manifests, options)
        .unwrap_or_else(|e| panic!("manifests are YAML: {e}\n{manifests}"));
    let mut objects = Vec::new();
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        match doc["items"].as_array() {
            Some(items) if doc["kind"] == "List" => objects.extend(items.iter().cloned()),
            _ => objects.push(doc),
        }
    }
    objects
}

/// Creates `object`, then writes its `status` (when it has one) through the status subresource.
async fn create_one(client: &kube::Client, object: Value) -> DynamicObject {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (api_version, kind, name) = (text("/apiVersion"), text("/kind"), text("/metadata/name"));
    let namespace =
        object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_owned();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("the apiserver serves {api_version} {kind}: {e}"));
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), &namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let status = object.get("status").cloned();
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create {kind} {namespace}/{name}: {e}"));
    match status.filter(|s| s.as_object().is_some_and(|s| !s.is_empty())) {
        Some(status) => api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
            .await
            .unwrap_or_else(|e| panic!("write the status of {kind} {namespace}/{name}: {e}")),
        None => created,
    }
}

/// Waits until the CRD's resources are served: `Established`, and a list of them answers.
async fn wait_served(client: &kube::Client, crd: &DynamicObject) {
    let group = crd.data["spec"]["group"].as_str().unwrap_or_default().to_owned();
    let plural = crd.data["spec"]["names"]["plural"].as_str().unwrap_or_default().to_owned();
    let version = crd.data["spec"]["versions"][0]["name"].as_str().unwrap_or_default().to_owned();
    let path = format!("/apis/{group}/{version}/{plural}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let request = http::Request::get(&path).body(Vec::new()).expect("request");
        if client.request::<Value>(request).await.is_ok() {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{path} was never served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client from the kubeconfig at `path`, sending `agent` as its `User-Agent`.
/// A client from the kubeconfig at `path`, sending `agent` as its User-Agent.
pub async fn client_from(path: &std::path::Path, agent: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).expect("kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config");
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_str(agent).expect("agent")));
    kube::Client::try_from(config).expect("kube client")
}
