//! KEDA on the real control plane: its CRD, and a stand-in for its operator.

use std::io::Write as _;
use std::process::Stdio;

use serde_json::{Value, json};

use super::autoscalers::KEDA_CRD;
use super::{Env, Recorder, Resource};

impl Env {
    /// KEDA's CRD, and its operator as far as the product meets it: every ScaledObject in `namespace`
    /// gets the HPA KEDA generates (`keda-hpa-<name>`, controlled by the ScaledObject, its
    /// `minReplicas`/`maxReplicas` from `minReplicaCount`/`maxReplicaCount`), rewritten
    /// wholesale whenever the ScaledObject changes; the real HPA controller then scales. KEDA's
    /// own operator is not built here: its module pulls every scaler's cloud SDK, minutes of
    /// build for this one behaviour (tests/cluster/README.md). Runs until the returned recorder
    /// is dropped.
    pub async fn install_keda(&self, namespace: &str) -> Recorder<()> {
        self.apply(KEDA_CRD).await;
        self.wait_established("scaledobjects.keda.sh").await;
        let kubectl = self.kubectl_runner();
        let scaled_objects = Resource::new("keda.sh", "v1alpha1", "scaledobjects");
        self.watch(&scaled_objects, namespace, None, move |kind, scaled_object| {
            if kind != "DELETED" {
                let hpa = keda_hpa(scaled_object).to_string();
                let mut child = kubectl
                    .command()
                    .args(["apply", "-f", "-"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("kubectl on PATH");
                child.stdin.take().expect("stdin").write_all(hpa.as_bytes()).expect("write the HPA");
                let status = child.wait().expect("kubectl apply runs");
                assert!(status.success(), "the KEDA stand-in could not apply {hpa}");
            }
            None
        })
    }
}

/// The HPA KEDA generates for `scaled_object` (a CPU trigger becomes a CPU Resource metric).
fn keda_hpa(scaled_object: &Value) -> Value {
    let name = scaled_object["metadata"]["name"].as_str().unwrap_or_default();
    let spec = &scaled_object["spec"];
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": format!("keda-hpa-{name}"),
            "namespace": scaled_object["metadata"]["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "keda-operator", "app.kubernetes.io/part-of": name},
            "ownerReferences": [{
                "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": name,
                "uid": scaled_object["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec["scaleTargetRef"]["name"]},
            "minReplicas": spec["minReplicaCount"].as_i64().filter(|m| *m > 0).unwrap_or(1),
            "maxReplicas": spec["maxReplicaCount"].as_i64().unwrap_or(100),
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]
        }
    })
}
