//! `eviction-autoscaler cleanup` (before uninstall): what to undo, computed from the
//! cluster's current state, so running it twice is the same as once and `--dry-run` prints
//! exactly the plan a real run would execute.
//!
//! Order of execution: (1) revert active surges (the surge controller's revert, for each
//! object listed), (2) hand over PDBs the user took over but that still carry our owner
//! reference (so deleting the CRD does not garbage-collect them), (3) delete every PDB
//! carrying `ownedBy: EvictionAutoScaler` (with preconditions), (4) release the finalizers of
//! and delete every EvictionAutoScaler object. PDBs without `ownedBy` are never deleted.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::keys;

use crate::pdb::{HandOverPdb, OwnedPdb};

/// Kinds of object that can carry our surge annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SurgedKind {
    Deployment,
    HorizontalPodAutoscaler,
    ScaledObject,
}

impl SurgedKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            Self::ScaledObject => "ScaledObject",
        }
    }
}

/// An object that may carry surge annotations, as listed by the cleanup command.
#[derive(Clone, Copy, Debug)]
pub struct SurgeCandidate<'a> {
    pub kind: SurgedKind,
    pub metadata: &'a ObjectMeta,
}

/// A surge to revert (by the surge controller's revert) before anything else is removed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SurgeToRevert {
    pub kind: SurgedKind,
    pub namespace: String,
    pub name: String,
    /// `evictionSurgeReplicas` as found.
    pub surged: String,
    /// `original-min-replicas` as found (`None` when missing).
    pub baseline: Option<String>,
}

/// An EvictionAutoScaler object to remove: release `finalizers` (ours and the Go project's),
/// then delete it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EasToRemove {
    pub namespace: String,
    pub name: String,
    pub finalizers: Vec<String>,
}

/// Everything `cleanup` does, in execution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CleanupPlan {
    pub surges_to_revert: Vec<SurgeToRevert>,
    pub pdbs_to_hand_over: Vec<HandOverPdb>,
    pub pdbs_to_delete: Vec<OwnedPdb>,
    pub eas_to_remove: Vec<EasToRemove>,
}

impl CleanupPlan {
    /// Nothing left to clean up.
    pub fn is_empty(&self) -> bool {
        self.surges_to_revert.is_empty()
            && self.pdbs_to_hand_over.is_empty()
            && self.pdbs_to_delete.is_empty()
            && self.eas_to_remove.is_empty()
    }

    /// One line per step, in execution order: the `--dry-run` listing.
    pub fn describe(&self) -> Vec<String> {
        let surges = self.surges_to_revert.iter().map(|surge| {
            format!(
                "revert surge: {} {}/{} from {} to {}",
                surge.kind.as_str(),
                surge.namespace,
                surge.name,
                surge.surged,
                surge.baseline.as_deref().unwrap_or("(baseline unknown)")
            )
        });
        let hand_overs = self.pdbs_to_hand_over.iter().map(|pdb| {
            format!(
                "drop owner reference: poddisruptionbudget {}/{} (the user's now)",
                pdb.namespace(),
                pdb.name()
            )
        });
        let deletes = self
            .pdbs_to_delete
            .iter()
            .map(|pdb| format!("delete poddisruptionbudget {}/{}", pdb.namespace(), pdb.name()));
        let eas = self.eas_to_remove.iter().map(|eas| {
            if eas.finalizers.is_empty() {
                format!("delete evictionautoscaler {}/{}", eas.namespace, eas.name)
            } else {
                format!(
                    "release finalizers [{}] and delete evictionautoscaler {}/{}",
                    eas.finalizers.join(", "),
                    eas.namespace,
                    eas.name
                )
            }
        });
        surges.chain(hand_overs).chain(deletes).chain(eas).collect()
    }
}

/// The cleanup plan for the cluster's current `pdbs`, `autoscalers` and surge `candidates`
/// (all namespaces). Sorted, so the listing is stable.
pub fn plan_cleanup(
    pdbs: &[PodDisruptionBudget],
    autoscalers: &[EvictionAutoScaler],
    candidates: &[SurgeCandidate],
) -> CleanupPlan {
    let mut surges_to_revert: Vec<SurgeToRevert> = candidates
        .iter()
        .filter_map(|candidate| {
            let annotations = candidate.metadata.annotations.as_ref()?;
            Some(SurgeToRevert {
                kind: candidate.kind,
                namespace: candidate.metadata.namespace.clone().unwrap_or_default(),
                name: candidate.metadata.name.clone().unwrap_or_default(),
                surged: annotations.get(keys::SURGE_REPLICAS)?.clone(),
                baseline: annotations.get(keys::ORIGINAL_MIN_REPLICAS).cloned(),
            })
        })
        .collect();
    surges_to_revert.sort();
    let order = |namespace: &str, name: &str| (namespace.to_owned(), name.to_owned());
    let mut pdbs_to_hand_over: Vec<HandOverPdb> = pdbs.iter().filter_map(HandOverPdb::of).collect();
    pdbs_to_hand_over.sort_by_key(|pdb| order(pdb.namespace(), pdb.name()));
    let mut pdbs_to_delete: Vec<OwnedPdb> = pdbs.iter().filter_map(OwnedPdb::of).collect();
    pdbs_to_delete.sort_by_key(|pdb| order(pdb.namespace(), pdb.name()));
    let mut eas_to_remove: Vec<EasToRemove> = autoscalers
        .iter()
        .filter_map(|eas| {
            Some(EasToRemove {
                namespace: eas.metadata.namespace.clone().unwrap_or_default(),
                name: eas.metadata.name.clone()?,
                finalizers: eas.metadata.finalizers.clone().unwrap_or_default(),
            })
        })
        .collect();
    eas_to_remove.sort();
    CleanupPlan { surges_to_revert, pdbs_to_hand_over, pdbs_to_delete, eas_to_remove }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::fixtures::{our_pdb, pdb, with_annotation, with_owner};
    use crate::pdb::ownership::crd_owner_reference;
    use eviction_autoscaler_shared::crd::EvictionAutoScalerSpec;

    fn eas(name: &str, finalizers: &[&str]) -> EvictionAutoScaler {
        let mut object = EvictionAutoScaler::new(name, EvictionAutoScalerSpec::default());
        object.metadata.namespace = Some("team".into());
        object.metadata.finalizers =
            (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| (*f).into()).collect());
        object
    }

    fn meta(name: &str, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("team".into()),
            annotations: Some(annotations.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
            ..ObjectMeta::default()
        }
    }

    /// Executes `plan` against the in-memory cluster, as the command would.
    fn execute(
        plan: &CleanupPlan,
        pdbs: &mut Vec<PodDisruptionBudget>,
        autoscalers: &mut Vec<EvictionAutoScaler>,
        surged: &mut [ObjectMeta],
    ) {
        for surge in &plan.surges_to_revert {
            for object in surged.iter_mut().filter(|m| m.name.as_deref() == Some(&surge.name)) {
                if let Some(all) = object.annotations.as_mut() {
                    all.remove(keys::SURGE_REPLICAS);
                    all.remove(keys::ORIGINAL_MIN_REPLICAS);
                }
            }
        }
        for hand_over in &plan.pdbs_to_hand_over {
            for object in pdbs.iter_mut().filter(|p| p.metadata.name.as_deref() == Some(hand_over.name())) {
                object.metadata.owner_references = Some(hand_over.remaining_owner_references().to_vec());
            }
        }
        pdbs.retain(|p| !plan.pdbs_to_delete.iter().any(|d| p.metadata.name.as_deref() == Some(d.name())));
        autoscalers
            .retain(|e| !plan.eas_to_remove.iter().any(|d| e.metadata.name.as_deref() == Some(&d.name)));
    }

    #[test]
    fn cleanup_removes_only_ours_and_is_idempotent() {
        let handed_over =
            with_owner(pdb("web-eviction-autoscaler", &[("app", "web")]), crd_owner_reference("crd"));
        let mut pdbs = vec![
            our_pdb("api", 2, &[("app", "api")]),
            pdb("chart", &[("app", "db")]),
            handed_over,
            with_annotation(pdb("lookalike", &[]), keys::OWNED_BY, "evictionautoscaler"),
        ];
        let mut autoscalers = vec![eas("web", &[keys::FINALIZER_SURGE_REVERT]), eas("api", &[])];
        let mut surged = vec![
            meta("web", &[(keys::SURGE_REPLICAS, "4"), (keys::ORIGINAL_MIN_REPLICAS, "3")]),
            meta("idle", &[(keys::ORIGINAL_MIN_REPLICAS, "3")]),
        ];
        let candidates = |metas: &[ObjectMeta]| -> Vec<(SurgedKind, ObjectMeta)> {
            metas.iter().map(|m| (SurgedKind::Deployment, m.clone())).collect()
        };
        let plan_now = |pdbs: &[PodDisruptionBudget], easl: &[EvictionAutoScaler], metas: &[ObjectMeta]| {
            let owned = candidates(metas);
            let refs: Vec<SurgeCandidate> =
                owned.iter().map(|(kind, m)| SurgeCandidate { kind: *kind, metadata: m }).collect();
            plan_cleanup(pdbs, easl, &refs)
        };
        let plan = plan_now(&pdbs, &autoscalers, &surged);
        assert_eq!(
            plan.describe(),
            vec![
                "revert surge: Deployment team/web from 4 to 3",
                "drop owner reference: poddisruptionbudget team/web-eviction-autoscaler (the user's now)",
                "delete poddisruptionbudget team/api-eviction-autoscaler",
                "delete evictionautoscaler team/api",
                "release finalizers [eviction-autoscaler.azure.com/surge-revert] and delete evictionautoscaler team/web",
            ]
        );
        // The dry run is the same plan, computed without writing: the state is unchanged.
        assert_eq!(plan_now(&pdbs, &autoscalers, &surged), plan);
        execute(&plan, &mut pdbs, &mut autoscalers, &mut surged);
        let names: Vec<_> = pdbs.iter().filter_map(|p| p.metadata.name.clone()).collect();
        assert_eq!(names, ["chart", "web-eviction-autoscaler", "lookalike"], "user PDBs survive");
        let again = plan_now(&pdbs, &autoscalers, &surged);
        assert!(again.is_empty(), "second run has nothing to do: {:?}", again.describe());
    }
}
