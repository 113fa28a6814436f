//! The objects scenarios start from (a Deployment, a PDB, a namespace, the two together), and
//! the waits and reads that go with them.

use std::time::Duration;

use serde_json::Value;

use super::{Env, wait_for};

/// A Deployment `name` in `namespace` (label `app=<name>`), with optional annotations.
pub fn deployment(namespace: &str, name: &str, replicas: i32, annotations: &[(&str, &str)]) -> String {
    let annotations: serde_json::Map<String, Value> =
        annotations.iter().map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned()))).collect();
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
            }
        }
    })
    .to_string()
}

/// A user PDB selecting `app=<app>` with `spec` (e.g. `{"minAvailable": 1}`).
pub fn pdb(namespace: &str, name: &str, app: &str, spec: Value) -> String {
    let mut body = spec;
    body["selector"] = serde_json::json!({"matchLabels": {"app": app}});
    serde_json::json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body
    })
    .to_string()
}

/// A namespace, optionally annotated.
pub fn namespace(name: &str, annotations: &[(&str, &str)]) -> String {
    let annotations: serde_json::Map<String, Value> =
        annotations.iter().map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned()))).collect();
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": annotations}})
        .to_string()
}

impl Env {
    /// Deployment `namespace/name` (label `app=<name>`, `replicas`) behind a user PDB `name`
    /// with `minAvailable: min_available`, every replica Ready: the workload a drain meets.
    pub async fn protected_workload(&self, namespace: &str, name: &str, replicas: i32, min_available: i32) {
        self.apply(&deployment(namespace, name, replicas, &[])).await;
        self.apply(&pdb(namespace, name, name, serde_json::json!({"minAvailable": min_available}))).await;
        self.wait_ready(namespace, name, i64::from(replicas)).await;
    }

    /// `kubectl drain NODE --ignore-daemonsets --delete-emptydir-data`, as an operator types it,
    /// which must succeed within two minutes (else the test fails with kubectl's output and the
    /// product's log). Returns kubectl's output.
    pub async fn drain(&self, node: &str) -> String {
        let args = ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"];
        let (ok, output) = self.kubectl_combined(&args).await;
        assert!(ok, "the drain of {node} failed: {output}\n--- product log ---\n{}", self.product_log());
        output
    }

    /// Waits until Deployment `namespace/name` has `replicas` Ready replicas.
    pub async fn wait_ready(&self, namespace: &str, name: &str, replicas: i64) {
        let what = format!("{namespace}/{name} to have {replicas} Ready replicas");
        wait_for(&what, Duration::from_secs(60), || async move {
            let d = self.get(&["deployment", "-n", namespace, name]).await;
            d.filter(|d| d["status"]["readyReplicas"].as_i64() == Some(replicas)).map(|_| ())
        })
        .await;
    }

    /// The node a pod of `app=<app>` in `namespace` runs on.
    pub async fn node_of(&self, namespace: &str, app: &str) -> String {
        let out = self
            .kubectl_ok(&[
                "get",
                "pods",
                "-n",
                namespace,
                "-l",
                &format!("app={app}"),
                "-o",
                "jsonpath={.items[0].spec.nodeName}",
            ])
            .await;
        assert!(!out.is_empty(), "no pod of app={app} is scheduled");
        out
    }

    /// Eviction requests the apiserver answered, as (pod, HTTP code), in order.
    pub fn evictions(&self) -> Vec<(String, u16)> {
        self.requests()
            .into_iter()
            .filter(|r| r.subresource == "eviction")
            .map(|r| (r.name, r.code))
            .collect()
    }
}
