//! The decision itself: idle → maybe surge; active → step up, answer an override, hold or
//! revert. See the module docs of [`super`].

use eviction_autoscaler_shared::budget::min_replicas_to_open;
use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::drain::{self, Hold, HoldInputs};
use eviction_autoscaler_shared::scope::surge_enabled;
use eviction_autoscaler_shared::surge::{resolve_max_surge, surge_target};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::scaler::{self, Scaler};
use super::state::{self, MAX_RESURGES, OverrideHistory, SurgeState};
use super::{Degraded, Observed, Outcome, Plan, PlannedEvent, Write, reasons};

/// Event reasons published on the Deployment.
pub mod events {
    /// A surge write (first or a step up).
    pub const STARTED: &str = "SurgeStarted";
    /// A surge ended after the drain.
    pub const REVERTED: &str = "SurgeReverted";
    /// A surge was not made although a pod was displaced.
    pub const SKIPPED: &str = "SurgeSkipped";
    /// A surge ended by `--max-hold`.
    pub const EXPIRED: &str = "SurgeExpired";
    /// Someone else reset the surged value.
    pub const OVERRIDDEN: &str = "SurgeOverridden";
    /// Surge pods stay Pending.
    pub const UNSCHEDULABLE: &str = "SurgeUnschedulable";
    /// A new `Degraded` reason.
    pub const DEGRADED: &str = "Degraded";
    /// An annotation value that is not a boolean (ignored).
    pub const INVALID_ANNOTATION: &str = "InvalidAnnotation";
}

/// Whether this Deployment needs a surge now.
enum Need<'a> {
    No,
    Skip(String),
    Surge(&'a PodDisruptionBudget),
}

fn need(obs: &Observed) -> Need<'_> {
    if !obs.namespace_enabled || obs.displacement.displaced == 0 {
        return Need::No;
    }
    let [pdb] = obs.pdbs.as_slice() else { return Need::No };
    if !surge_enabled(obs.deployment.metadata.annotations.as_ref()).enabled {
        return Need::Skip(
            "the Deployment opted out of surges (eviction-autoscaler.azure.com/surge: \"false\")".into(),
        );
    }
    let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
    if allowed > 0 {
        return Need::No; // the eviction succeeds without us
    }
    Need::Surge(pdb)
}

/// Computes the next step for one Deployment.
pub fn plan(obs: &Observed, config: &Config, now: Timestamp) -> Plan {
    let mut plan = Plan {
        write: None,
        outcome: Outcome::Idle,
        degraded: None,
        baseline: 0,
        surge_value: None,
        events: Vec::new(),
        next_check: None,
    };
    let scaler = match scaler::detect(&obs.deployment, &obs.hpas, &obs.scaled_objects) {
        Ok(scaler) => scaler,
        Err(conflict) => {
            degrade(&mut plan, reasons::UNSUPPORTED_AUTOSCALER, format!("{}; no surge is made", conflict.0));
            plan.outcome = Outcome::Blocked;
            return finish(plan, obs);
        }
    };
    if obs.pdbs.len() > 1 {
        let names: Vec<_> = obs.pdbs.iter().filter_map(|p| p.metadata.name.as_deref()).collect();
        degrade(
            &mut plan,
            reasons::MULTIPLE_PDBS,
            format!(
                "PDBs {} all select this Deployment's pods, so every eviction fails; keep one of them",
                names.join(", ")
            ),
        );
    }
    if obs.new_signal
        && obs.namespace_enabled
        && let Some(invalid) = surge_enabled(obs.deployment.metadata.annotations.as_ref()).invalid_annotation
    {
        // Treated as unset (surges allowed); said once per new signal, not on every pass.
        plan.events.push(PlannedEvent {
            warning: true,
            reason: events::INVALID_ANNOTATION,
            note: invalid.to_string(),
        });
    }
    let state = SurgeState::read(scaler.annotations());
    if let Some((key, value)) = &state.unreadable {
        degrade(
            &mut plan,
            reasons::UNREADABLE_STATE,
            format!("annotation {key}={value:?} on {} is not a count; ignored", scaler.name()),
        );
    }
    if state.active() {
        active(&mut plan, obs, config, &scaler, &state, now);
    } else {
        idle(&mut plan, obs, config, &scaler, &state, now);
    }
    finish(plan, obs)
}

fn degrade(plan: &mut Plan, reason: &'static str, message: String) {
    // The first problem found is the one reported.
    plan.degraded.get_or_insert(Degraded { reason, message });
}

fn add(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs)).unwrap_or(Timestamp::MAX)
}

fn add_duration(t: Timestamp, d: std::time::Duration) -> Timestamp {
    SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(Timestamp::MAX)
}

fn deployment_replicas(obs: &Observed) -> i32 {
    obs.deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// The surge target for `need`, or the reason none can be made.
fn target(
    plan: &mut Plan,
    obs: &Observed,
    config: &Config,
    scaler: &Scaler,
    pdb: &PodDisruptionBudget,
    baseline: i32,
) -> Option<i32> {
    let strategy = obs.deployment.spec.as_ref().and_then(|s| s.strategy.as_ref());
    let resolved = match resolve_max_surge(strategy, baseline, config.zero_surge_override.as_ref()) {
        Ok(resolved) => resolved,
        Err(e) => {
            degrade(plan, e.reason(), e.to_string());
            return None;
        }
    };
    let displaced = i32::try_from(obs.displacement.displaced).unwrap_or(i32::MAX);
    let target = surge_target(baseline, displaced, resolved.amount, scaler.max());
    let pdb_name = pdb.metadata.name.as_deref().unwrap_or_default();
    let Some(spec) = pdb.spec.as_ref() else {
        degrade(plan, reasons::INVALID_PDB, format!("PodDisruptionBudget {pdb_name} has no spec"));
        return None;
    };
    match min_replicas_to_open(spec) {
        Err(e) => {
            degrade(plan, reasons::INVALID_PDB, format!("PodDisruptionBudget {pdb_name}: {e}"));
            None
        }
        Ok(None) => {
            degrade(
                plan,
                reasons::CANNOT_OPEN_BUDGET,
                format!(
                    "PodDisruptionBudget {pdb_name} scales with the replicas (maxUnavailable: 0 or minAvailable: 100%), \
                     so no surge can let an eviction through; set maxUnavailable to 1 or more, or an integer minAvailable \
                     below the replicas"
                ),
            );
            None
        }
        Ok(Some(needed)) if needed > target => {
            degrade(
                plan,
                reasons::CANNOT_OPEN_BUDGET,
                format!(
                    "PodDisruptionBudget {pdb_name} allows an eviction only at {needed} or more replicas, but a surge \
                     may reach only {target} (baseline {baseline} + maxSurge {}{}); lower minAvailable or raise maxSurge",
                    resolved.amount,
                    scaler.max().map(|m| format!(", autoscaler max {m}")).unwrap_or_default()
                ),
            );
            None
        }
        Ok(Some(_)) => Some(target),
    }
}

fn idle(
    plan: &mut Plan,
    obs: &Observed,
    config: &Config,
    scaler: &Scaler,
    state: &SurgeState,
    now: Timestamp,
) {
    let baseline = scaler.value();
    plan.baseline = baseline;
    let pdb = match need(obs) {
        Need::No => return,
        Need::Skip(why) => {
            plan.outcome = Outcome::Skipped;
            if obs.new_signal {
                plan.events.push(PlannedEvent { warning: false, reason: events::SKIPPED, note: why });
            }
            return;
        }
        Need::Surge(pdb) => pdb,
    };
    if plan.degraded.is_some() {
        plan.outcome = Outcome::Blocked;
        return;
    }
    let Some(target) = target(plan, obs, config, scaler, pdb, baseline) else {
        plan.outcome = Outcome::Blocked;
        return;
    };
    let replicas = deployment_replicas(obs);
    if target <= replicas.max(baseline) {
        plan.outcome = Outcome::Skipped;
        if obs.new_signal {
            let note = format!(
                "a drain displaced {} pod(s) but the Deployment already has {replicas} replicas and the surge limit is {target}",
                obs.displacement.displaced
            );
            plan.events.push(PlannedEvent { warning: false, reason: events::SKIPPED, note });
        }
        return;
    }
    if let Some(message) = &obs.forbidden {
        degrade(plan, reasons::FORBIDDEN, message.clone());
        plan.outcome = Outcome::Blocked;
        return;
    }
    plan.write = Some(surge_write(obs, scaler, state, target, baseline, &state.overrides));
    plan.outcome = Outcome::Started;
    plan.surge_value = Some(target);
    plan.next_check = Some(add_duration(now, config.cooldown));
    plan.events.push(PlannedEvent {
        warning: false,
        reason: events::STARTED,
        note: format!(
            "{} pod(s) displaced by a drain and the PodDisruptionBudget blocks their eviction: scaling from {baseline} to {target}{}",
            obs.displacement.displaced,
            via(scaler)
        ),
    });
}

fn via(scaler: &Scaler) -> String {
    match scaler {
        Scaler::Deployment(_) => String::new(),
        Scaler::Hpa(_) => format!(" (HorizontalPodAutoscaler {} minReplicas)", scaler.name()),
        Scaler::Keda(_) => format!(" (ScaledObject {} minReplicaCount)", scaler.name()),
    }
}

fn surge_write(
    obs: &Observed,
    scaler: &Scaler,
    state: &SurgeState,
    target: i32,
    baseline: i32,
    overrides: &OverrideHistory,
) -> Write {
    let follow_up = match scaler {
        Scaler::Deployment(_) => None,
        _ => (deployment_replicas(obs) < target).then_some(target),
    };
    Write {
        kind: scaler.kind(),
        name: scaler.name(),
        resource_version: scaler.resource_version(),
        value: Some(target),
        annotations: state::surge_edits(state, target, baseline, overrides),
        deployment_replicas: follow_up,
    }
}

fn active(
    plan: &mut Plan,
    obs: &Observed,
    config: &Config,
    scaler: &Scaler,
    state: &SurgeState,
    now: Timestamp,
) {
    let surged = state.surge_value.unwrap_or_default();
    let current = scaler.value();
    // A recorded 0 is a real baseline only for autoscalers (scale-to-zero); never for a
    // Deployment, and an unknown baseline is never guessed: the revert then keeps replicas.
    let baseline = state.baseline.filter(|b| *b > 0 || scaler.zero_baseline_allowed());
    plan.baseline = baseline.unwrap_or(current.min(surged));
    plan.surge_value = Some(surged);
    let in_scope =
        obs.namespace_enabled && surge_enabled(obs.deployment.metadata.annotations.as_ref()).enabled;
    let hold = if in_scope {
        drain::hold(HoldInputs {
            pods_on_draining_nodes: obs.displacement.on_draining_nodes as usize,
            any_node_draining: obs.any_node_draining,
            last_signal: obs.last_signal.unwrap_or(now),
            cooldown: config.cooldown,
            max_hold: config.max_hold,
            now,
        })
    } else {
        Hold::Revert { expired: false }
    };
    let recheck_at = match hold {
        Hold::Revert { expired } => {
            return revert(plan, scaler, current, surged, baseline, expired, in_scope);
        }
        Hold::Keep { recheck_at, .. } => recheck_at,
    };
    plan.outcome = Outcome::Held;
    // Pods leave draining nodes without any event we watch: look again within a cooldown.
    plan.next_check = Some(recheck_at.min(add_duration(now, config.cooldown)));
    if obs.unschedulable_pods > 0 {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: events::UNSCHEDULABLE,
            note: format!(
                "{} surge pod(s) cannot be scheduled (no node has room); no further scaling for them",
                obs.unschedulable_pods
            ),
        });
        degrade(
            plan,
            reasons::UNSCHEDULABLE,
            format!("{} pod(s) Pending as unschedulable while surged to {surged}", obs.unschedulable_pods),
        );
        return;
    }
    let Need::Surge(pdb) = need(obs) else {
        return override_bookkeeping(plan, obs, scaler, state, current, surged, None, now);
    };
    let base = baseline.unwrap_or(plan.baseline);
    let target = if plan.degraded.is_none() { target(plan, obs, config, scaler, pdb, base) } else { None };
    if current < surged {
        return override_bookkeeping(plan, obs, scaler, state, current, surged, target, now);
    }
    let Some(target) = target.filter(|t| *t > current) else { return };
    if let Some(message) = &obs.forbidden {
        degrade(plan, reasons::FORBIDDEN, message.clone());
        return;
    }
    plan.write = Some(surge_write(obs, scaler, state, target, base, &state.overrides));
    plan.outcome = Outcome::SteppedUp;
    plan.surge_value = Some(target);
    plan.events.push(PlannedEvent {
        warning: false,
        reason: events::STARTED,
        note: format!(
            "{} pod(s) now displaced by a drain: scaling from {current} to {target}{}",
            obs.displacement.displaced,
            via(scaler)
        ),
    });
}

/// Someone else set the value below our surge: record it, back off, re-surge a bounded
/// number of times, then leave their value alone.
#[allow(clippy::too_many_arguments)]
fn override_bookkeeping(
    plan: &mut Plan,
    obs: &Observed,
    scaler: &Scaler,
    state: &SurgeState,
    current: i32,
    surged: i32,
    target: Option<i32>,
    now: Timestamp,
) {
    if current >= surged || state.overrides.gave_up {
        return;
    }
    let mut history = state.overrides.clone();
    match history.resurge_at {
        None => {
            history.count = history.count.saturating_add(1);
            history.last = Some(now);
            let note = if history.count > MAX_RESURGES {
                history.gave_up = true;
                format!(
                    "{} was set to {current} while surged to {surged}, {} times: no longer re-surging, leaving it at {current}",
                    scaler.name(),
                    history.count
                )
            } else {
                let wait = OverrideHistory::backoff_secs(history.count);
                history.resurge_at = Some(add(now, wait));
                plan.next_check = plan.next_check.min(history.resurge_at).or(history.resurge_at);
                format!(
                    "{} was set to {current} while surged to {surged} (someone else manages replicas?); re-surging in {wait}s \
                     (attempt {} of {MAX_RESURGES})",
                    scaler.name(),
                    history.count
                )
            };
            plan.events.push(PlannedEvent { warning: true, reason: events::OVERRIDDEN, note });
            plan.outcome = Outcome::OverrideRecorded;
            plan.write = Some(Write {
                kind: scaler.kind(),
                name: scaler.name(),
                resource_version: scaler.resource_version(),
                value: None,
                annotations: state::history_edits(&history),
                deployment_replicas: None,
            });
        }
        Some(due) if now < due => {
            plan.next_check = plan.next_check.min(Some(due)).or(Some(due));
        }
        Some(_) => {
            let Some(target) = target.filter(|t| *t > current) else { return };
            if obs.forbidden.is_some() {
                return;
            }
            history.resurge_at = None;
            let base = plan.baseline;
            plan.write = Some(surge_write(obs, scaler, state, target, base, &history));
            plan.outcome = Outcome::Resurged;
            plan.surge_value = Some(target);
            plan.events.push(PlannedEvent {
                warning: false,
                reason: events::STARTED,
                note: format!(
                    "re-surging from {current} to {target} after an override, the drain still under way{}",
                    via(scaler)
                ),
            });
        }
    }
}

fn revert(
    plan: &mut Plan,
    scaler: &Scaler,
    current: i32,
    surged: i32,
    baseline: Option<i32>,
    expired: bool,
    in_scope: bool,
) {
    let restore = baseline.filter(|_| current == surged);
    plan.write = Some(Write {
        kind: scaler.kind(),
        name: scaler.name(),
        resource_version: scaler.resource_version(),
        value: restore,
        annotations: state::clear_edits(),
        deployment_replicas: None,
    });
    plan.outcome = Outcome::Reverted { expired };
    plan.surge_value = None;
    plan.baseline = restore.unwrap_or(current);
    let target = scaler.name();
    let what = match (restore, baseline) {
        (Some(b), _) => format!("{target} back from {surged} to {b}"),
        (None, Some(_)) => format!("{target} was changed to {current} meanwhile; keeping {current}"),
        (None, None) => format!("the original value of {target} was not recorded; keeping {current}"),
    };
    let (warning, reason, why) = if expired {
        (
            true,
            events::EXPIRED,
            "held for --max-hold since the last signal while a drain seemed to go on (a forgotten cordon?)",
        )
    } else if !in_scope {
        (false, events::REVERTED, "the Deployment or its namespace left scope: its drain surge ends")
    } else {
        (false, events::REVERTED, "the drain is over and the cooldown has passed")
    };
    plan.events.push(PlannedEvent { warning, reason, note: format!("{why}: {what}") });
}

/// Adds the `Degraded` transition Event, comparing with the last written status.
fn finish(mut plan: Plan, obs: &Observed) -> Plan {
    let previous = obs.previous.as_ref().and_then(super::status::degraded_reason);
    if let Some(degraded) = &plan.degraded
        && previous.as_deref() != Some(degraded.reason)
        && degraded.reason != reasons::UNSCHEDULABLE
    {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: events::DEGRADED,
            note: format!("{}: {}", degraded.reason, degraded.message),
        });
    }
    if let Some(degraded) = &plan.degraded
        && degraded.reason == reasons::UNSCHEDULABLE
        && previous.as_deref() == Some(reasons::UNSCHEDULABLE)
    {
        // Reported once per episode, not on every evaluation.
        plan.events.retain(|e| e.reason != events::UNSCHEDULABLE);
    }
    plan
}
