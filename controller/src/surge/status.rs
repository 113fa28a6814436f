//! The EvictionAutoScaler status a plan implies (ARCHITECTURE.md §4.7). Transition times are
//! kept from the previous status when a condition did not change, so an unchanged situation
//! renders an identical status and no write happens.

use eviction_autoscaler_shared::crd::{Eviction, EvictionAutoScalerStatus};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::Plan;

/// Condition type `Ready`.
pub const READY: &str = "Ready";
/// Condition type `Degraded`.
pub const DEGRADED: &str = "Degraded";

/// Per-EAS facts besides the plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusFacts {
    /// The Deployment's `spec.replicas` after the plan's write.
    pub target_replicas: i32,
    /// The PDB's `status.disruptionsAllowed`.
    pub disruptions_allowed: Option<i32>,
    /// The EAS's `spec.lastEviction` (now handled).
    pub last_eviction: Option<Eviction>,
    /// The EAS's `metadata.generation`.
    pub generation: Option<i64>,
}

/// The `Degraded` reason of a status, when that condition is true.
pub fn degraded_reason(status: &EvictionAutoScalerStatus) -> Option<String> {
    status.conditions.iter().find(|c| c.type_ == DEGRADED && c.status == "True").map(|c| c.reason.clone())
}

fn condition(
    previous: Option<&EvictionAutoScalerStatus>,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    let status = if status { "True" } else { "False" }.to_owned();
    let since = previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
        .filter(|c| c.status == status)
        .map_or(Time(now), |c| c.last_transition_time.clone());
    Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message,
        observed_generation: generation,
        last_transition_time: since,
    }
}

/// The status to hold after `plan`, for one EAS.
pub fn render(
    previous: Option<&EvictionAutoScalerStatus>,
    plan: &Plan,
    facts: &StatusFacts,
    now: Timestamp,
) -> EvictionAutoScalerStatus {
    let surge_replicas = plan.surge_value.map_or(0, |s| (s - plan.baseline).max(0));
    let ready = match &plan.degraded {
        Some(d) => condition(previous, READY, false, d.reason, d.message.clone(), facts.generation, now),
        None if plan.surge_value.is_some() => {
            condition(previous, READY, true, "Surged", plan.summary.clone(), facts.generation, now)
        }
        None => condition(previous, READY, true, "Idle", plan.summary.clone(), facts.generation, now),
    };
    let degraded = match &plan.degraded {
        Some(d) => condition(previous, DEGRADED, true, d.reason, d.message.clone(), facts.generation, now),
        None => condition(previous, DEGRADED, false, "AsExpected", String::new(), facts.generation, now),
    };
    EvictionAutoScalerStatus {
        min_replicas: Some(plan.baseline),
        surge_replicas: Some(surge_replicas),
        target_replicas: Some(facts.target_replicas),
        disruptions_allowed: facts.disruptions_allowed,
        last_eviction: facts.last_eviction.clone().or_else(|| previous.and_then(|p| p.last_eviction.clone())),
        observed_generation: facts.generation,
        // Go-compatibility fields are left as found; we never set them.
        deployment_generation: previous.and_then(|p| p.deployment_generation),
        pdb_floor_pinned: None,
        conditions: vec![ready, degraded],
    }
}
