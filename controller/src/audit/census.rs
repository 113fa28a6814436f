//! The audit's judgement over what the controller watches, for its metrics:
//! `eviction_autoscaler_pdbs{class}` and `eviction_autoscaler_drain_blockers{reason}`.
//!
//! The controller watches no pods, so a PDB is judged from the status the disruption
//! controller wrote ([`BudgetFacts::from_status`]) and its pods are known through the pod
//! templates of the Deployments it selects. What that cannot see, the `audit` command (which
//! lists the pods) does: which pods are not Ready, overlaps among pods that are not a
//! Deployment's, whether bare pods or another controller own a budget's pods (both count as
//! `not_a_deployment`), and the room for surge pods (`no_room` is never counted here).
//! A PDB the disruption controller has not processed yet (no status), or whose spec cannot
//! be read, is left out.

use std::collections::{BTreeMap, HashMap};

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::pdb_audit::{BudgetFacts, Owner, judge, surge_opens};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::report::deployment_view;
use crate::eas::pdb_covers;
use crate::keda::ScaledObject;

/// What a PDB whose pods no Deployment owns is counted as (its owner is not watched).
const NOT_A_DEPLOYMENT: &str = "a workload that is not a Deployment";

/// PDBs per class, and the blocking PDBs our surge cannot open per reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// PDBs per [`PdbClass::name`](eviction_autoscaler_shared::pdb_audit::PdbClass::name).
    pub pdbs: BTreeMap<&'static str, i64>,
    /// Blocking PDBs per [`SurgeBlocker::reason`](eviction_autoscaler_shared::pdb_audit::SurgeBlocker::reason).
    pub drain_blockers: BTreeMap<&'static str, i64>,
}

/// One namespace as the controller's caches hold it.
#[derive(Clone, Copy, Debug)]
pub struct NamespaceCache<'a> {
    /// Its annotations (scope).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// Its PDBs.
    pub pdbs: &'a [PodDisruptionBudget],
    /// Its Deployments, as the compact cache gives them back.
    pub deployments: &'a [Deployment],
    /// Its HPAs and KEDA ScaledObjects (an autoscaler's maximum caps a surge).
    pub hpas: &'a [HorizontalPodAutoscaler],
    pub scaled_objects: &'a [ScaledObject],
}

impl Census {
    /// Counts the PDBs of one namespace.
    pub fn count(&mut self, namespace: NamespaceCache, config: &Config) {
        let templates = TemplateIndex::new(namespace.deployments);
        let covered: Vec<Vec<&Deployment>> = namespace
            .pdbs
            .iter()
            .map(|pdb| templates.candidates(pdb).iter().copied().filter(|d| pdb_covers(pdb, d)).collect())
            .collect();
        let mut budgets_per_deployment: HashMap<&str, usize> = HashMap::new();
        for deployment in covered.iter().flatten() {
            *budgets_per_deployment.entry(name_of(deployment)).or_default() += 1;
        }
        for (pdb, covered) in namespace.pdbs.iter().zip(covered) {
            let (Some(spec), Some(status)) = (pdb.spec.as_ref(), pdb.status.as_ref()) else { continue };
            let overlapping = covered
                .iter()
                .map(|d| name_of(d))
                .filter(|name| budgets_per_deployment.get(name).is_some_and(|n| *n > 1))
                .map(str::to_owned)
                .collect();
            // A spec that cannot be read is left out (validation normally prevents it).
            let Ok(facts) = BudgetFacts::from_status(spec, status, overlapping) else { continue };
            let class = judge(facts);
            *self.pdbs.entry(class.name()).or_default() += 1;
            if !class.blocks_drain() {
                continue;
            }
            let owner = match covered.as_slice() {
                [] => Owner::Other(NOT_A_DEPLOYMENT.to_owned()),
                [deployment] => Owner::Deployment(deployment_view(
                    deployment,
                    namespace.annotations,
                    namespace.hpas,
                    namespace.scaled_objects,
                    config,
                    None,
                )),
                several => {
                    Owner::Several(several.iter().map(|d| format!("Deployment/{}", name_of(d))).collect())
                }
            };
            if let Err(blocker) = surge_opens(&class, spec, &owner, 1, config.zero_surge_override.as_ref()) {
                *self.drain_blockers.entry(blocker.reason()).or_default() += 1;
            }
        }
    }
}

/// A namespace's Deployments by the labels of their pod templates, so that a PDB is matched
/// against the few Deployments carrying one of its `matchLabels`, not against all of them (a
/// namespace of 10,000 Deployments took 3.5 s a census without it; BENCHMARKS.md, "census").
struct TemplateIndex<'a> {
    all: Vec<&'a Deployment>,
    by_label: HashMap<(&'a str, &'a str), Vec<&'a Deployment>>,
}

impl<'a> TemplateIndex<'a> {
    fn new(deployments: &'a [Deployment]) -> Self {
        let mut by_label: HashMap<(&str, &str), Vec<&Deployment>> = HashMap::new();
        for deployment in deployments {
            let labels = deployment.spec.as_ref().and_then(|s| s.template.metadata.as_ref()?.labels.as_ref());
            for (key, value) in labels.into_iter().flatten() {
                by_label.entry((key, value)).or_default().push(deployment);
            }
        }
        TemplateIndex { all: deployments.iter().collect(), by_label }
    }

    /// The Deployments `pdb` may select: those carrying its rarest `matchLabels` pair, or
    /// every one when it has none (an expression-only or empty selector).
    fn candidates(&self, pdb: &'a PodDisruptionBudget) -> &[&'a Deployment] {
        let match_labels = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()?.match_labels.as_ref());
        match match_labels {
            Some(pairs) if !pairs.is_empty() => pairs
                .iter()
                .map(|(key, value)| {
                    self.by_label.get(&(key.as_str(), value.as_str())).map_or(&[][..], Vec::as_slice)
                })
                .min_by_key(|candidates| candidates.len())
                .unwrap_or_default(),
            _ => &self.all,
        }
    }
}

fn name_of(deployment: &Deployment) -> &str {
    deployment.metadata.name.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests;
