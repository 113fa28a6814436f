//! The per-Deployment surge state machine (ARCHITECTURE.md §4.1–4.3), sans I/O.
//!
//! [`plan`] is a pure function of what was observed and the time; the runtime re-reads and
//! calls it again whenever anything changes, when its write gets a 409, and when the timer it
//! returns fires. All state needed to continue lives on the scaled object's annotations
//! ([`state`]), so any replica, after any crash, computes the same next step.

mod decide;
pub mod scaler;
pub mod state;
pub mod status;
#[cfg(test)]
mod status_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use eviction_autoscaler_shared::crd::EvictionAutoScalerStatus;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

pub use decide::{events, plan};
pub use scaler::ScalerKind;
pub use state::AnnotationEdits;

use crate::displaced::Displacement;
use crate::keda::ScaledObject;

/// `Degraded` condition reasons (also the `reason` label of the degraded metric).
pub mod reasons {
    /// Two PDBs select the Deployment's pods: every eviction fails with 500 anyway.
    pub const MULTIPLE_PDBS: &str = "MultiplePDBs";
    /// KEDA plus a separate HPA (or several of either) scale the Deployment.
    pub const UNSUPPORTED_AUTOSCALER: &str = "UnsupportedAutoscalerConfiguration";
    /// The PDB scales with replicas (or needs more than maxSurge allows): no surge opens it.
    pub const CANNOT_OPEN_BUDGET: &str = "SurgeCannotOpenBudget";
    /// The PDB's own spec cannot be evaluated.
    pub const INVALID_PDB: &str = "InvalidPDB";
    /// A write was refused with 403 (an admission policy forbids scaling).
    pub const FORBIDDEN: &str = "SurgeForbidden";
    /// Surge pods stay Pending: the cluster has no room for them.
    pub const UNSCHEDULABLE: &str = "SurgeUnschedulable";
    /// A surge annotation on the scaled object cannot be parsed.
    pub const UNREADABLE_STATE: &str = "InvalidSurgeAnnotation";
}

/// Everything the decision depends on, gathered by the runtime (from caches, plus pods read on
/// demand). The Deployment, HPAs and ScaledObjects must be complete objects when a write is
/// planned from them; the runtime re-GETs before writing.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The Deployment.
    pub deployment: Deployment,
    /// Whether its namespace is in scope.
    pub namespace_enabled: bool,
    /// PDBs in the namespace whose selector matches its pod template.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// HPAs in the namespace (filtered here).
    pub hpas: Vec<HorizontalPodAutoscaler>,
    /// KEDA ScaledObjects in the namespace (filtered here).
    pub scaled_objects: Vec<ScaledObject>,
    /// Displaced pods and pods still on draining nodes.
    pub displacement: Displacement,
    /// Whether any node in the cluster is draining.
    pub any_node_draining: bool,
    /// The last eviction signal for the Deployment (runtime memory, the EAS
    /// `spec.lastEviction`, or when a surge was resumed); `None` counts as now.
    pub last_signal: Option<Timestamp>,
    /// A new signal triggered this evaluation (gates `SurgeSkipped` events).
    pub new_signal: bool,
    /// The Deployment's pods that are Pending as unschedulable.
    pub unschedulable_pods: u32,
    /// Set while a recent write was refused with 403: its message.
    pub forbidden: Option<String>,
    /// The EAS status as last written (transition detection for Events).
    pub previous: Option<EvictionAutoScalerStatus>,
}

/// One conditional write. `value` goes to `spec.replicas` (Deployment), `spec.minReplicas`
/// (HPA) or `spec.minReplicaCount` (ScaledObject), together with `annotations`, guarded by
/// `resource_version`. With an autoscaler, `deployment_replicas` then scales the Deployment at
/// once (the autoscaler acts on its own schedule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The object written.
    pub kind: ScalerKind,
    /// Its name (same namespace as the Deployment).
    pub name: String,
    /// The resourceVersion it was computed from.
    pub resource_version: Option<String>,
    /// New replicas / minimum, or `None` to leave it.
    pub value: Option<i32>,
    /// Annotation edits.
    pub annotations: AnnotationEdits,
    /// Follow-up scale of the Deployment (autoscaler strategies only).
    pub deployment_replicas: Option<i32>,
}

/// A Kubernetes Event to publish on the Deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// Warning (true) or Normal.
    pub warning: bool,
    /// `SurgeStarted`, `SurgeReverted`, …
    pub reason: &'static str,
    /// Plain words for the owner.
    pub note: String,
}

/// What the plan does, for logs and the scale-actions metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No surge, nothing to do.
    Idle,
    /// First surge write.
    Started,
    /// A larger surge step.
    SteppedUp,
    /// Re-surge after someone reset replicas.
    Resurged,
    /// An override recorded (back-off starts, or we gave up).
    OverrideRecorded,
    /// A surge kept.
    Held,
    /// A surge ended (`expired` by max-hold).
    Reverted {
        /// Ended by `--max-hold`.
        expired: bool,
    },
    /// Surge needed but impossible or refused (see the degraded reason).
    Blocked,
    /// Surge not needed or not allowed for this Deployment.
    Skipped,
}

/// A `Degraded` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Degraded {
    /// One of [`reasons`] or a `SurgeError` reason.
    pub reason: &'static str,
    /// What is wrong and what to change.
    pub message: String,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// At most one conditional write.
    pub write: Option<Write>,
    /// What happened.
    pub outcome: Outcome,
    /// `Degraded` reason, if any.
    pub degraded: Option<Degraded>,
    /// Baseline replicas (after the write).
    pub baseline: i32,
    /// Surged value (after the write); `None` when no surge is active.
    pub surge_value: Option<i32>,
    /// Events to publish on the Deployment.
    pub events: Vec<PlannedEvent>,
    /// When to evaluate again at the latest; always set while a surge is active.
    pub next_check: Option<Timestamp>,
}

impl Plan {
    /// Names the annotation edits a write makes, for logs.
    pub fn annotation_summary(&self) -> BTreeMap<&str, Option<&str>> {
        self.write
            .iter()
            .flat_map(|w| w.annotations.iter().map(|(k, v)| (k.as_str(), v.as_deref())))
            .collect()
    }
}
