//! The parts of KEDA's `ScaledObject` (`keda.sh/v1alpha1`) the controller reads.
//!
//! Only read from caches and written with merge patches that name our fields, never replaced
//! from this partial type (which would drop every field it does not model).

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// `spec` of a ScaledObject: what it scales and within which bounds.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "keda.sh",
    version = "v1alpha1",
    kind = "ScaledObject",
    plural = "scaledobjects",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ScaledObjectSpec {
    /// The workload KEDA scales.
    #[serde(default)]
    pub scale_target_ref: ScaleTargetRef,
    /// Lower bound (KEDA default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replica_count: Option<i32>,
    /// Upper bound (KEDA default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replica_count: Option<i32>,
}

/// `spec.scaleTargetRef`; an empty kind means Deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleTargetRef {
    /// Name of the workload.
    #[serde(default)]
    pub name: String,
    /// Kind of the workload (empty = Deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version of the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
}

/// KEDA's default `maxReplicaCount`.
pub const KEDA_DEFAULT_MAX_REPLICAS: i32 = 100;

impl ScaledObject {
    /// Does this ScaledObject scale the Deployment `name`?
    pub fn targets_deployment(&self, name: &str) -> bool {
        let target = &self.spec.scale_target_ref;
        target.name == name && target.kind.as_deref().is_none_or(|k| k.is_empty() || k == "Deployment")
    }
}
