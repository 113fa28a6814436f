//! The EvictionAutoScaler status a plan implies (ARCHITECTURE.md §4.7), and when it is worth
//! a write. Transition times are kept from the previous status when a condition did not
//! change, so an unchanged situation renders an identical status and no write happens.
//!
//! The status describes the surge, not every pod movement: a blocked single-replica drain
//! writes it twice, at the surge and at the revert (issue 19). The PDB's `disruptionsAllowed`
//! is not mirrored (it moves with every pod; `kubectl get pdb` shows it), the `Ready` message
//! does not change while a surge is held, and while a surge is active an acknowledgement alone
//! (a newer `spec.lastEviction` or `metadata.generation`) waits for the revert's write.

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
    let ready = match (&plan.degraded, plan.surge_value) {
        (Some(d), _) => condition(previous, READY, false, d.reason, d.message.clone(), facts.generation, now),
        (None, Some(surged)) => {
            let message = format!(
                "surged from {} to {surged} for a drain; reverts once the drain is over and the cooldown has passed",
                plan.baseline
            );
            condition(previous, READY, true, "Surged", message, facts.generation, now)
        }
        (None, None) => {
            condition(previous, READY, true, "Idle", "no surge active".into(), facts.generation, now)
        }
    };
    let degraded = match &plan.degraded {
        Some(d) => condition(previous, DEGRADED, true, d.reason, d.message.clone(), facts.generation, now),
        None => condition(previous, DEGRADED, false, "AsExpected", String::new(), facts.generation, now),
    };
    EvictionAutoScalerStatus {
        min_replicas: Some(plan.baseline),
        surge_replicas: Some(surge_replicas),
        target_replicas: Some(facts.target_replicas),
        last_eviction: facts.last_eviction.clone().or_else(|| previous.and_then(|p| p.last_eviction.clone())),
        observed_generation: facts.generation,
        // Go-compatibility fields are left as found; we never set them.
        deployment_generation: previous.and_then(|p| p.deployment_generation),
        pdb_floor_pinned: None,
        conditions: vec![ready, degraded],
    }
}

/// Whether `rendered` is worth writing over `current`. While a surge is active, a status that
/// differs only in what it acknowledges (`lastEviction`, `observedGeneration`) is not: the
/// revert's write brings those up to date, so a drain costs two status writes, not one per
/// eviction attempt.
pub fn needs_write(current: Option<&EvictionAutoScalerStatus>, rendered: &EvictionAutoScalerStatus) -> bool {
    let Some(current) = current else { return true };
    if current == rendered {
        return false;
    }
    let surging = rendered.surge_replicas.is_some_and(|s| s > 0);
    !surging || without_acknowledgements(current) != without_acknowledgements(rendered)
}

fn without_acknowledgements(status: &EvictionAutoScalerStatus) -> EvictionAutoScalerStatus {
    let mut status = status.clone();
    status.last_eviction = None;
    status.observed_generation = None;
    for condition in &mut status.conditions {
        condition.observed_generation = None;
    }
    status
}
