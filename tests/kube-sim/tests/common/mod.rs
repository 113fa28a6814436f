//! Shared test harness: one kube-sim per test on an ephemeral port, kubectl with private
//! cache/home directories, a kube-rs client, manifest files and request-log helpers.

#![allow(dead_code)]

pub mod webhook;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube_sim::{Cluster, Gvr, RequestRecord, Server, ServerOptions};
use serde_json::Value;

/// The tests' one kubectl runner (private HOME and discovery cache), shared with the
/// end-to-end harness.
#[path = "../../../support/kubectl.rs"]
pub mod kubectl;
pub use kubectl::Kubectl;

/// A running kube-sim plus private directories for kubectl.
pub struct Sim {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

/// Output of one kubectl run.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics (test failure) with both streams when kubectl failed.
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "kubectl {:?} failed\nstdout:\n{}\nstderr:\n{}",
            self.args, self.stdout, self.stderr
        );
        self
    }
}

impl Sim {
    /// Starts a fresh kube-sim.
    pub async fn start() -> Self {
        Self::start_with(kube_sim::ClusterConfig::default()).await
    }

    /// Starts a fresh kube-sim with the given cluster config.
    pub async fn start_with(config: kube_sim::ClusterConfig) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut options = ServerOptions::new(dir.path().join("kubeconfig"));
        options.cluster = config;
        let server = Server::start(options).await.expect("kube-sim starts");
        for sub in ["home", "cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        Self { server, dir }
    }

    pub fn cluster(&self) -> &Cluster {
        self.server.cluster()
    }

    pub fn kubeconfig(&self) -> &Path {
        self.server.kubeconfig_path()
    }

    /// Writes a file under the test directory and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write file");
        path
    }

    /// Runs kubectl with this server's kubeconfig and private KUBECACHEDIR/HOME.
    pub async fn kubectl(&self, args: &[&str]) -> Run {
        self.kubectl_as(self.kubeconfig(), args).await
    }

    /// Runs kubectl with another kubeconfig (e.g. a ServiceAccount's), with a HOME and
    /// discovery cache of its own.
    pub async fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Run {
        let stem = kubeconfig.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let kubectl = Kubectl::new(kubeconfig, &self.dir.path().join(format!("home-{stem}")));
        let out = tokio::process::Command::from(kubectl.command())
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .await
            .expect("kubectl runs");
        Run {
            args: args.iter().map(|a| a.to_string()).collect(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A kube-rs client for this server, as the admin.
    pub async fn client(&self) -> kube::Client {
        client_from(self.kubeconfig()).await
    }

    /// The request-log mark to pass to [`Sim::requests_since`].
    pub fn mark(&self) -> u64 {
        self.cluster().request_log().last_seq()
    }

    /// Requests logged after `mark`.
    pub fn requests_since(&self, mark: u64) -> Vec<RequestRecord> {
        self.cluster().request_log().records_since(mark)
    }

    /// Creates objects in-process from YAML (status kept, no admission), like `--seed`.
    pub async fn seed(&self, yaml: &str) {
        let objects = kube_sim::seed::parse_manifests(yaml).expect("seed manifests parse");
        kube_sim::seed::apply(self.cluster(), objects).await.expect("seed applies");
    }

    /// One object through the in-process API (panics when absent).
    pub fn get(&self, api_version: &str, resource: &str, ns: Option<&str>, name: &str) -> Value {
        let gvr = Gvr::from_api_version(api_version, resource);
        (*self.cluster().get(&gvr, ns, name).expect("object exists")).clone()
    }

    /// Whether an object exists.
    pub fn exists(&self, api_version: &str, resource: &str, ns: Option<&str>, name: &str) -> bool {
        let gvr = Gvr::from_api_version(api_version, resource);
        self.cluster().get(&gvr, ns, name).is_ok()
    }
}

/// `METHOD path?query` lines of records (what the transcripts show).
pub fn request_lines(records: &[RequestRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            if r.query.is_empty() {
                format!("{} {}", r.method, r.path)
            } else {
                format!("{} {}?{}", r.method, r.path, r.query)
            }
        })
        .collect()
}

/// Polls `condition` until it holds or `timeout` passes.
pub async fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Deployment manifest.
pub fn deployment_yaml(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: {name}\n        image: example/{name}:1.0\n"
    )
}

/// A Node manifest.
pub fn node_yaml(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\nstatus:\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
    )
}

/// A running, ready Pod on `node`.
pub fn pod_yaml(name: &str, app: &str, node: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    app: {app}\nspec:\n  nodeName: {node}\n  containers:\n  - name: main\n    image: example/{app}:1.0\nstatus:\n  phase: Running\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
    )
}

/// The project's EvictionAutoscaler CRD (group eviction-autoscaler.azure.com).
pub const EVICTION_AUTOSCALER_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: evictionautoscalers.eviction-autoscaler.azure.com
spec:
  group: eviction-autoscaler.azure.com
  names:
    kind: EvictionAutoscaler
    listKind: EvictionAutoscalerList
    plural: evictionautoscalers
    singular: evictionautoscaler
    shortNames: [ea]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Target
      type: string
      jsonPath: .spec.targetName
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// The behaviour cluster tests use: 2 nodes, Ready 1 s after start, grace periods ×0.05
/// (30 s → 1.5 s).
pub fn test_behaviour() -> kube_sim::ClusterBehaviour {
    kube_sim::ClusterBehaviour {
        nodes: 2,
        pod_ready_delay: Duration::from_secs(1),
        termination_grace_scale: 0.05,
        ..kube_sim::ClusterBehaviour::default()
    }
}

impl Sim {
    /// Starts a kube-sim that behaves like a cluster (controllers, eviction, webhooks).
    pub async fn start_cluster(behaviour: kube_sim::ClusterBehaviour) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let options = ServerOptions::new(dir.path().join("kubeconfig")).with_behaviour(behaviour);
        let server = Server::start(options).await.expect("kube-sim starts");
        for sub in ["home", "cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        Self { server, dir }
    }

    /// Applies YAML with `kubectl apply -f` (must succeed).
    pub async fn apply(&self, name: &str, yaml: &str) -> Run {
        let file = self.write(name, yaml);
        self.kubectl(&["apply", "-f", file.to_str().expect("utf-8 path")]).await.ok()
    }

    /// Objects of a resource (all namespaces when `ns` is None), through the in-process API.
    pub fn list(&self, api_version: &str, resource: &str, ns: Option<&str>) -> Vec<Value> {
        let gvr = Gvr::from_api_version(api_version, resource);
        let list = self.cluster().list(&gvr, ns, &kube_sim::ListOptions::default()).expect("list");
        list.items.iter().map(|o| (**o).clone()).collect()
    }

    /// Pods in `ns` with label `app=<app>`.
    pub fn pods_of(&self, ns: &str, app: &str) -> Vec<Value> {
        self.list("v1", "pods", Some(ns))
            .into_iter()
            .filter(|p| p["metadata"]["labels"]["app"] == app)
            .collect()
    }

    /// Polls until `condition` holds on the cluster, or fails the test with `what`.
    pub async fn wait_until(&self, what: &str, timeout: Duration, mut condition: impl FnMut(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        while !condition(self) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {timeout:?} waiting for: {what}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits until `app` has exactly `count` Ready, non-terminating pods in `ns`.
    pub async fn wait_ready(&self, ns: &str, app: &str, count: usize) {
        self.wait_until(&format!("{count} ready pods of {app}"), Duration::from_secs(30), |s| {
            let pods = s.pods_of(ns, app);
            pods.len() == count
                && pods.iter().all(|p| p["metadata"]["deletionTimestamp"].is_null() && pod_ready(p))
        })
        .await;
    }

    /// Waits until the PDB's status is observed and has `allowed` disruptions.
    pub async fn wait_pdb(&self, ns: &str, name: &str, allowed: i64) -> Value {
        self.wait_until(
            &format!("PDB {name} observed with {allowed} allowed"),
            Duration::from_secs(30),
            |s| {
                s.exists("policy/v1", "poddisruptionbudgets", Some(ns), name) && {
                    let pdb = s.get("policy/v1", "poddisruptionbudgets", Some(ns), name);
                    pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"]
                        && pdb["status"]["disruptionsAllowed"] == allowed
                }
            },
        )
        .await;
        self.get("policy/v1", "poddisruptionbudgets", Some(ns), name)
    }
}

/// True when the pod has `Ready=True`.
pub fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// A PodDisruptionBudget selecting `app=<app>`; `rule` is e.g. `minAvailable: 1`.
pub fn pdb_yaml(name: &str, app: &str, rule: &str) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  {rule}\n  selector:\n    matchLabels:\n      app: {app}\n"
    )
}

/// An HTTP answer from [`Sim::raw`].
#[derive(Debug)]
pub struct RawAnswer {
    pub code: u16,
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Sim {
    /// Sends one request through kube-rs' client (TLS, token) and returns code, Retry-After
    /// and the JSON body.
    pub async fn raw(&self, method: &str, path: &str, body: Option<Value>) -> RawAnswer {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        self.raw_text(method, path, "application/json", &bytes).await
    }

    /// [`Sim::raw`] with a body of `content_type` given as text (a YAML apply configuration).
    pub async fn raw_text(&self, method: &str, path: &str, content_type: &str, body: &str) -> RawAnswer {
        use http_body_util::BodyExt as _;
        let mut config = kube_config(self.kubeconfig()).await;
        // Raw answers: no transparent retry of 429/503.
        config.default_retry = false;
        let client = kube::Client::try_from(config).expect("kube client");
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .header("accept", "application/json")
            .body(kube::client::Body::from(body.as_bytes().to_vec()))
            .expect("request");
        let response = client.send(request).await.expect("the server answers");
        let code = response.status().as_u16();
        let retry_after =
            response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(String::from);
        let bytes = response.into_body().collect().await.expect("body").to_bytes();
        RawAnswer { code, retry_after, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) }
    }

    /// POSTs an Eviction for `ns/name` (kubectl drain's body plus `delete_options`).
    pub async fn evict(&self, ns: &str, name: &str, delete_options: Value, query: &str) -> RawAnswer {
        let body = serde_json::json!({"kind": "Eviction", "apiVersion": "policy/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null}, "deleteOptions": delete_options});
        self.raw("POST", &format!("/api/v1/namespaces/{ns}/pods/{name}/eviction{query}"), Some(body)).await
    }
}

/// A kube-rs configuration from a kubeconfig file (the admin's or a ServiceAccount's).
pub async fn kube_config(path: &Path) -> kube::Config {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).expect("kubeconfig parses");
    kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kube config")
}

/// A kube-rs client from a kubeconfig file.
pub async fn client_from(path: &Path) -> kube::Client {
    kube::Client::try_from(kube_config(path).await).expect("kube client")
}
