//! Autoscaler fixtures: an HPA, KEDA's ScaledObject CRD (as little of it as KEDA's operator
//! needs) and a ScaledObject, each targeting a Deployment of the same name.

use serde_json::json;

/// The `keda.sh` ScaledObject CRD.
pub const KEDA_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: scaledobjects.keda.sh}
spec:
  group: keda.sh
  names: {kind: ScaledObject, plural: scaledobjects, singular: scaledobject, listKind: ScaledObjectList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

/// An autoscaling/v2 HPA for Deployment `namespace/name` (CPU target).
pub fn hpa(namespace: &str, name: &str, min: i64, max: i64) -> String {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": min, "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]
        }
    })
    .to_string()
}

/// A KEDA ScaledObject for Deployment `namespace/name` (CPU trigger).
pub fn scaled_object(namespace: &str, name: &str, min: i64, max: i64) -> String {
    json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"name": name},
            "minReplicaCount": min, "maxReplicaCount": max,
            "triggers": [{"type": "cpu", "metadata": {"value": "50"}}]
        }
    })
    .to_string()
}
