//! What a PodDisruptionBudget does to a drain, and whether our surge gets the drain through.
//! One judgement ([`judge`]) for the read-only `audit` command, which answers "will my next
//! drain stall?" before an upgrade from the pods it lists, and for the controller's metrics of
//! the same, which it computes from the PDB statuses it watches.
//! [`surge_opens`] applies the surge decision's own rules (`resolve_max_surge`,
//! `min_replicas_to_open`, `surge_target`), so the audit cannot promise what the surge won't do.
//!
//! Budgets are computed from the pods a PDB selects with the disruption controller's own
//! arithmetic ([`crate::budget`]), so percentages round as upstream does. Class names follow
//! the Go project's PDB gauge where the meaning is the same (`blocks_all`, `no_effect`); its
//! `tight_budget` (`minAvailable: 1` on two replicas) lets one eviction through at a time and
//! is `ok` here, and a budget closed only because pods are not Ready is `unhealthy`.

use k8s_openapi::api::apps::v1::DeploymentStrategy;
use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::budget::{BudgetError, BudgetStatus, PodCounts, budget_status, min_replicas_to_open};
use crate::keys;
use crate::surge::{SurgeError, resolve_max_surge, surge_target};

/// One pod a PDB selects, as the judgement needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedPod {
    /// The pod's name.
    pub name: String,
    /// Ready and not terminating: what the disruption controller counts as healthy.
    pub healthy: bool,
    /// How many PDBs select it, this one included.
    pub budgets: usize,
}

/// A PDB with the pods it selects.
#[derive(Clone, Copy, Debug)]
pub struct SelectedBudget<'a> {
    /// Its spec.
    pub spec: &'a PodDisruptionBudgetSpec,
    /// Every pod it selects.
    pub pods: &'a [SelectedPod],
    /// Σ `spec.replicas` over the pods' distinct controllers (upstream `getExpectedScale`):
    /// what a percentage or `maxUnavailable` counts; 0 when the pods have none.
    pub controller_scale: i32,
}

/// What a PDB does to a drain now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PdbClass {
    /// No eviction can pass even with every selected pod healthy: `minAvailable` at or above
    /// the pods, `maxUnavailable: 0`, `minAvailable: 100%`, a single replica under
    /// `minAvailable: 1`, or `maxUnavailable` (or a percentage) over pods with no controller.
    BlocksAll,
    /// Would let an eviction through with every pod healthy, lets none now: these pods are
    /// not Ready.
    Unhealthy {
        /// The selected pods that are not healthy.
        not_ready: Vec<String>,
        /// Whether `unhealthyPodEvictionPolicy: AlwaysAllow` would let those pods be evicted
        /// (false when it is set already, or the default policy lets them go anyway).
        always_allow_frees_them: bool,
    },
    /// These pods are selected by more than one PDB: every eviction of them fails (HTTP 500).
    Overlapping {
        /// The pods under two or more budgets (judged from the status: the Deployments).
        pods: Vec<String>,
    },
    /// Selects no pod, or lets every selected pod be disrupted.
    NoEffect,
    /// Lets at least one eviction through now.
    Ok,
}

impl PdbClass {
    /// Every class's [`name`](Self::name), in the order reports list them.
    pub const NAMES: [&str; 5] = ["blocks_all", "unhealthy", "overlapping", "no_effect", "ok"];

    /// The metric label and JSON value of the class.
    pub fn name(&self) -> &'static str {
        match self {
            PdbClass::BlocksAll => "blocks_all",
            PdbClass::Unhealthy { .. } => "unhealthy",
            PdbClass::Overlapping { .. } => "overlapping",
            PdbClass::NoEffect => "no_effect",
            PdbClass::Ok => "ok",
        }
    }

    /// Whether a drain now would stall on this PDB's pods (without our help).
    pub fn blocks_drain(&self) -> bool {
        matches!(self, PdbClass::BlocksAll | PdbClass::Unhealthy { .. } | PdbClass::Overlapping { .. })
    }
}

/// A PDB as the judgement reads it: its budget now and with every selected pod healthy, and
/// the names of what it selects that is unhealthy or under another budget too. The audit
/// derives it from the pods ([`SelectedBudget::facts`]); the controller's metrics, which
/// watch no pods, from the status the disruption controller wrote ([`BudgetFacts::from_status`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetFacts<'a> {
    /// Its spec.
    pub spec: &'a PodDisruptionBudgetSpec,
    /// It selects at least one pod.
    pub selects_pods: bool,
    /// The budget as it is now.
    pub now: BudgetStatus,
    /// The budget with every selected pod healthy.
    pub all_healthy: BudgetStatus,
    /// The selected pods that are not healthy (none named when judged from the status).
    pub not_ready: Vec<String>,
    /// What it selects that another PDB selects too: pods, or, judged from the status,
    /// Deployments whose pod template both select.
    pub overlapping: Vec<String>,
}

impl SelectedBudget<'_> {
    /// The facts of the budget, computed from its pods with the disruption controller's arithmetic.
    pub fn facts(&self) -> Result<BudgetFacts<'_>, BudgetError> {
        let matched = i32::try_from(self.pods.len()).unwrap_or(i32::MAX);
        let counts = |healthy| PodCounts {
            controller_scale: self.controller_scale,
            matched_pods: matched,
            healthy_pods: healthy,
        };
        let healthy = i32::try_from(self.pods.iter().filter(|p| p.healthy).count()).unwrap_or(i32::MAX);
        Ok(BudgetFacts {
            spec: self.spec,
            selects_pods: !self.pods.is_empty(),
            now: budget_status(self.spec, counts(healthy))?,
            all_healthy: budget_status(self.spec, counts(matched))?,
            not_ready: self.pods.iter().filter(|p| !p.healthy).map(|p| p.name.clone()).collect(),
            overlapping: self.pods.iter().filter(|p| p.budgets > 1).map(|p| p.name.clone()).collect(),
        })
    }
}

impl<'a> BudgetFacts<'a> {
    /// The facts as the disruption controller last wrote them in `status`: the budget now is
    /// that status, and with every pod healthy it is recomputed for `expectedPods` healthy pods
    /// (what they are when the pods and their controllers agree). A budget whose pods have no
    /// controller may show `expectedPods: 0` with healthy pods: it still selects them.
    pub fn from_status(
        spec: &'a PodDisruptionBudgetSpec,
        status: &PodDisruptionBudgetStatus,
        overlapping: Vec<String>,
    ) -> Result<Self, BudgetError> {
        let now = BudgetStatus {
            expected_pods: status.expected_pods,
            desired_healthy: status.desired_healthy,
            current_healthy: status.current_healthy,
            disruptions_allowed: status.disruptions_allowed,
        };
        Ok(BudgetFacts {
            spec,
            selects_pods: now.expected_pods > 0 || now.current_healthy > 0,
            now,
            all_healthy: budget_status(spec, PodCounts::all_ready(now.expected_pods))?,
            not_ready: Vec::new(),
            overlapping,
        })
    }
}

/// Classifies one PDB from its pods ([`judge`] on [`SelectedBudget::facts`]).
pub fn classify(budget: SelectedBudget) -> Result<PdbClass, BudgetError> {
    Ok(judge(budget.facts()?))
}

/// The class of a PDB with these facts. Overlaps are checked first (the apiserver refuses
/// before it reads any budget), then the budget with every pod healthy, then as it is now.
pub fn judge(facts: BudgetFacts) -> PdbClass {
    if !facts.selects_pods {
        return PdbClass::NoEffect;
    }
    if !facts.overlapping.is_empty() {
        return PdbClass::Overlapping { pods: facts.overlapping };
    }
    let all_healthy = facts.all_healthy;
    if all_healthy.expected_pods > 0 && all_healthy.desired_healthy == 0 {
        return PdbClass::NoEffect;
    }
    if all_healthy.disruptions_allowed == 0 {
        return PdbClass::BlocksAll;
    }
    let now = facts.now;
    if now.disruptions_allowed > 0 {
        return PdbClass::Ok;
    }
    // The apiserver lets a not-Ready pod go under the default policy when the budget is met
    // (`currentHealthy >= desiredHealthy > 0`), and always under AlwaysAllow.
    let always_allow = facts.spec.unhealthy_pod_eviction_policy.as_deref() == Some("AlwaysAllow");
    let freed_anyway = now.current_healthy >= now.desired_healthy && now.desired_healthy > 0;
    PdbClass::Unhealthy {
        not_ready: facts.not_ready,
        always_allow_frees_them: !always_allow && !freed_anyway,
    }
}

/// What owns the pods a blocking PDB selects, as far as a surge cares.
#[derive(Clone, Debug, PartialEq)]
pub enum Owner<'a> {
    /// One Deployment (through its ReplicaSets).
    Deployment(DeploymentView<'a>),
    /// Pods with no controller.
    None,
    /// Another controller kind, e.g. `StatefulSet`.
    Other(String),
    /// Pods of more than one Deployment or controller (their names).
    Several(Vec<String>),
}

/// The Deployment whose surge would open a PDB, and what a surge of it depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeploymentView<'a> {
    /// Its name.
    pub name: &'a str,
    /// `spec.strategy`.
    pub strategy: Option<&'a DeploymentStrategy>,
    /// Its replicas before any surge (`spec.replicas`, or the autoscaler's minimum).
    pub baseline: i32,
    /// The HPA or KEDA maximum, when an autoscaler manages it.
    pub autoscaler_max: Option<i32>,
    /// Its namespace is in the product's scope.
    pub in_scope: bool,
    /// Surges allowed (`eviction-autoscaler.azure.com/surge` not `"false"`).
    pub surge_enabled: bool,
    /// How many more of its pods the schedulable nodes could hold, estimated from requests
    /// and allocatable (not a scheduler simulation); `None` when unknown.
    pub room_estimate: Option<i32>,
}

/// Why our surge cannot open a blocking PDB.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SurgeBlocker {
    /// Every eviction of a pod under two PDBs fails before any budget is read.
    #[error("its pods are selected by more than one PodDisruptionBudget; keep one of them")]
    Overlapping,
    /// Bare pods: nothing to scale.
    #[error("its pods have no controller to scale; run them under a Deployment")]
    NoOwner,
    /// Only Deployments are surged.
    #[error("its pods belong to a {0}, which is never surged; relax the budget (maxUnavailable: 1)")]
    NotADeployment(String),
    /// A budget over several workloads: no one surge opens it.
    #[error("it selects the pods of {}; give each workload its own PodDisruptionBudget", .0.join(", "))]
    SeveralOwners(Vec<String>),
    /// The namespace is not in scope.
    #[error("its namespace is not in eviction-autoscaler's scope; annotate the namespace {key}: \"true\"", key = keys::NAMESPACE_ENABLE)]
    NotInScope,
    /// The Deployment opted out.
    #[error("Deployment {0} opted out of surges; remove its annotation {key}: \"false\"", key = keys::SURGE)]
    OptedOut(String),
    /// `Recreate`, `maxSurge: 0` and no override, or an invalid value.
    #[error(transparent)]
    CannotSurge(SurgeError),
    /// A budget field that cannot be read (validation normally prevents it).
    #[error(transparent)]
    InvalidBudget(BudgetError),
    /// `maxUnavailable: 0` or `minAvailable: 100%`: more replicas never open it.
    #[error(
        "the budget scales with the replicas, so no surge opens it; set maxUnavailable: 1 or an integer minAvailable"
    )]
    BudgetScales,
    /// The surge may not reach the replicas the budget needs.
    #[error("it opens at {needed} replicas but a surge may reach {reachable}; {fix}")]
    TooSmall {
        /// The smallest replica count at which the budget allows an eviction.
        needed: i32,
        /// The highest count a surge may reach.
        reachable: i32,
        /// What to raise.
        fix: &'static str,
    },
    /// Not enough allocatable room for the surge pods (an estimate).
    #[error(
        "about {room} more pod(s) fit on the schedulable nodes, {wanted} needed (estimate from requests); add nodes or enable a cluster autoscaler"
    )]
    NoRoom {
        /// Pods that fit, estimated.
        room: i32,
        /// Surge pods needed.
        wanted: i32,
    },
}

impl SurgeBlocker {
    /// Every [`reason`](Self::reason).
    pub const REASONS: [&str; 11] = [
        "overlapping",
        "no_owner",
        "not_a_deployment",
        "several_owners",
        "not_in_scope",
        "opted_out",
        "cannot_surge",
        "invalid_budget",
        "budget_scales",
        "surge_too_small",
        "no_room",
    ];

    /// The metric label of the reason.
    pub fn reason(&self) -> &'static str {
        match self {
            SurgeBlocker::Overlapping => "overlapping",
            SurgeBlocker::NoOwner => "no_owner",
            SurgeBlocker::NotADeployment(_) => "not_a_deployment",
            SurgeBlocker::SeveralOwners(_) => "several_owners",
            SurgeBlocker::NotInScope => "not_in_scope",
            SurgeBlocker::OptedOut(_) => "opted_out",
            SurgeBlocker::CannotSurge(_) => "cannot_surge",
            SurgeBlocker::InvalidBudget(_) => "invalid_budget",
            SurgeBlocker::BudgetScales => "budget_scales",
            SurgeBlocker::TooSmall { .. } => "surge_too_small",
            SurgeBlocker::NoRoom { .. } => "no_room",
        }
    }
}

/// Whether our surge would open a PDB of class `class` when a drain displaces `displaced`
/// of its pods (at least one counts): `Ok(())` when it would (or the PDB blocks nothing), else why not, with the
/// one change that fixes it. The same rules the surge decision applies.
pub fn surge_opens(
    class: &PdbClass,
    spec: &PodDisruptionBudgetSpec,
    owner: &Owner,
    displaced: i32,
    zero_surge_override: Option<&IntOrString>,
) -> Result<(), SurgeBlocker> {
    if !class.blocks_drain() {
        return Ok(());
    }
    if matches!(class, PdbClass::Overlapping { .. }) {
        return Err(SurgeBlocker::Overlapping);
    }
    let deployment = match owner {
        Owner::Deployment(deployment) => deployment,
        Owner::None => return Err(SurgeBlocker::NoOwner),
        Owner::Other(kind) => return Err(SurgeBlocker::NotADeployment(kind.clone())),
        Owner::Several(names) => return Err(SurgeBlocker::SeveralOwners(names.clone())),
    };
    if !deployment.in_scope {
        return Err(SurgeBlocker::NotInScope);
    }
    if !deployment.surge_enabled {
        return Err(SurgeBlocker::OptedOut(deployment.name.to_owned()));
    }
    let baseline = deployment.baseline;
    let resolved = resolve_max_surge(deployment.strategy, baseline, zero_surge_override)
        .map_err(SurgeBlocker::CannotSurge)?;
    let needed =
        min_replicas_to_open(spec).map_err(SurgeBlocker::InvalidBudget)?.ok_or(SurgeBlocker::BudgetScales)?;
    let reachable = surge_target(baseline, displaced.max(1), resolved.amount, deployment.autoscaler_max);
    if needed > reachable {
        let capped_by_autoscaler =
            deployment.autoscaler_max.is_some_and(|max| max < baseline + resolved.amount);
        let fix = if capped_by_autoscaler {
            "raise the autoscaler's maximum"
        } else {
            "raise maxSurge or lower minAvailable"
        };
        return Err(SurgeBlocker::TooSmall { needed, reachable, fix });
    }
    // The budget opens once the pods up to `needed` are Ready (the rest of the surge may
    // wait), and a closed budget needs at least one new pod, whatever is not Ready now.
    let wanted = (needed - baseline).max(1);
    match deployment.room_estimate {
        Some(room) if room < wanted => Err(SurgeBlocker::NoRoom { room, wanted }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
