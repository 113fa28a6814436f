//! Which EvictionAutoScaler objects should exist (ARCHITECTURE.md §4.7): one per PDB that
//! protects a Deployment in scope, with the PDB's name, owned by the PDB (so it goes when the
//! PDB goes), pointing at the Deployment.

use std::collections::BTreeMap;

use eviction_autoscaler_shared::crd::{EvictionAutoScaler, EvictionAutoScalerSpec};
use eviction_autoscaler_shared::keys;
use eviction_autoscaler_shared::selector::pdb_covers_template;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};

/// The target kind the Go project writes (lowercase), kept for compatibility.
pub const TARGET_KIND: &str = "deployment";

/// Does `pdb` select the pods of `deployment` (same namespace, selector matches the template)?
pub fn pdb_covers(pdb: &PodDisruptionBudget, deployment: &Deployment) -> bool {
    let template_labels =
        deployment.spec.as_ref().and_then(|s| s.template.metadata.as_ref()?.labels.as_ref());
    pdb_selects(pdb, deployment.metadata.namespace.as_deref(), template_labels)
}

/// Does `pdb` select pods labelled `template_labels` in `namespace`?
pub fn pdb_selects(
    pdb: &PodDisruptionBudget,
    namespace: Option<&str>,
    template_labels: Option<&BTreeMap<String, String>>,
) -> bool {
    if pdb.metadata.namespace.as_deref() != namespace {
        return false;
    }
    let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
    // An invalid selector selects nothing we could act on.
    pdb_covers_template(selector, template_labels).unwrap_or(false)
}

/// The EAS for `pdb` protecting the Deployment `target`.
pub fn desired(pdb: &PodDisruptionBudget, target: &str) -> EvictionAutoScaler {
    let name = pdb.metadata.name.clone().unwrap_or_default();
    let mut eas = EvictionAutoScaler::new(
        &name,
        EvictionAutoScalerSpec {
            target_name: target.to_owned(),
            target_kind: TARGET_KIND.to_owned(),
            last_eviction: None,
        },
    );
    eas.metadata.namespace = pdb.metadata.namespace.clone();
    eas.metadata.annotations = Some(
        [
            (keys::OWNED_BY.to_owned(), keys::OWNED_BY_VALUE.to_owned()),
            (keys::TARGET.to_owned(), target.to_owned()),
        ]
        .into(),
    );
    eas.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "policy/v1".into(),
        kind: "PodDisruptionBudget".into(),
        name,
        uid: pdb.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    eas
}

/// A merge patch bringing `existing` to point at `target` and be owned by `pdb`, or `None`
/// when it already does (the Go project's objects usually do).
pub fn repair(existing: &EvictionAutoScaler, pdb: &PodDisruptionBudget, target: &str) -> Option<Value> {
    let uid = pdb.metadata.uid.as_deref().unwrap_or_default();
    let owned = existing.metadata.owner_references.iter().flatten().any(|o| o.uid == uid);
    let pointed =
        existing.spec.target_name == target && existing.spec.target_kind.eq_ignore_ascii_case(TARGET_KIND);
    if owned && pointed {
        return None;
    }
    let desired = desired(pdb, target);
    let mut patch = json!({"spec": {"targetName": target, "targetKind": TARGET_KIND}});
    if !owned {
        patch["metadata"] = json!({
            "resourceVersion": existing.metadata.resource_version,
            "ownerReferences": desired.metadata.owner_references,
        });
    }
    Some(patch)
}

/// A merge patch recording an eviction signal in `spec.lastEviction` (any replica writes it,
/// so the Lease holder learns of signals a follower received).
pub fn last_eviction_patch(pod: &str, at: jiff::Timestamp) -> Value {
    // Second precision, as the API stores metav1.Time.
    let at = jiff::Timestamp::from_second(at.as_second()).unwrap_or(at);
    json!({"spec": {"lastEviction": {"podName": pod, "evictionTime": at.to_string()}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn pdb(app: &str) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web-pdb".into()),
                namespace: Some("prod".into()),
                uid: Some("u1".into()),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_owned(), app.to_owned())].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn one_eas_per_pdb_owned_by_it() {
        let eas = desired(&pdb("web"), "alpha");
        assert_eq!(eas.metadata.name.as_deref(), Some("web-pdb"));
        assert_eq!(eas.spec.target_kind, "deployment");
        let owner = &eas.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("PodDisruptionBudget", "u1"));
        assert_eq!(repair(&eas, &pdb("web"), "alpha"), None, "nothing to repair");
        let retargeted = repair(&eas, &pdb("web"), "beta").expect("patch");
        assert_eq!(retargeted["spec"]["targetName"], "beta");
        assert!(retargeted.get("metadata").is_none());
    }

    #[test]
    fn last_eviction_has_second_precision() {
        let at = jiff::Timestamp::from_millisecond(1_700_000_000_750).expect("time");
        let patch = last_eviction_patch("web-1", at);
        assert_eq!(patch["spec"]["lastEviction"]["evictionTime"], "2023-11-14T22:13:20Z");
    }
}
