//! The interface through which the webhook hands admitted objects to the controller.
//!
//! Implementations must return at once (queue the work): they are called from the admission
//! path, which makes no API call and never waits.

use k8s_openapi::api::{apps::v1::Deployment, policy::v1::PodDisruptionBudget};

/// Receives objects seen at admission (never for dry runs).
pub trait AdmissionHandler: Send + Sync + 'static {
    /// A Deployment is being created (the object as submitted, with its UID).
    fn deployment_created(&self, deployment: Deployment);
    /// A PodDisruptionBudget is being created or updated.
    fn pdb_written(&self, pdb: PodDisruptionBudget);
}

/// A handler that ignores everything (webhook-only runs and tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct IgnoreAdmissions;

impl AdmissionHandler for IgnoreAdmissions {
    fn deployment_created(&self, _: Deployment) {}
    fn pdb_written(&self, _: PodDisruptionBudget) {}
}
