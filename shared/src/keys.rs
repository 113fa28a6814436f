//! Annotation, label, finalizer and condition keys. Spelled exactly as the Go project
//! (Azure/eviction-autoscaler) spells them, so objects it wrote are read and adopted as ours.

/// Namespace annotation: `"true"` / `"false"` enables or disables the namespace.
pub const NAMESPACE_ENABLE: &str = "eviction-autoscaler.azure.com/enable";
/// Deployment annotation: `"false"` opts the Deployment out of default-PDB creation.
pub const PDB_CREATE: &str = "eviction-autoscaler.azure.com/pdb-create";
/// Deployment annotation: `"false"` opts the Deployment out of surges (ours; the Go project has none).
pub const SURGE: &str = "eviction-autoscaler.azure.com/surge";

/// PDB/EAS annotation marking objects the controller owns; removing it hands a PDB to the user.
pub const OWNED_BY: &str = "ownedBy";
/// The only value of [`OWNED_BY`] that means "ours".
pub const OWNED_BY_VALUE: &str = "EvictionAutoScaler";
/// PDB/EAS annotation naming the Deployment the object is for (informational).
pub const TARGET: &str = "target";

/// Surge marker on the scaled object (Deployment, HPA or ScaledObject): the surged value.
pub const SURGE_REPLICAS: &str = "evictionSurgeReplicas";
/// Durable baseline on the scaled object, written once at the first surge step.
pub const ORIGINAL_MIN_REPLICAS: &str = "eviction-autoscaler.azure.com/original-min-replicas";
/// Go project's PDB floor feature: the original `{minAvailable,maxUnavailable}` as JSON.
pub const ORIGINAL_PDB_SPEC: &str = "eviction-autoscaler.azure.com/original-pdb-spec";
/// Go project's PDB floor feature: the pinned floor.
pub const PINNED_FLOOR: &str = "eviction-autoscaler.azure.com/pinned-floor";

/// Go project's EAS finalizer guarding a surge revert; honoured and released on adoption.
pub const FINALIZER_SURGE_REVERT: &str = "eviction-autoscaler.azure.com/surge-revert";
/// Go project's EAS finalizer guarding a pinned PDB floor; honoured and released on adoption.
pub const FINALIZER_PDB_FLOOR: &str = "eviction-autoscaler.azure.com/pdb-floor";

/// HPA label KEDA sets on the HPA it generates for a ScaledObject.
pub const KEDA_SCALED_OBJECT_LABEL: &str = "scaledobject.keda.sh/name";

/// Pod annotation the ReplicaSet controller reads to choose which pods to remove first.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Label on the self-managed certificate Secret the product creates: only a Secret carrying it
/// is ever replaced, or removed by `cleanup`.
pub const SECRET_OWNER_LABEL: (&str, &str) = ("app.kubernetes.io/name", "eviction-autoscaler");

/// Did eviction-autoscaler make this Secret (its [`SECRET_OWNER_LABEL`])? One someone else
/// made under the configured name (their own PKI, say) is left as it is.
pub fn is_product_secret(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    let (key, value) = SECRET_OWNER_LABEL;
    meta.labels.as_ref().and_then(|labels| labels.get(key)).is_some_and(|v| v == value)
}

/// Node taints that mark a node as draining by default (besides `spec.unschedulable`).
pub const DEFAULT_DRAIN_TAINTS: [&str; 3] =
    ["node.kubernetes.io/unschedulable", "karpenter.sh/disrupted", "ToBeDeletedByClusterAutoscaler"];
