//! Test fixtures: objects as the API server would return them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, NamespaceStatus};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_shared::keys;

use super::ownership::crd_owner_reference;

pub const CRD_UID: &str = "crd-uid";

pub use crate::fixtures::labels;

pub fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
    }
}

/// The configuration with `pdb.create` on and namespace `team` actioned.
pub fn config() -> Config {
    let args = SettingsArgs {
        pdb_create: Some("true".into()),
        actioned_namespaces: Some("kube-system,team".into()),
        ..SettingsArgs::default()
    };
    match Config::resolve(&args, None) {
        Ok(config) => config,
        Err(error) => panic!("fixture config: {error}"),
    }
}

/// A Deployment `name` in namespace `team` whose selector and template labels are `pairs`.
pub fn deployment(name: &str, replicas: i32, pairs: &[(&str, &str)]) -> Deployment {
    crate::fixtures::deployment("team", name, replicas, pairs, &[])
}

pub fn namespace(name: &str, annotations: &[(&str, &str)]) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: (!annotations.is_empty()).then(|| labels(annotations)),
            uid: Some(format!("{name}-uid")),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(NamespaceStatus { phase: Some("Active".into()), ..NamespaceStatus::default() }),
    }
}

/// A user PDB (no annotations) in namespace `team` selecting `pairs`, `minAvailable: 1`.
pub fn pdb(name: &str, pairs: &[(&str, &str)]) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("team".into()),
            uid: Some(format!("{name}-uid")),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector { match_labels: Some(labels(pairs)), match_expressions: None }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}

pub fn with_annotation<T: k8s_openapi::Metadata<Ty = ObjectMeta>>(
    mut object: T,
    key: &str,
    value: &str,
) -> T {
    object.metadata_mut().annotations.get_or_insert_with(BTreeMap::new).insert(key.into(), value.into());
    object
}

pub fn with_owner(mut object: PodDisruptionBudget, owner: OwnerReference) -> PodDisruptionBudget {
    object.metadata.owner_references.get_or_insert_with(Vec::new).push(owner);
    object
}

/// Our PDB for Deployment `deployment`, as we create it: default name, CRD owner, annotations.
pub fn our_pdb(deployment: &str, min: i32, pairs: &[(&str, &str)]) -> PodDisruptionBudget {
    let mut object = pdb(&super::name::default_pdb_name(deployment), pairs);
    object = with_annotation(object, keys::OWNED_BY, keys::OWNED_BY_VALUE);
    object = with_annotation(object, keys::TARGET, deployment);
    object = with_owner(object, crd_owner_reference(CRD_UID));
    if let Some(spec) = object.spec.as_mut() {
        spec.min_available = Some(IntOrString::Int(min));
        spec.unhealthy_pod_eviction_policy = Some("AlwaysAllow".into());
    }
    object
}
