//! Default PodDisruptionBudgets: the pure planner (no I/O). ARCHITECTURE.md §4.5–§4.6.
//!
//! Every Deployment in an enabled namespace that no PDB covers gets exactly one PDB named
//! [`default_pdb_name`], created at the Deployment's admission ([`plan_admission`]) or by the
//! reconciler ([`plan_deployment`]); AlreadyExists means done. Its spec follows the
//! Deployment ([`desired_pdb`]). It is deleted when the Deployment goes, opts out or leaves
//! scope, retired when a user's PDB covers the same pods ([`plan_pdb_admission`], and the
//! watch via [`plan_deployment`]), handed over when the user removes `ownedBy` ([`plan_pdb`]),
//! and removed by `eviction-autoscaler cleanup` ([`plan_cleanup`]).
//!
//! A PDB without `ownedBy: EvictionAutoScaler` is never modified or deleted: writes can only
//! name a PDB through [`OwnedPdb`] or [`HandOverPdb`] (see [`ownership`]).
//!
//! Only Deployments are planned. StatefulSets and other workloads get no default PDB, and
//! nothing is planned (or retried) for them.
//!
//! How the runtime drives it:
//! * Deployment event, namespace event (re-plan its Deployments), config change, start:
//!   [`plan_deployment`]; perform `plan.action`, emit `plan.events` and, once the write
//!   succeeded, `plan.action_event()` (for `Skip`, only when the reason changed) and count
//!   [`Action::outcome`]. One write per pass: the watch event the write causes plans again.
//! * PDB event: [`plan_pdb`] (hand-over, PDB of a deleted Deployment) and re-plan
//!   [`affected_deployments`] (a user PDB now covering → `Retire`; our PDB deleted by hand →
//!   `Create`). At start, [`plan_pdb`] for every PDB once the Deployment cache has synced.
//! * Webhook: [`plan_admission`] on Deployment CREATE, [`plan_pdb_admission`] on PDB
//!   CREATE/UPDATE; both only ever create or retire, and nothing on dry runs.
//! * Writes: `Create` → POST (AlreadyExists = done); `UpdateMinAvailable`/`Adopt`/`HandOver` →
//!   PATCH `application/json-patch+json` with [`Action::json_patch`] (a failed `test` or a
//!   Conflict means re-plan from fresh state, never retry the same patch); `Delete`/`Retire`
//!   → DELETE with [`OwnedPdb::delete_preconditions`] (NotFound = done, Conflict = re-plan).
//! * `eviction-autoscaler cleanup [--dry-run]`: [`plan_cleanup`], then
//!   [`CleanupPlan::describe`] (dry run) or execute in the documented order.
//! * A namespace missing from the cache (created in the same apply) can be passed as a
//!   `Namespace` with just its name: scope then follows `actionedNamespaces` /
//!   `enabledByDefault`, and the namespace event re-plans it later.

pub mod action;
pub mod admission;
pub mod catalogue;
pub mod desired;
pub mod name;
pub mod ownership;
pub mod plan;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod properties;

pub use action::{Action, deployment_subject};
pub use admission::{plan_admission, plan_pdb_admission};
pub use catalogue::{
    DeleteReason, EventReason, EventSubject, EventType, PdbOutcome, PlannedEvent, SkipReason,
};
pub use desired::{Autoscaler, NoPdb, desired_min_available, desired_pdb, surge_baseline};
pub use name::{NAME_SUFFIX, default_pdb_name};
pub use ownership::{CRD_NAME, HandOverPdb, OwnedPdb, crd_owner_reference, is_ours, live_crd_uid};
pub use plan::{
    ADMISSION_GRACE, DeploymentPlan, NamespaceView, affected_deployments, plan_deployment, plan_pdb,
    target_of, wait_for_target,
};
