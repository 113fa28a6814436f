//! The PDB cache's entry: metadata, the whole spec, and the status but for its conditions.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::meta::{CachedMeta, CachedSelector, lookup_as};

/// A cached PodDisruptionBudget. Not its status conditions (the counts say the same).
#[derive(Clone, Debug, PartialEq)]
pub struct CachedPdb {
    meta: CachedMeta,
    spec: Option<CachedPdbSpec>,
    status: Option<PodDisruptionBudgetStatus>,
}

#[derive(Clone, Debug, PartialEq)]
struct CachedPdbSpec {
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
    selector: Option<CachedSelector>,
    unhealthy_pod_eviction_policy: Option<String>,
}

impl From<PodDisruptionBudget> for CachedPdb {
    fn from(pdb: PodDisruptionBudget) -> Self {
        let PodDisruptionBudget { metadata, spec, status } = pdb;
        CachedPdb {
            meta: metadata.into(),
            spec: spec.map(|spec| CachedPdbSpec {
                min_available: spec.min_available,
                max_unavailable: spec.max_unavailable,
                selector: spec.selector.map(CachedSelector::from),
                unhealthy_pod_eviction_policy: spec.unhealthy_pod_eviction_policy,
            }),
            status: status.map(|status| PodDisruptionBudgetStatus { conditions: None, ..status }),
        }
    }
}

impl CachedPdb {
    /// The PDB as decisions take it: the cached fields, nothing else.
    pub fn to_pdb(&self) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: self.meta.to_meta(),
            spec: self.spec.as_ref().map(|spec| PodDisruptionBudgetSpec {
                min_available: spec.min_available.clone(),
                max_unavailable: spec.max_unavailable.clone(),
                selector: spec.selector.as_ref().map(CachedSelector::to_selector),
                unhealthy_pod_eviction_policy: spec.unhealthy_pod_eviction_policy.clone(),
            }),
            status: self.status.clone(),
        }
    }

    /// Its metadata.
    pub fn meta(&self) -> &CachedMeta {
        &self.meta
    }
}

lookup_as!(CachedPdb, "PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::kube::decode::Decoded;

    /// A default PDB as a real apiserver returns it (`kubectl get pdb --show-managed-fields -o
    /// json` on kube-apiserver v1.35, its status written by the disruption controller).
    const RECORDED: &str = include_str!("../../../../tests/data/pdb-full.json");

    /// The recorded PDB with a user's touches: labels, `maxUnavailable` as a percentage,
    /// selector expressions, pods evicted a moment ago.
    fn variants() -> Vec<PodDisruptionBudget> {
        let recorded: PodDisruptionBudget = serde_json::from_str(RECORDED).expect("fixture");
        let mut user: serde_json::Value = serde_json::from_str(RECORDED).expect("fixture");
        user["metadata"]["labels"] = serde_json::json!({"team": "shop"});
        user["spec"] = serde_json::json!({
            "maxUnavailable": "10%",
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
        });
        user["status"]["disruptedPods"] = serde_json::json!({"web-1": "2026-12-07T10:00:00Z"});
        vec![recorded, serde_json::from_value(user).expect("a PDB")]
    }

    /// Every field but managedFields (never decoded) and the status conditions comes back as
    /// the apiserver sent it, so no decision taking the cached view can decide differently
    /// unless it reads those two.
    #[test]
    fn the_cache_keeps_every_field_but_managed_fields_and_conditions() {
        for full in variants() {
            let text = serde_json::to_string(&full).expect("serializes");
            let Decoded(decoded) =
                serde_json::from_str::<Decoded<PodDisruptionBudget>>(&text).expect("decodes");
            let cached = CachedPdb::from(decoded).to_pdb();
            let mut expected = full.clone();
            expected.metadata.managed_fields = None;
            expected.status.as_mut().expect("status").conditions = None;
            assert_eq!(cached, expected);
            assert!(
                full.metadata.managed_fields.is_some() && full.status.and_then(|s| s.conditions).is_some()
            );
        }
    }

    #[test]
    fn decisions_on_the_cached_view_are_those_on_the_recorded_pdb() {
        let config = crate::pdb::fixtures::config();
        for full in variants() {
            let cached = CachedPdb::from(full.clone()).to_pdb();
            let deployment = crate::fixtures::deployment("team-0", "app-0", 1, &[("app", "app-0")], &[]);
            let deployments = std::slice::from_ref(&deployment);
            assert_eq!(crate::pdb::is_ours(&cached.metadata), crate::pdb::is_ours(&full.metadata));
            assert_eq!(crate::pdb::plan_pdb(&cached, deployments), crate::pdb::plan_pdb(&full, deployments));
            assert_eq!(
                crate::eas::pdb_covers(&cached, &deployment),
                crate::eas::pdb_covers(&full, &deployment)
            );
            let now = jiff::Timestamp::from_second(1_700_000_000).expect("in range");
            let observed = |pdb: &PodDisruptionBudget| crate::surge::Observed {
                deployment: deployment.clone(),
                namespace_enabled: true,
                pdbs: vec![pdb.clone()],
                any_node_draining: true,
                last_signal: Some(now),
                new_signal: true,
                ..Default::default()
            };
            assert_eq!(
                crate::surge::plan(&observed(&cached), &config, now),
                crate::surge::plan(&observed(&full), &config, now)
            );
        }
    }

    #[test]
    fn looks_up_as_the_pdb_it_caches() {
        use kube::runtime::reflector::{Lookup, ObjectRef};
        let cached = CachedPdb::from(variants().remove(0));
        let expected = ObjectRef::<CachedPdb>::new("app-0-eviction-autoscaler").within("team-0");
        assert_eq!(cached.to_object_ref(()), expected);
    }
}
