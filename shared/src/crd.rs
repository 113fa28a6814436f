//! The `EvictionAutoScaler` custom resource (group `eviction-autoscaler.azure.com`, version `v1`).
//!
//! One object per PDB that protects an in-scope Deployment: the user's window into the
//! controller (ARCHITECTURE.md §4.7). Field names match the Go project's CRD so objects it wrote
//! deserialise unchanged; `deploymentGeneration` and `pdbFloorPinned` are kept only for that.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state: which workload this object watches, and the last eviction any replica saw.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "eviction-autoscaler.azure.com",
    version = "v1",
    kind = "EvictionAutoScaler",
    plural = "evictionautoscalers",
    singular = "evictionautoscaler",
    shortname = "eas",
    namespaced,
    status = "EvictionAutoScalerStatus",
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetName"}"#,
    printcolumn = r#"{"name":"Baseline","type":"integer","jsonPath":".status.minReplicas"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".status.targetReplicas"}"#,
    printcolumn = r#"{"name":"Surge","type":"integer","jsonPath":".status.surgeReplicas"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EvictionAutoScalerSpec {
    /// Name of the workload in the same namespace.
    pub target_name: String,
    /// Kind of the workload, lowercase as the Go project writes it: `deployment`.
    pub target_kind: String,
    /// The last eviction signalled for this workload, written by whichever replica saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eviction: Option<Eviction>,
}

/// One eviction signal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Eviction {
    /// The pod whose eviction was seen.
    #[serde(default)]
    pub pod_name: String,
    /// When it was seen (second precision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_time: Option<Time>,
}

/// Observed state, written by the Lease holder only when it changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionAutoScalerStatus {
    /// Baseline replicas (what the workload goes back to after a surge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Replicas added by an active surge; 0 when idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surge_replicas: Option<i32>,
    /// The workload's `spec.replicas` after the last step (surge or revert).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_replicas: Option<i32>,
    /// The last eviction the controller handled (brought up to date by the next status
    /// change; while a surge is active, by its revert).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eviction: Option<Eviction>,
    /// `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Go project compatibility: the target's generation it last saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_generation: Option<i64>,
    /// Go project compatibility: its PDB-floor latch (feature we do not implement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdb_floor_pinned: Option<bool>,
    /// `Ready` and `Degraded` (with a reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The CRD manifest as YAML, exactly what `eviction-autoscaler crd` prints and
/// `deploy/base/crd.yaml` holds.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    let crd = EvictionAutoScaler::crd();
    // Serialising a derived CRD cannot fail; fall back to JSON (also valid YAML) regardless.
    serde_saphyr::to_string(&crd).or_else(|_| serde_json::to_string_pretty(&crd)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An object exactly as the Go project writes it: status.deploymentGeneration, conditions
    /// without observedGeneration, both finalizers, ownedBy/target annotations, PDB owner.
    fn go_written() -> serde_json::Value {
        json!({
            "apiVersion": "eviction-autoscaler.azure.com/v1",
            "kind": "EvictionAutoScaler",
            "metadata": {
                "name": "web",
                "namespace": "prod",
                "uid": "0b9c6c39-1e8e-4a4c-9d5e-2f1d7f1f6a01",
                "resourceVersion": "48213",
                "generation": 7,
                "creationTimestamp": "2026-03-02T09:14:05Z",
                "annotations": {"ownedBy": "EvictionAutoScaler", "target": "web"},
                "finalizers": [
                    "eviction-autoscaler.azure.com/surge-revert",
                    "eviction-autoscaler.azure.com/pdb-floor"
                ],
                "ownerReferences": [{
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "name": "web",
                    "uid": "6f1d5a2e-7c33-4a57-8e1b-0c2d9a4e5b10",
                    "controller": true,
                    "blockOwnerDeletion": true
                }]
            },
            "spec": {
                "targetName": "web",
                "targetKind": "deployment",
                "lastEviction": {"podName": "web-7d4b9c-x2k9p", "evictionTime": "2026-03-02T10:01:44Z"}
            },
            "status": {
                "lastEviction": {"podName": "web-7d4b9c-x2k9p", "evictionTime": "2026-03-02T10:01:44Z"},
                "minReplicas": 3,
                "deploymentGeneration": 12,
                "pdbFloorPinned": true,
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Reconciled",
                     "message": "eviction with scale up", "lastTransitionTime": "2026-03-02T10:01:45Z"},
                    {"type": "Degraded", "status": "True", "reason": "NoPdb",
                     "message": "PDB of same name not found", "lastTransitionTime": "2026-03-02T10:02:00Z"}
                ]
            }
        })
    }

    #[test]
    fn go_written_object_round_trips_without_losing_a_field() {
        let original = go_written();
        let typed: EvictionAutoScaler = serde_json::from_value(original.clone()).unwrap();
        let status = typed.status.as_ref().unwrap();
        assert_eq!(status.min_replicas, Some(3));
        assert_eq!(status.deployment_generation, Some(12));
        assert_eq!(status.conditions.len(), 2);
        assert_eq!(typed.metadata.finalizers.as_ref().map(Vec::len), Some(2));
        assert_eq!(serde_json::to_value(&typed).unwrap(), original);
    }

    #[test]
    fn crd_has_identity_scope_status_and_columns() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(EvictionAutoScaler::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "evictionautoscalers.eviction-autoscaler.azure.com");
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1");
        assert!(version["subresources"]["status"].is_object());
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Target", "Baseline", "Replicas", "Surge", "Degraded", "Age"]);
        assert!(crd_yaml().contains("evictionautoscalers.eviction-autoscaler.azure.com"));
    }
}
