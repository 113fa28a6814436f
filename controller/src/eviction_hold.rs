//! Holding a blocked eviction at admission (ARCHITECTURE.md §4.8), as pure functions: whether
//! an eviction is worth holding, and how many held evictions a PDB lets through now.
//!
//! The apiserver calls the webhook before its own PDB check (`EvictionREST.Create` runs
//! validating admission, then reads the PDBs). So an eviction the surge is about to make room
//! for can wait at admission until the budget is open, and then pass on its first request
//! instead of being refused with a 429 that kubectl retries 5 s later.

use eviction_autoscaler_shared::config::Config;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::displaced::{Displacement, is_displaceable};
use crate::surge::{Observed, Outcome, plan, reasons, status::degraded_reason};

/// Why an eviction is not held (answered at once; the apiserver then decides as without us).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotHeld {
    /// `--eviction-hold=0s`.
    Off,
    /// The pod's node is not draining (a descheduler or VPA eviction, whatever
    /// `--surge-trigger` says): nothing would surge for it.
    NotDraining,
    /// The budget lets it through already.
    BudgetOpen,
    /// Not Running and Ready: its eviction costs the budget nothing, or it is leaving anyway.
    NotDisplaceable,
    /// The surge's pods are already unschedulable: no surge pod will become Ready.
    Unschedulable,
    /// The surge cannot open this budget (opted out, out of scope, two PDBs, a budget that
    /// scales with the replicas, no room under `maxSurge` or the autoscaler's max, `Degraded`).
    SurgeCannotOpen,
}

/// What the hold decision looks at: the same observation the surge reconciler plans from, as
/// the replica's caches have it.
pub struct Case<'a> {
    /// The pod being evicted.
    pub pod: &'a Pod,
    /// Its node is draining.
    pub on_draining_node: bool,
    /// Its one covering PDB refuses the eviction now (`displaced::refused_eviction`).
    pub refused: bool,
    /// The owning Deployment as the surge reconciler would observe it; its `displacement` is
    /// replaced here by "as many displaced pods as the surge may take", so the question asked of
    /// the plan is whether any surge can open the budget.
    pub observed: Observed,
}

/// Whether to hold the eviction in `case`: `Ok` if the surge the controller is making (or has
/// made) can open the pod's budget, else why not.
pub fn decide(mut case: Case<'_>, config: &Config, now: Timestamp) -> Result<(), NotHeld> {
    if config.eviction_hold.is_zero() {
        return Err(NotHeld::Off);
    }
    if !case.on_draining_node {
        return Err(NotHeld::NotDraining);
    }
    if !case.refused {
        return Err(NotHeld::BudgetOpen);
    }
    if !is_displaceable(case.pod) {
        return Err(NotHeld::NotDisplaceable);
    }
    let previous = case.observed.previous.as_ref().and_then(degraded_reason);
    if previous.as_deref() == Some(reasons::UNSCHEDULABLE) {
        return Err(NotHeld::Unschedulable);
    }
    case.observed.displacement = Displacement { displaced: u32::MAX, on_draining_nodes: 1 };
    case.observed.any_node_draining = true;
    case.observed.new_signal = false;
    let plan = plan(&case.observed, config, now);
    match plan.outcome {
        _ if plan.degraded.is_some() => Err(NotHeld::SurgeCannotOpen),
        Outcome::Started | Outcome::SteppedUp | Outcome::Resurged | Outcome::Held => Ok(()),
        _ => Err(NotHeld::SurgeCannotOpen),
    }
}

/// How many held evictions `pdb` lets through now: its `disruptionsAllowed`, once its status is
/// current (`observedGeneration >= generation`, as the apiserver's own check requires), less
/// `in_flight` evictions already let through but not yet in its `disruptedPods`.
pub fn open_slots(pdb: &PodDisruptionBudget, in_flight: usize) -> usize {
    let Some(status) = pdb.status.as_ref() else { return 0 };
    if status.observed_generation.unwrap_or(0) < pdb.metadata.generation.unwrap_or(0) {
        return 0;
    }
    usize::try_from(status.disruptions_allowed).unwrap_or(0).saturating_sub(in_flight)
}

#[cfg(test)]
mod tests {
    use eviction_autoscaler_shared::config::SettingsArgs;
    use eviction_autoscaler_shared::crd::EvictionAutoScalerStatus;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;

    fn config(hold: &str) -> Config {
        let args = SettingsArgs { eviction_hold: Some(hold.into()), ..SettingsArgs::default() };
        Config::resolve(&args, None).expect("valid settings")
    }

    fn ready_pod() -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn pdb(min_available: IntOrString, allowed: i32) -> PodDisruptionBudget {
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.name = Some("web".into());
        pdb.metadata.generation = Some(1);
        pdb.spec = Some(PodDisruptionBudgetSpec { min_available: Some(min_available), ..Default::default() });
        pdb.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            observed_generation: Some(1),
            ..Default::default()
        });
        pdb
    }

    /// One replica pinned by `minAvailable`, as the webhook's replica caches it.
    fn observed(replicas: i32, min_available: IntOrString, annotations: &[(&str, &str)]) -> Observed {
        Observed {
            deployment: crate::fixtures::deployment("shop", "web", replicas, &[("app", "web")], annotations),
            namespace_enabled: true,
            pdbs: vec![pdb(min_available, 0)],
            ..Observed::default()
        }
    }

    fn case(pod: &Pod, observed: Observed) -> Case<'_> {
        Case { pod, on_draining_node: true, refused: true, observed }
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("in range")
    }

    #[test]
    fn a_refused_eviction_on_a_draining_node_is_held_when_a_surge_can_open_its_budget() {
        let pod = ready_pod();
        let held = |c: Case<'_>| decide(c, &config("10s"), now());
        assert_eq!(
            held(case(&pod, observed(1, IntOrString::Int(1), &[]))),
            Ok(()),
            "1 replica, minAvailable 1"
        );
        assert_eq!(
            held(case(&pod, observed(3, IntOrString::Int(3), &[]))),
            Ok(()),
            "3 replicas, minAvailable 3"
        );
    }

    #[test]
    fn what_the_surge_cannot_help_is_answered_at_once() {
        let pod = ready_pod();
        let held = |c: Case<'_>| decide(c, &config("10s"), now());
        assert_eq!(
            decide(case(&pod, observed(1, IntOrString::Int(1), &[])), &config("0s"), now()),
            Err(NotHeld::Off)
        );
        let descheduler =
            Case { on_draining_node: false, ..case(&pod, observed(1, IntOrString::Int(1), &[])) };
        assert_eq!(held(descheduler), Err(NotHeld::NotDraining), "a node that is not draining");
        let open = Case { refused: false, ..case(&pod, observed(1, IntOrString::Int(1), &[])) };
        assert_eq!(held(open), Err(NotHeld::BudgetOpen));
        let pending = Pod {
            status: Some(PodStatus { phase: Some("Pending".into()), ..Default::default() }),
            ..Pod::default()
        };
        assert_eq!(
            held(case(&pending, observed(1, IntOrString::Int(1), &[]))),
            Err(NotHeld::NotDisplaceable)
        );
        let all = observed(2, IntOrString::String("100%".into()), &[]);
        assert_eq!(
            held(case(&pod, all)),
            Err(NotHeld::SurgeCannotOpen),
            "a budget that scales with replicas"
        );
        let beyond = observed(1, IntOrString::Int(3), &[]);
        assert_eq!(held(case(&pod, beyond)), Err(NotHeld::SurgeCannotOpen), "needs 3, maxSurge allows 2");
        let opted_out = observed(1, IntOrString::Int(1), &[("eviction-autoscaler.azure.com/surge", "false")]);
        assert_eq!(held(case(&pod, opted_out)), Err(NotHeld::SurgeCannotOpen));
        let mut two = observed(1, IntOrString::Int(1), &[]);
        two.pdbs.push(pdb(IntOrString::Int(1), 0));
        assert_eq!(held(case(&pod, two)), Err(NotHeld::SurgeCannotOpen), "two PDBs: every eviction fails");
        let out_of_scope = Observed { namespace_enabled: false, ..observed(1, IntOrString::Int(1), &[]) };
        assert_eq!(held(case(&pod, out_of_scope)), Err(NotHeld::SurgeCannotOpen));
    }

    #[test]
    fn a_deployment_whose_surge_pods_are_unschedulable_is_not_held_for() {
        let pod = ready_pod();
        let mut stuck = observed(1, IntOrString::Int(1), &[]);
        stuck.previous = Some(EvictionAutoScalerStatus {
            conditions: vec![Condition {
                type_: "Degraded".into(),
                status: "True".into(),
                reason: reasons::UNSCHEDULABLE.into(),
                message: String::new(),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
                observed_generation: None,
            }],
            ..EvictionAutoScalerStatus::default()
        });
        assert_eq!(decide(case(&pod, stuck), &config("10s"), now()), Err(NotHeld::Unschedulable));
    }

    #[test]
    fn a_budget_lets_through_what_it_allows_less_what_is_on_its_way_once_its_status_is_current() {
        let mut budget = pdb(IntOrString::Int(1), 2);
        assert_eq!(open_slots(&budget, 0), 2);
        assert_eq!(open_slots(&budget, 1), 1, "one let through, not yet in disruptedPods");
        assert_eq!(open_slots(&budget, 3), 0);
        budget.metadata.generation = Some(2);
        assert_eq!(open_slots(&budget, 0), 0, "a spec change the disruption controller has not seen");
        budget.status = None;
        assert_eq!(open_slots(&budget, 0), 0);
    }
}
