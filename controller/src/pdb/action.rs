//! What the planner asks the runtime to do, with the exact write for each action.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use eviction_autoscaler_shared::keys;

use super::catalogue::{
    DeleteReason, EventReason, EventSubject, EventType, PdbOutcome, PlannedEvent, SkipReason,
};
use super::ownership::{HandOverPdb, OwnedPdb};

/// One step towards "every in-scope Deployment protected exactly once". A write that
/// modifies or deletes a PDB can only name it through [`OwnedPdb`] (ours) or [`HandOverPdb`]
/// (drop our owner reference, nothing else), so a user's PDB can never be targeted.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// POST the PDB. AlreadyExists means done (the name is deterministic): re-plan.
    Create { pdb: Box<PodDisruptionBudget> },
    /// Set `spec.minAvailable` of our PDB ([`Action::json_patch`]).
    UpdateMinAvailable { pdb: OwnedPdb, value: i32 },
    /// Bring an owned PDB's owner reference, `target` annotation and spec to `desired`
    /// without recreating it ([`Action::json_patch`]): a PDB the Go project created
    /// (`from_go_project`, owned by the Deployment and named like it), or ours drifted
    /// (stale CRD UID, edited selector, `unhealthyPodEvictionPolicy` changed in the config).
    Adopt { pdb: OwnedPdb, desired: Box<PodDisruptionBudget>, from_go_project: bool },
    /// DELETE our PDB with [`OwnedPdb::delete_preconditions`].
    Delete { pdb: OwnedPdb, reason: DeleteReason },
    /// DELETE our PDB (with preconditions) at once: `covered_by`, another PDB, covers the
    /// same pods, and two PDBs on a pod make every eviction of it fail with 500.
    Retire { pdb: OwnedPdb, covered_by: String },
    /// PATCH ([`HandOverPdb::json_patch`]) a PDB the user took over: drop our owner
    /// reference so it survives uninstall. Never touched again afterwards.
    HandOver { pdb: HandOverPdb },
    /// Everything is as it should be.
    Nothing,
    /// No PDB is created for the Deployment (an existing one is kept only for
    /// [`SkipReason::SurgeBaselineUnknown`] and [`SkipReason::InvalidSelector`]).
    Skip { reason: SkipReason, note: String },
}

impl Action {
    /// The RFC 6902 JSON patch (`application/json-patch+json`) for the patching actions
    /// (`UpdateMinAvailable`, `Adopt`, `HandOver`); `None` for the others. Patches to owned
    /// PDBs first `test` that the PDB is the version read and still carries `ownedBy`.
    pub fn json_patch(&self) -> Option<Value> {
        match self {
            Action::UpdateMinAvailable { pdb, value } => {
                let mut ops = pdb.guard_ops();
                ops.push(json!({"op": "add", "path": "/spec/minAvailable", "value": value}));
                Some(Value::Array(ops))
            }
            Action::Adopt { pdb, desired, .. } => {
                let mut ops = pdb.guard_ops();
                let spec = desired.spec.clone().unwrap_or_default();
                let target = desired.metadata.annotations.as_ref().and_then(|all| all.get(keys::TARGET));
                ops.extend([
                    json!({"op": "add", "path": "/metadata/ownerReferences", "value": desired.metadata.owner_references}),
                    json!({"op": "add", "path": "/metadata/annotations/target", "value": target}),
                    json!({"op": "add", "path": "/spec/selector", "value": spec.selector}),
                    json!({"op": "add", "path": "/spec/minAvailable", "value": spec.min_available}),
                    // `add` with null works whether or not the field is present; null decodes as unset.
                    json!({"op": "add", "path": "/spec/maxUnavailable", "value": null}),
                    json!({"op": "add", "path": "/spec/unhealthyPodEvictionPolicy",
                        "value": spec.unhealthy_pod_eviction_policy}),
                ]);
                Some(Value::Array(ops))
            }
            Action::HandOver { pdb } => Some(pdb.json_patch()),
            _ => None,
        }
    }

    /// The owned PDB a patching action writes, and its patch (`UpdateMinAvailable`, `Adopt`).
    pub fn owned_patch(&self) -> Option<(&OwnedPdb, Value)> {
        match self {
            Action::UpdateMinAvailable { pdb, .. } | Action::Adopt { pdb, .. } => {
                Some((pdb, self.json_patch()?))
            }
            _ => None,
        }
    }

    /// The counter to increment once the action succeeded: outcome and reason label.
    pub fn outcome(&self) -> Option<(PdbOutcome, Option<&'static str>)> {
        match self {
            Action::Create { .. } => Some((PdbOutcome::Created, None)),
            Action::UpdateMinAvailable { .. } => Some((PdbOutcome::Updated, None)),
            Action::Adopt { from_go_project: true, .. } => Some((PdbOutcome::Adopted, None)),
            Action::Adopt { from_go_project: false, .. } => Some((PdbOutcome::Updated, None)),
            Action::Delete { reason, .. } => Some((PdbOutcome::Deleted, Some(reason.as_str()))),
            Action::Retire { .. } => Some((PdbOutcome::Retired, None)),
            Action::HandOver { .. } => Some((PdbOutcome::HandedOver, None)),
            Action::Skip { reason, .. } => Some((PdbOutcome::Skipped, Some(reason.as_str()))),
            Action::Nothing => None,
        }
    }

    /// The Event to emit once the action succeeded (for `Skip`: when the reason changed since
    /// the last plan, to keep `kubectl get events` readable; none for configuration-wide skips,
    /// see [`SkipReason::deserves_event`]). `deployment` is the subject of
    /// all but `HandOver`, whose subject is the PDB.
    pub fn event(&self, deployment: &EventSubject) -> Option<PlannedEvent> {
        let normal = |reason: EventReason, note: String| PlannedEvent {
            subject: deployment.clone(),
            event_type: EventType::Normal,
            reason,
            note,
        };
        Some(match self {
            Action::Create { pdb } => {
                let name = pdb.metadata.name.as_deref().unwrap_or_default();
                let min = match pdb.spec.as_ref().and_then(|spec| spec.min_available.clone()) {
                    Some(IntOrString::Int(value)) => value.to_string(),
                    Some(IntOrString::String(value)) => value,
                    None => "unset".to_owned(),
                };
                normal(
                    EventReason::PdbCreated,
                    format!("created PodDisruptionBudget {name} (minAvailable {min})"),
                )
            }
            Action::UpdateMinAvailable { pdb, value } => normal(
                EventReason::PdbUpdated,
                format!("set minAvailable of PodDisruptionBudget {} to {value}", pdb.name()),
            ),
            Action::Adopt { pdb, from_go_project: true, .. } => normal(
                EventReason::PdbAdopted,
                format!("adopted PodDisruptionBudget {} created by the Go eviction-autoscaler", pdb.name()),
            ),
            Action::Adopt { pdb, from_go_project: false, .. } => normal(
                EventReason::PdbUpdated,
                format!("restored owner, selector and policy of PodDisruptionBudget {}", pdb.name()),
            ),
            Action::Delete { pdb, reason } => normal(
                EventReason::PdbDeleted,
                format!("deleted PodDisruptionBudget {} ({})", pdb.name(), reason.as_str()),
            ),
            Action::Retire { pdb, covered_by } => normal(
                EventReason::PdbRetired,
                format!(
                    "deleted PodDisruptionBudget {}: PodDisruptionBudget {covered_by} covers the same pods \
                     (two budgets on a pod block its eviction)",
                    pdb.name()
                ),
            ),
            Action::HandOver { pdb } => PlannedEvent {
                subject: EventSubject {
                    api_version: "policy/v1",
                    kind: "PodDisruptionBudget",
                    namespace: Some(pdb.namespace().to_owned()),
                    name: pdb.name().to_owned(),
                    uid: None,
                },
                event_type: EventType::Normal,
                reason: EventReason::PdbHandedOver,
                note: format!(
                    "annotation {} removed: the PodDisruptionBudget is the user's now; dropped the \
                     eviction-autoscaler owner reference and will not touch it again",
                    keys::OWNED_BY
                ),
            },
            Action::Skip { reason, .. } if !reason.deserves_event() => return None,
            Action::Skip { reason, note } => PlannedEvent {
                subject: deployment.clone(),
                event_type: if reason.is_warning() { EventType::Warning } else { EventType::Normal },
                reason: EventReason::PdbSkipped,
                note: format!("{}: {note}", reason.as_str()),
            },
            Action::Nothing => return None,
        })
    }
}

/// The Event subject for a Deployment.
pub fn deployment_subject(deployment: &Deployment) -> EventSubject {
    EventSubject {
        api_version: "apps/v1",
        kind: "Deployment",
        namespace: deployment.metadata.namespace.clone(),
        name: deployment.metadata.name.clone().unwrap_or_default(),
        uid: deployment.metadata.uid.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::desired::desired_pdb;
    use crate::pdb::fixtures::{CRD_UID, config, deployment, our_pdb};

    #[test]
    fn patches_are_guarded_and_minimal() {
        let owned = OwnedPdb::for_test("team", "web-eviction-autoscaler", "pdb-uid", "9");
        let guard = json!([
            {"op": "test", "path": "/metadata/uid", "value": "pdb-uid"},
            {"op": "test", "path": "/metadata/annotations/ownedBy", "value": "EvictionAutoScaler"},
        ]);
        let update = Action::UpdateMinAvailable { pdb: owned.clone(), value: 5 }.json_patch();
        let mut want = guard.as_array().cloned().unwrap_or_default();
        want.push(json!({"op": "add", "path": "/spec/minAvailable", "value": 5}));
        assert_eq!(update, Some(Value::Array(want)));

        let desired = desired_pdb(&deployment("web", 3, &[("app", "web")]), None, &config(), CRD_UID);
        let Ok(desired) = desired else { panic!("{desired:?}") };
        let adopt = Action::Adopt { pdb: owned.clone(), desired: Box::new(desired), from_go_project: true }
            .json_patch();
        let ops = adopt.and_then(|v| v.as_array().cloned()).unwrap_or_default();
        assert_eq!(ops[..2], guard.as_array().cloned().unwrap_or_default()[..]);
        let set = |path: &str| ops.iter().find(|op| op["path"] == path).map(|op| op["value"].clone());
        assert_eq!(set("/spec/minAvailable"), Some(json!(3)));
        assert_eq!(set("/spec/maxUnavailable"), Some(Value::Null));
        assert_eq!(set("/metadata/annotations/target"), Some(json!("web")));
        assert_eq!(set("/spec/selector"), Some(json!({"matchLabels": {"app": "web"}})));
        assert_eq!(
            set("/metadata/ownerReferences"),
            Some(json!([{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "name": "evictionautoscalers.eviction-autoscaler.azure.com", "uid": CRD_UID}]))
        );
        assert!(ops.iter().all(|op| op["path"] != "/metadata/annotations/ownedBy" || op["op"] == "test"));
        for action in [
            Action::Delete { pdb: owned.clone(), reason: DeleteReason::OptedOut },
            Action::Retire { pdb: owned, covered_by: "x".into() },
            Action::Create { pdb: Box::new(our_pdb("web", 3, &[])) },
            Action::Nothing,
        ] {
            assert_eq!(action.json_patch(), None, "{action:?}");
        }
    }

    #[test]
    fn events_and_metrics_per_action() {
        let web = deployment_subject(&deployment("web", 3, &[]));
        let owned = OwnedPdb::for_test("team", "p", "u", "1");
        let cases = [
            (
                Action::Create { pdb: Box::new(our_pdb("web", 3, &[])) },
                Some(("PDBCreated", "Normal")),
                Some(("created", None)),
            ),
            (
                Action::UpdateMinAvailable { pdb: owned.clone(), value: 4 },
                Some(("PDBUpdated", "Normal")),
                Some(("updated", None)),
            ),
            (
                Action::Delete { pdb: owned.clone(), reason: DeleteReason::OptedOut },
                Some(("PDBDeleted", "Normal")),
                Some(("deleted", Some("OptedOut"))),
            ),
            (
                Action::Retire { pdb: owned, covered_by: "chart".into() },
                Some(("PDBRetired", "Normal")),
                Some(("retired", None)),
            ),
            (
                Action::Skip { reason: SkipReason::CoveredByUserPdb, note: "n".into() },
                Some(("PDBSkipped", "Normal")),
                Some(("skipped", Some("CoveredByUserPDB"))),
            ),
            (
                Action::Skip { reason: SkipReason::NameTaken, note: "n".into() },
                Some(("PDBSkipped", "Warning")),
                Some(("skipped", Some("NameTaken"))),
            ),
            (
                Action::Skip { reason: SkipReason::NamespaceDisabled, note: "n".into() },
                None,
                Some(("skipped", Some("NamespaceDisabled"))),
            ),
            (Action::Nothing, None, None),
        ];
        let created = Action::Create { pdb: Box::new(our_pdb("web", 3, &[])) }.event(&web).map(|e| e.note);
        assert_eq!(
            created.as_deref(),
            Some("created PodDisruptionBudget web-eviction-autoscaler (minAvailable 3)")
        );
        for (action, want_event, want_metric) in cases {
            let event = action.event(&web);
            assert_eq!(
                event.as_ref().map(|e| (e.reason.as_str(), e.event_type.as_str())),
                want_event,
                "{action:?}"
            );
            assert!(event.is_none_or(|e| e.subject == web), "{action:?}");
            assert_eq!(action.outcome().map(|(o, r)| (o.as_str(), r)), want_metric, "{action:?}");
        }
    }
}
