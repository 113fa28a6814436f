//! A namespace's plans taken to convergence: every plan applied as the apiserver would, until
//! nothing is left to do (the single-Deployment decisions are in `plan_tests.rs`).

use super::*;
use crate::pdb::fixtures::{CRD_UID, config, deployment, namespace, our_pdb, pdb};

/// Applies `action` to the namespace's PDBs as the API server would.
fn apply(action: &Action, pdbs: &mut Vec<PodDisruptionBudget>) {
    let position = |pdbs: &[PodDisruptionBudget], name: &str| pdbs.iter().position(|p| name_of(p) == name);
    match action {
        Action::Create { pdb } => {
            if position(pdbs, name_of(pdb)).is_none() {
                pdbs.push((**pdb).clone());
            }
        }
        Action::Delete { pdb, .. } | Action::Retire { pdb, .. } => {
            if let Some(at) = position(pdbs, pdb.name()) {
                assert!(is_ours(&pdbs[at].metadata), "deleted a PDB that is not ours: {}", pdb.name());
                pdbs.remove(at);
            }
        }
        Action::UpdateMinAvailable { pdb, value } => {
            if let Some(spec) = position(pdbs, pdb.name()).and_then(|at| pdbs[at].spec.as_mut()) {
                spec.min_available = Some(IntOrString::Int(*value));
            }
        }
        Action::Adopt { pdb, desired, .. } => {
            if let Some(at) = position(pdbs, pdb.name()) {
                pdbs[at].spec = desired.spec.clone();
                pdbs[at].metadata.owner_references = desired.metadata.owner_references.clone();
            }
        }
        Action::HandOver { pdb } => {
            if let Some(at) = position(pdbs, pdb.name()) {
                pdbs[at].metadata.owner_references = Some(pdb.remaining_owner_references().to_vec());
            }
        }
        Action::Nothing | Action::Skip { .. } => {}
    }
}

/// Exhaustive over a small namespace: any mix of Deployments with overlapping selectors,
/// user PDBs, and leftover default PDBs of ours converges (every plan `Nothing`/`Skip`)
/// with never a PDB of ours next to another on any pod template, user PDBs untouched, and every Deployment
/// without a PDB explained by a covering or overlapping one.
#[test]
fn namespace_converges_to_exactly_one_pdb_per_template() {
    let all_deployments = [
        deployment("a", 2, &[("app", "web")]),
        deployment("b", 3, &[("app", "web")]),
        deployment("c", 2, &[("app", "web"), ("tier", "x")]),
        deployment("d", 1, &[("app", "api")]),
    ];
    let all_users =
        [pdb("u-web", &[("app", "web")]), pdb("u-tier", &[("tier", "x")]), pdb("u-api", &[("app", "api")])];
    let team = namespace("team", &[]);
    let mut checked = 0;
    for deployment_mask in 1u32..(1 << all_deployments.len()) {
        for user_mask in 0u32..(1 << all_users.len()) {
            for stale in [false, true] {
                let deployments: Vec<Deployment> = (0..all_deployments.len())
                    .filter(|i| deployment_mask & (1 << i) != 0)
                    .map(|i| all_deployments[i].clone())
                    .collect();
                let users: Vec<PodDisruptionBudget> = (0..all_users.len())
                    .filter(|i| user_mask & (1 << i) != 0)
                    .map(|i| all_users[i].clone())
                    .collect();
                let mut pdbs = users.clone();
                if stale {
                    // Leftovers of ours for every Deployment (e.g. created before the user PDBs).
                    for d in &deployments {
                        let labels = template_labels(d).cloned().unwrap_or_default();
                        let pairs: Vec<(&str, &str)> =
                            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                        pdbs.push(our_pdb(d.metadata.name.as_deref().unwrap_or_default(), 1, &pairs));
                    }
                }
                let mut settled = false;
                for _round in 0..20 {
                    let mut wrote = false;
                    for d in &deployments {
                        let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: &deployments };
                        let action = plan_deployment(d, None, &view, &config(), CRD_UID).action;
                        if !matches!(action, Action::Nothing | Action::Skip { .. }) {
                            apply(&action, &mut pdbs);
                            wrote = true;
                        }
                    }
                    if !wrote {
                        settled = true;
                        break;
                    }
                }
                let case = format!("deployments {deployment_mask:04b}, users {user_mask:03b}, stale {stale}");
                assert!(settled, "{case}: no fixpoint: {:?}", pdbs.iter().map(name_of).collect::<Vec<_>>());
                for user in &users {
                    assert!(pdbs.contains(user), "{case}: user PDB {} changed or deleted", name_of(user));
                }
                for d in &deployments {
                    let covering: Vec<_> = pdbs.iter().filter(|p| covers(p, template_labels(d))).collect();
                    // Two user PDBs on one template are the user's to fix; ours is never a second.
                    let ours_among = covering.iter().any(|p| is_ours(&p.metadata));
                    assert!(
                        covering.len() <= 1 || !ours_among,
                        "{case}: {} PDBs on {:?}",
                        covering.len(),
                        d.metadata.name
                    );
                    if covering.is_empty() {
                        let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: &deployments };
                        let action = plan_deployment(d, None, &view, &config(), CRD_UID).action;
                        assert!(
                            matches!(action, Action::Skip { reason: SkipReason::WouldOverlapOtherPdb, .. }),
                            "{case}: {:?} unprotected: {action:?}",
                            d.metadata.name
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 15 * 8 * 2);
}
