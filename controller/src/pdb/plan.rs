//! The reconciler's decisions: one Deployment (`plan_deployment`) and one PDB (`plan_pdb`).
//!
//! One write per pass: the runtime performs the planned action, and the watch event that
//! write causes (or a requeue) plans again until the plan is `Nothing` or `Skip`.
//!
//! Exactly-one-PDB rule. For every pod template, at most one PDB may cover it (two make
//! every eviction answer 500). A user's PDB always wins: our PDB covering the same template
//! is retired. Between two default PDBs (overlapping selectors of different Deployments)
//! the one whose name sorts first stays, and the other's Deployment retires its own; no PDB
//! is ever created that would put a second budget on any template. Each decision uses only
//! the namespace's PDBs and Deployments, so every Deployment's plan reaches the same verdict
//! and nothing flaps.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::keys;
use eviction_autoscaler_shared::scope::{Enablement, namespace_scope, pdb_create_enabled};
use eviction_autoscaler_shared::selector::{matches, pdb_covers_template};

use super::action::{Action, deployment_subject};
use super::catalogue::{DeleteReason, EventSubject, PlannedEvent, SkipReason};
use super::desired::{Autoscaler, NoPdb, desired_pdb, same_selector};
use super::name::default_pdb_name;
use super::ownership::{HandOverPdb, OwnedPdb, crd_owner_reference, is_go_project_pdb, is_ours};

/// What the reconciler knows about one namespace (from its caches).
#[derive(Clone, Copy, Debug)]
pub struct NamespaceView<'a> {
    pub namespace: &'a Namespace,
    /// Every PDB in the namespace, whoever owns it.
    pub pdbs: &'a [PodDisruptionBudget],
    /// Every Deployment in the namespace (for overlapping selectors between Deployments):
    /// only their names and pod template labels are read, and the runtime passes no more.
    pub deployments: &'a [Deployment],
}

/// A plan: the one action to take now, and Events not tied to a write (invalid annotation
/// values, emitted as Warnings and otherwise treated as unset: never an error loop).
#[derive(Clone, Debug, PartialEq)]
pub struct DeploymentPlan {
    pub action: Action,
    pub events: Vec<PlannedEvent>,
    /// The Deployment, as the subject of [`Action::event`].
    pub subject: EventSubject,
}

impl DeploymentPlan {
    /// The Event for [`DeploymentPlan::action`], to emit once it succeeded.
    pub fn action_event(&self) -> Option<PlannedEvent> {
        self.action.event(&self.subject)
    }
}

/// The template labels of a Deployment's pods.
pub(crate) fn template_labels(deployment: &Deployment) -> Option<&BTreeMap<String, String>> {
    deployment.spec.as_ref()?.template.metadata.as_ref()?.labels.as_ref()
}

/// Does `pdb` cover pods with `labels`? An unevaluable selector covers nothing, as for the
/// eviction subresource (which skips PDBs whose selector does not convert).
pub(crate) fn covers(pdb: &PodDisruptionBudget, labels: Option<&BTreeMap<String, String>>) -> bool {
    pdb_covers_template(pdb.spec.as_ref().and_then(|spec| spec.selector.as_ref()), labels).unwrap_or(false)
}

fn name_of(pdb: &PodDisruptionBudget) -> &str {
    pdb.metadata.name.as_deref().unwrap_or_default()
}

/// Owned PDBs that are `deployment_name`'s: our name for it, its `target` annotation, or
/// the Go project's PDB for it. The first is the one to keep (our name, else the Go
/// project's, else the first by name); the rest are duplicates.
pub(crate) fn owned_for<'a>(
    deployment_name: &str,
    pdbs: &'a [PodDisruptionBudget],
) -> Vec<&'a PodDisruptionBudget> {
    let ours = default_pdb_name(deployment_name);
    let mut found: Vec<&PodDisruptionBudget> = pdbs
        .iter()
        .filter(|pdb| is_ours(&pdb.metadata))
        .filter(|pdb| {
            name_of(pdb) == ours
                || pdb.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET)).map(String::as_str)
                    == Some(deployment_name)
                || is_go_project_pdb(pdb, deployment_name)
        })
        .collect();
    found.sort_by_key(|pdb| {
        (name_of(pdb) != ours, !is_go_project_pdb(pdb, deployment_name), name_of(pdb).to_owned())
    });
    found
}

/// Is a PDB that is not ours but still has our owner reference about this Deployment?
fn related_hand_over(pdb: &PodDisruptionBudget, deployment_name: &str) -> bool {
    let target = pdb.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET));
    name_of(pdb) == default_pdb_name(deployment_name)
        || name_of(pdb) == deployment_name
        || target.map(String::as_str) == Some(deployment_name)
}

/// The PDB, other than ours (`kept_name`) and `ignored`, that forbids our PDB: it covers
/// the Deployment's own pods, or the pods of another Deployment our selector also covers.
/// A user's PDB always forbids ours; a default PDB only if its name sorts before ours, or if
/// ours does not exist yet (never create a second budget on any pod).
fn conflicting_pdb<'a>(
    deployment: &Deployment,
    our_selector: &LabelSelector,
    kept_name: Option<&str>,
    ignored: &[&PodDisruptionBudget],
    view: &NamespaceView<'a>,
) -> Option<(SkipReason, &'a PodDisruptionBudget)> {
    let candidates = || {
        view.pdbs.iter().filter(|pdb| {
            Some(name_of(pdb)) != kept_name && !ignored.iter().any(|i| name_of(i) == name_of(pdb))
        })
    };
    let wins_over_ours = |pdb: &PodDisruptionBudget| {
        !is_ours(&pdb.metadata) || kept_name.is_none_or(|kept| name_of(pdb) < kept)
    };
    let own_labels = template_labels(deployment);
    // Users' PDBs first, so the Event names the PDB the user wrote.
    let mut own =
        candidates().filter(|pdb| covers(pdb, own_labels) && wins_over_ours(pdb)).collect::<Vec<_>>();
    own.sort_by_key(|pdb| is_ours(&pdb.metadata));
    if let Some(pdb) = own.first() {
        let reason = if is_ours(&pdb.metadata) {
            SkipReason::CoveredByDefaultPdb
        } else {
            SkipReason::CoveredByUserPdb
        };
        return Some((reason, pdb));
    }
    let others = view.deployments.iter().filter(|other| {
        other.metadata.name != deployment.metadata.name
            && matches(our_selector, template_labels(other).unwrap_or(&BTreeMap::new())).unwrap_or(false)
    });
    for other in others {
        let labels = template_labels(other);
        if let Some(pdb) = candidates().find(|pdb| covers(pdb, labels) && wins_over_ours(pdb)) {
            return Some((SkipReason::WouldOverlapOtherPdb, pdb));
        }
    }
    None
}

/// The decision for one Deployment: create, sync, adopt, delete, retire or hand over its
/// default PDB, or skip it (with why). Only Deployments are planned: StatefulSets and other
/// workloads never get a default PDB (their ordered rollouts conflict with surges, as in the
/// Go project), so nothing is planned or looped on for them.
pub fn plan_deployment(
    deployment: &Deployment,
    autoscaler: Option<&Autoscaler>,
    view: &NamespaceView,
    config: &Config,
    crd_uid: &str,
) -> DeploymentPlan {
    let subject = deployment_subject(deployment);
    let mut events = Vec::new();
    let namespace_name = view.namespace.metadata.name.as_deref().unwrap_or_default();
    let scope = namespace_scope(
        namespace_name,
        view.namespace.metadata.annotations.as_ref(),
        &config.actioned_namespaces,
        config.enabled_by_default,
    );
    if let Some(invalid) = &scope.invalid_annotation {
        events.push(PlannedEvent::invalid_annotation(namespace_subject(view.namespace), invalid));
    }
    let opt_in = pdb_create_enabled(deployment.metadata.annotations.as_ref());
    if let Some(invalid) = &opt_in.invalid_annotation {
        events.push(PlannedEvent::invalid_annotation(subject.clone(), invalid));
    }
    let action = decide(deployment, autoscaler, view, config, crd_uid, &scope, &opt_in);
    DeploymentPlan { action, events, subject }
}

fn skip(reason: SkipReason, note: impl Into<String>) -> Action {
    Action::Skip { reason, note: note.into() }
}

fn decide(
    deployment: &Deployment,
    autoscaler: Option<&Autoscaler>,
    view: &NamespaceView,
    config: &Config,
    crd_uid: &str,
    scope: &Enablement,
    opt_in: &Enablement,
) -> Action {
    let Some(name) = deployment.metadata.name.as_deref().filter(|name| !name.is_empty()) else {
        return skip(SkipReason::MissingName, "the Deployment has no name");
    };
    if let Some(pdb) = view.pdbs.iter().filter(|pdb| related_hand_over(pdb, name)).find_map(HandOverPdb::of) {
        return Action::HandOver { pdb };
    }
    let mine = owned_for(name, view.pdbs);
    let (kept, duplicates) = match mine.split_first() {
        Some((kept, rest)) => (Some(*kept), rest),
        None => (None, &[][..]),
    };
    if let Some(pdb) = duplicates.iter().find_map(|pdb| OwnedPdb::of(pdb)) {
        return Action::Delete { pdb, reason: DeleteReason::Duplicate };
    }
    let kept_owned = kept.and_then(OwnedPdb::of);
    let remove = |delete: DeleteReason, reason: SkipReason, note: &str| match kept_owned.clone() {
        Some(pdb) => Action::Delete { pdb, reason: delete },
        None => skip(reason, note),
    };
    if deployment.metadata.deletion_timestamp.is_some() {
        return remove(
            DeleteReason::DeploymentDeleted,
            SkipReason::DeploymentDeleting,
            "the Deployment is being deleted",
        );
    }
    if !scope.enabled {
        return remove(
            DeleteReason::NamespaceDisabled,
            SkipReason::NamespaceDisabled,
            "the namespace is not enabled",
        );
    }
    // Off stops creating, not managing: a PDB we (or the Go project, whose chart defaults to
    // on) made stays, and stays in sync, as a stale minAvailable would block drains for good.
    if !config.pdb_create && kept_owned.is_none() {
        return skip(SkipReason::PdbCreateDisabled, "pdb.create is off");
    }
    if !opt_in.enabled {
        let note = format!("the Deployment has {}: \"false\"", keys::PDB_CREATE);
        return remove(DeleteReason::OptedOut, SkipReason::OptedOut, &note);
    }
    let mut desired = match desired_pdb(deployment, autoscaler, config, crd_uid) {
        Ok(desired) => desired,
        Err(NoPdb { reason, note }) => {
            return match (reason, kept_owned) {
                (SkipReason::NoSelector, Some(pdb)) => {
                    Action::Delete { pdb, reason: DeleteReason::NoSelector }
                }
                (SkipReason::ZeroMinAvailable, Some(pdb)) => {
                    Action::Delete { pdb, reason: DeleteReason::ZeroMinAvailable }
                }
                _ => skip(reason, note),
            };
        }
    };
    let our_selector = desired.spec.as_ref().and_then(|spec| spec.selector.clone()).unwrap_or_default();
    let kept_name = kept.map(name_of);
    if let Some((reason, other)) = conflicting_pdb(deployment, &our_selector, kept_name, duplicates, view) {
        let other_name = name_of(other).to_owned();
        return match kept_owned {
            Some(pdb) => Action::Retire { pdb, covered_by: other_name },
            None => skip(reason, format!("PodDisruptionBudget {other_name} already covers these pods")),
        };
    }
    let (Some(kept), Some(owned)) = (kept, kept_owned) else {
        let wanted = desired.metadata.name.clone().unwrap_or_default();
        if view.pdbs.iter().any(|pdb| name_of(pdb) == wanted) {
            return skip(
                SkipReason::NameTaken,
                format!(
                    "a PodDisruptionBudget named {wanted} exists, is not ours and does not cover the Deployment"
                ),
            );
        }
        if view.namespace.status.as_ref().and_then(|status| status.phase.as_deref()) == Some("Terminating") {
            return skip(SkipReason::NamespaceTerminating, "the namespace is being deleted");
        }
        return Action::Create { pdb: Box::new(desired) };
    };
    let spec = kept.spec.clone().unwrap_or_default();
    let desired_spec = desired.spec.clone().unwrap_or_default();
    let drifted = kept.metadata.owner_references.as_deref() != Some(&[crd_owner_reference(crd_uid)][..])
        || kept.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET)).map(String::as_str)
            != Some(name)
        || !same_selector(spec.selector.as_ref(), &our_selector)
        || spec.max_unavailable.is_some()
        || spec.unhealthy_pod_eviction_policy != desired_spec.unhealthy_pod_eviction_policy;
    if drifted {
        desired.metadata.name = kept.metadata.name.clone();
        return Action::Adopt {
            pdb: owned,
            desired: Box::new(desired),
            from_go_project: is_go_project_pdb(kept, name),
        };
    }
    match desired_spec.min_available {
        Some(IntOrString::Int(value)) if spec.min_available != Some(IntOrString::Int(value)) => {
            Action::UpdateMinAvailable { pdb: owned, value }
        }
        _ => Action::Nothing,
    }
}

fn namespace_subject(namespace: &Namespace) -> EventSubject {
    EventSubject {
        api_version: "v1",
        kind: "Namespace",
        namespace: None,
        name: namespace.metadata.name.clone().unwrap_or_default(),
        uid: namespace.metadata.uid.clone(),
    }
}

/// The decision for one PDB, from the PDB watch and at start: hand over a PDB whose
/// `ownedBy` was removed, delete an owned PDB whose Deployment is gone. Everything else is
/// the Deployment's plan ([`affected_deployments`] says which to re-plan).
///
/// `deployments` must be the namespace's complete, synced Deployment list: an owned PDB is
/// deleted when none of them is its target.
pub fn plan_pdb(pdb: &PodDisruptionBudget, deployments: &[Deployment]) -> Action {
    if let Some(pdb) = HandOverPdb::of(pdb) {
        return Action::HandOver { pdb };
    }
    let Some(owned) = OwnedPdb::of(pdb) else { return Action::Nothing };
    let target = pdb.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET));
    let has_target =
        deployments.iter().filter_map(|d| d.metadata.name.as_deref()).any(|deployment| match target {
            Some(target) => target == deployment,
            None => name_of(pdb) == default_pdb_name(deployment) || name_of(pdb) == deployment,
        });
    if has_target {
        Action::Nothing
    } else {
        Action::Delete { pdb: owned, reason: DeleteReason::DeploymentDeleted }
    }
}

/// How long after its creation a default PDB is kept while its Deployment cannot be found:
/// the admission path creates it as soon as our webhook has answered, but the apiserver
/// stores the Deployment only once every other validating webhook has answered too (called
/// in parallel, each for at most 30 s), or refuses it after all.
pub const ADMISSION_GRACE: Duration = Duration::from_secs(35);

/// The name of the Deployment an owned PDB is for: its `target` annotation, else its name
/// less [`super::NAME_SUFFIX`].
pub fn target_of(pdb: &PodDisruptionBudget) -> String {
    let name = name_of(pdb);
    match pdb.metadata.annotations.as_ref().and_then(|a| a.get(keys::TARGET)) {
        Some(target) => target.clone(),
        None => name.strip_suffix(super::NAME_SUFFIX).unwrap_or(name).to_owned(),
    }
}

/// For an owned PDB whose Deployment is neither cached nor in the API ([`plan_pdb`] said
/// delete): how long to wait before deleting it, `None` to delete it now. A Deployment seen
/// deleted is gone for good; a PDB younger than [`ADMISSION_GRACE`] (by the apiserver's
/// creation time against `now`, both wall clocks) may have been created at its Deployment's
/// admission, and is looked at again once that old.
pub fn wait_for_target(
    pdb: &PodDisruptionBudget,
    target_seen_deleted: bool,
    now: jiff::Timestamp,
) -> Option<Duration> {
    if target_seen_deleted {
        return None;
    }
    let created = pdb.metadata.creation_timestamp.as_ref()?.0;
    let grace = jiff::SignedDuration::try_from(ADMISSION_GRACE).ok()?;
    let left = grace.checked_sub(now.duration_since(created))?;
    // A creation time ahead of this clock counts as new, for no longer than the grace.
    Duration::try_from(left).ok().filter(|left| !left.is_zero()).map(|left| left.min(ADMISSION_GRACE))
}

/// Deployments to re-plan after `pdb` was added, changed or deleted: those whose pods it
/// covers and the one it targets.
pub fn affected_deployments<'a>(
    pdb: &PodDisruptionBudget,
    deployments: &'a [Deployment],
) -> Vec<&'a Deployment> {
    let target = pdb.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET));
    deployments
        .iter()
        .filter(|deployment| {
            let name = deployment.metadata.name.as_deref();
            covers(pdb, template_labels(deployment))
                || (name.is_some() && name == target.map(String::as_str))
                || name.is_some_and(|name| name_of(pdb) == default_pdb_name(name))
        })
        .collect()
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "convergence_tests.rs"]
mod convergence_tests;
