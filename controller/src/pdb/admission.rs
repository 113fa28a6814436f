//! The webhook's fast paths (run in the background after answering `allowed: true`, on any
//! replica): a default PDB for a Deployment being created, before its pods exist; and the
//! retirement of our PDB when a user's PDB starts covering the same pods.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use eviction_autoscaler_shared::config::Config;

use super::action::{Action, deployment_subject};
use super::catalogue::SkipReason;
use super::desired::Autoscaler;
use super::ownership::{OwnedPdb, is_ours};
use super::plan::{DeploymentPlan, NamespaceView, covers, plan_deployment, template_labels};

/// Deployment CREATE admission: `Create` (POST; AlreadyExists means the reconciler or
/// another replica was first, which is success) only for a Deployment in an enabled
/// namespace, with `pdb.create` on, not opted out, and no PDB known to cover its pods (or
/// would be doubled by ours). Otherwise `Skip` (dry runs: [`SkipReason::DryRun`]) or
/// `Nothing`: every other action (sync, delete, retire, adopt) is left to the reconciler.
pub fn plan_admission(
    deployment: &Deployment,
    dry_run: bool,
    autoscaler: Option<&Autoscaler>,
    view: &NamespaceView,
    config: &Config,
    crd_uid: &str,
) -> DeploymentPlan {
    if dry_run {
        return DeploymentPlan {
            action: Action::Skip { reason: SkipReason::DryRun, note: "dry run: no side effect".into() },
            events: Vec::new(),
            subject: deployment_subject(deployment),
        };
    }
    // The object under admission may lack its namespace; the PDB goes where the Deployment goes.
    let mut deployment = deployment.clone();
    if deployment.metadata.namespace.is_none() {
        deployment.metadata.namespace = view.namespace.metadata.name.clone();
    }
    let mut plan = plan_deployment(&deployment, autoscaler, view, config, crd_uid);
    if !matches!(plan.action, Action::Create { .. } | Action::Skip { .. }) {
        plan.action = Action::Nothing;
    }
    plan
}

/// PDB CREATE/UPDATE admission of `incoming`: if it is not ours, retire (delete at once)
/// every PDB of ours that covers the pods of a Deployment `incoming` covers; two PDBs on a pod
/// make every eviction of it fail with 500, and the user's PDB always wins. Only `Retire`
/// actions are returned; none for a dry run, for our own PDBs, or for the PDB being admitted
/// itself (a user removing `ownedBy` from ours keeps it: that is a hand-over).
pub fn plan_pdb_admission(
    incoming: &PodDisruptionBudget,
    dry_run: bool,
    view: &NamespaceView,
) -> Vec<Action> {
    if dry_run || is_ours(&incoming.metadata) {
        return Vec::new();
    }
    let incoming_name = incoming.metadata.name.as_deref().unwrap_or_default();
    let covered: Vec<&Deployment> =
        view.deployments.iter().filter(|deployment| covers(incoming, template_labels(deployment))).collect();
    view.pdbs
        .iter()
        .filter(|pdb| pdb.metadata.name.as_deref() != Some(incoming_name))
        .filter(|pdb| covered.iter().any(|deployment| covers(pdb, template_labels(deployment))))
        .filter_map(OwnedPdb::of)
        .map(|pdb| Action::Retire { pdb, covered_by: incoming_name.to_owned() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::fixtures::{CRD_UID, config, deployment, namespace, our_pdb, pdb, with_annotation};
    use eviction_autoscaler_shared::keys;

    fn names(actions: &[Action]) -> Vec<(String, String)> {
        actions
            .iter()
            .filter_map(|action| match action {
                Action::Retire { pdb, covered_by } => Some((pdb.name().to_owned(), covered_by.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn deployment_admission_creates_only_when_nothing_covers() {
        let team = namespace("team", &[]);
        let off = namespace("other", &[]);
        let web = deployment("web", 3, &[("app", "web")]);
        let chart = pdb("web", &[("app", "web")]);
        let ours = our_pdb("web", 2, &[("app", "web")]);
        let opted_out = with_annotation(web.clone(), keys::PDB_CREATE, "false");
        let mut no_namespace = web.clone();
        no_namespace.metadata.namespace = None;
        let plan = |d: &Deployment, dry: bool, ns, pdbs: &[PodDisruptionBudget]| {
            let view = NamespaceView { namespace: ns, pdbs, deployments: &[] };
            plan_admission(d, dry, None, &view, &config(), CRD_UID).action
        };
        let created = |action: Action| match action {
            Action::Create { pdb } => {
                Some((pdb.metadata.name.clone().unwrap_or_default(), pdb.metadata.namespace.clone()))
            }
            _ => None,
        };
        assert_eq!(
            created(plan(&web, false, &team, &[])),
            Some(("web-eviction-autoscaler".into(), Some("team".into())))
        );
        assert_eq!(created(plan(&no_namespace, false, &team, &[])).and_then(|c| c.1), Some("team".into()));
        let skipped = |action: Action| match action {
            Action::Skip { reason, .. } => Some(reason),
            _ => None,
        };
        assert_eq!(skipped(plan(&web, true, &team, &[])), Some(SkipReason::DryRun));
        assert_eq!(skipped(plan(&web, false, &off, &[])), Some(SkipReason::NamespaceDisabled));
        assert_eq!(
            skipped(plan(&web, false, &team, std::slice::from_ref(&chart))),
            Some(SkipReason::CoveredByUserPdb)
        );
        assert_eq!(skipped(plan(&opted_out, false, &team, &[])), Some(SkipReason::OptedOut));
        // The reconciler syncs existing PDBs; admission never writes anything but a create.
        assert_eq!(plan(&web, false, &team, std::slice::from_ref(&ours)), Action::Nothing);
        let opted_out_with_ours = plan(&opted_out, false, &team, std::slice::from_ref(&ours));
        assert_eq!(opted_out_with_ours, Action::Nothing, "deletes are the reconciler's");
    }

    #[test]
    fn user_pdb_admission_retires_ours() {
        let team = namespace("team", &[]);
        let web = deployment("web", 3, &[("app", "web"), ("tier", "front")]);
        let api = deployment("api", 2, &[("app", "api")]);
        let deployments = [web.clone(), api.clone()];
        let ours_web = our_pdb("web", 3, &[("app", "web")]);
        let ours_api = our_pdb("api", 2, &[("app", "api")]);
        let chart_pdb = pdb("chart", &[("app", "web")]);
        let broad = pdb("everything", &[]);
        let unrelated = pdb("db", &[("app", "db")]);
        let pdbs = [ours_web.clone(), ours_api.clone(), pdb("keep", &[("app", "zzz")])];
        let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: &deployments };
        let mut handed_over = ours_web.clone();
        handed_over.metadata.annotations = None;
        let retire = |name: &str, by: &str| (name.to_owned(), by.to_owned());
        let cases = [
            ("chart PDB for web", &chart_pdb, false, vec![retire("web-eviction-autoscaler", "chart")]),
            ("dry run", &chart_pdb, true, vec![]),
            (
                "empty selector covers everything",
                &broad,
                false,
                vec![
                    retire("web-eviction-autoscaler", "everything"),
                    retire("api-eviction-autoscaler", "everything"),
                ],
            ),
            ("covers no Deployment", &unrelated, false, vec![]),
            ("our own PDB being written", &ours_api, false, vec![]),
            ("the user takes ours over: hand-over, not retirement", &handed_over, false, vec![]),
        ];
        for (case, incoming, dry_run, want) in cases {
            let found = plan_pdb_admission(incoming, dry_run, &view);
            let mut found = names(&found);
            found.sort();
            let mut want = want;
            want.sort();
            assert_eq!(found, want, "{case}");
        }
    }
}
