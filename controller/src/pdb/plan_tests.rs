use super::*;
use crate::pdb::fixtures::{
    CRD_UID, config, deployment, namespace, our_pdb, pdb, with_annotation, with_owner,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

/// The action, reduced to what a user would notice: kind, PDB name, detail.
fn summary(action: &Action) -> (&'static str, String, String) {
    match action {
        Action::Create { pdb } => {
            let min = pdb.spec.as_ref().and_then(|s| s.min_available.clone());
            ("create", name_of(pdb).to_owned(), format!("{min:?}"))
        }
        Action::UpdateMinAvailable { pdb, value } => ("update", pdb.name().to_owned(), value.to_string()),
        Action::Adopt { pdb, from_go_project, .. } => {
            ("adopt", pdb.name().to_owned(), from_go_project.to_string())
        }
        Action::Delete { pdb, reason } => ("delete", pdb.name().to_owned(), reason.as_str().to_owned()),
        Action::Retire { pdb, covered_by } => ("retire", pdb.name().to_owned(), covered_by.clone()),
        Action::HandOver { pdb } => ("hand-over", pdb.name().to_owned(), String::new()),
        Action::Nothing => ("nothing", String::new(), String::new()),
        Action::Skip { reason, .. } => ("skip", String::new(), reason.as_str().to_owned()),
    }
}

fn go_project_pdb(name: &str, min: i32, pairs: &[(&str, &str)]) -> PodDisruptionBudget {
    let owner = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: name.into(),
        uid: format!("{name}-uid"),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut object = with_owner(pdb(name, pairs), owner);
    object = with_annotation(object, keys::OWNED_BY, keys::OWNED_BY_VALUE);
    object = with_annotation(object, keys::TARGET, name);
    if let Some(spec) = object.spec.as_mut() {
        spec.min_available = Some(IntOrString::Int(min));
    }
    object
}

const WEB: &[(&str, &str)] = &[("app", "web")];
const OURS: &str = "web-eviction-autoscaler";

#[test]
fn single_deployment_decisions() {
    let web = deployment("web", 3, WEB);
    let scaled = deployment("web", 5, WEB);
    let surged = with_annotation(
        with_annotation(deployment("web", 5, WEB), keys::SURGE_REPLICAS, "5"),
        keys::ORIGINAL_MIN_REPLICAS,
        "3",
    );
    let opted_out = with_annotation(web.clone(), keys::PDB_CREATE, "false");
    let zero = deployment("web", 0, WEB);
    let deleting = {
        let mut d = web.clone();
        d.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        d
    };
    let team = namespace("team", &[]);
    let unlisted = namespace("other", &[]);
    let flipped_off = namespace("team", &[(keys::NAMESPACE_ENABLE, "false")]);
    let flipped_on = namespace("other", &[(keys::NAMESPACE_ENABLE, "true")]);
    let terminating = {
        let mut ns = namespace("team", &[]);
        ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Terminating".into()),
            conditions: None,
        });
        ns
    };
    let ours = our_pdb("web", 3, WEB);
    let ours_stale_uid = {
        let mut p = our_pdb("web", 3, WEB);
        p.metadata.owner_references = Some(vec![crd_owner_reference("old-crd")]);
        p
    };
    let ours_with_max_unavailable = {
        let mut p = our_pdb("web", 3, WEB);
        if let Some(spec) = p.spec.as_mut() {
            spec.max_unavailable = Some(IntOrString::Int(1));
        }
        p
    };
    let chart = pdb("web", WEB);
    let chart_by_expression = {
        let mut p = pdb("chart", &[]);
        if let Some(spec) = p.spec.as_mut() {
            spec.selector = Some(LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![crate::pdb::fixtures::expression("app", "In", &["web", "api"])]),
            });
        }
        p
    };
    let handed_over = {
        let mut p = our_pdb("web", 3, WEB);
        p.metadata.annotations = None;
        p
    };
    let handed_over_done = {
        let mut p = handed_over.clone();
        p.metadata.owner_references = None;
        p
    };
    let reclaimed = {
        let mut p = our_pdb("web", 3, WEB);
        p.metadata.owner_references = None;
        p
    };
    let squatter = pdb(OURS, &[("app", "other")]);
    let duplicate = with_annotation(
        with_annotation(pdb("web-old", WEB), keys::OWNED_BY, keys::OWNED_BY_VALUE),
        keys::TARGET,
        "web",
    );
    let go = go_project_pdb("web", 3, WEB);
    let mut no_pdb_config = config();
    no_pdb_config.pdb_create = false;
    let by_default = {
        let mut c = config();
        c.enabled_by_default = true;
        c
    };

    type Row<'a> = (
        &'a str,
        &'a Deployment,
        &'a Namespace,
        Vec<PodDisruptionBudget>,
        &'a Config,
        (&'a str, &'a str, &'a str),
    );
    let base = config();
    let cases: Vec<Row> = vec![
        ("no PDB → create at replicas", &web, &team, vec![], &base, ("create", OURS, "Some(Int(3))")),
        ("in sync → nothing", &web, &team, vec![ours.clone()], &base, ("nothing", "", "")),
        ("scaled 3→5 → minAvailable 5", &scaled, &team, vec![ours.clone()], &base, ("update", OURS, "5")),
        (
            "our surge 3→5 → stays at the baseline",
            &surged,
            &team,
            vec![ours.clone()],
            &base,
            ("nothing", "", ""),
        ),
        (
            "surged, no PDB → created at the baseline",
            &surged,
            &team,
            vec![],
            &base,
            ("create", OURS, "Some(Int(3))"),
        ),
        ("namespace not actioned", &web, &unlisted, vec![], &base, ("skip", "", "NamespaceDisabled")),
        (
            "namespace not actioned, ours → delete",
            &web,
            &unlisted,
            vec![ours.clone()],
            &base,
            ("delete", OURS, "NamespaceDisabled"),
        ),
        (
            "enable: false → delete ours, the chart PDB elsewhere is never named",
            &web,
            &flipped_off,
            vec![ours.clone(), pdb("db", &[("app", "db")])],
            &base,
            ("delete", OURS, "NamespaceDisabled"),
        ),
        (
            "enable: true on an unlisted namespace",
            &web,
            &flipped_on,
            vec![],
            &base,
            ("create", OURS, "Some(Int(3))"),
        ),
        ("enabledByDefault", &web, &unlisted, vec![], &by_default, ("create", OURS, "Some(Int(3))")),
        ("pdb.create off", &web, &team, vec![], &no_pdb_config, ("skip", "", "PdbCreateDisabled")),
        // Off stops creating, not managing: an owned PDB stays, and stays in sync (a stale
        // minAvailable would block drains for good). The Go chart defaults to on, ours to off.
        (
            "pdb.create off, ours in sync → kept",
            &web,
            &team,
            vec![ours.clone()],
            &no_pdb_config,
            ("nothing", "", ""),
        ),
        (
            "pdb.create off, ours, scaled 3→5 → minAvailable 5",
            &scaled,
            &team,
            vec![ours.clone()],
            &no_pdb_config,
            ("update", OURS, "5"),
        ),
        (
            "pdb.create off, the Go project's → adopted, not deleted",
            &web,
            &team,
            vec![go.clone()],
            &no_pdb_config,
            ("adopt", "web", "true"),
        ),
        ("opted out", &opted_out, &team, vec![], &base, ("skip", "", "OptedOut")),
        (
            "opted out later → delete ours",
            &opted_out,
            &team,
            vec![ours.clone()],
            &base,
            ("delete", OURS, "OptedOut"),
        ),
        (
            "zero replicas → delete ours",
            &zero,
            &team,
            vec![ours.clone()],
            &base,
            ("delete", OURS, "ZeroMinAvailable"),
        ),
        ("zero replicas, no PDB", &zero, &team, vec![], &base, ("skip", "", "ZeroMinAvailable")),
        (
            "Deployment being deleted",
            &deleting,
            &team,
            vec![ours.clone()],
            &base,
            ("delete", OURS, "DeploymentDeleted"),
        ),
        (
            "namespace terminating: no create",
            &web,
            &terminating,
            vec![],
            &base,
            ("skip", "", "NamespaceTerminating"),
        ),
        (
            "chart PDB first → none of ours",
            &web,
            &team,
            vec![chart.clone()],
            &base,
            ("skip", "", "CoveredByUserPDB"),
        ),
        (
            "chart PDB after ours → retire ours",
            &web,
            &team,
            vec![ours.clone(), chart.clone()],
            &base,
            ("retire", OURS, "web"),
        ),
        (
            "expression-only user PDB covers too",
            &web,
            &team,
            vec![ours.clone(), chart_by_expression],
            &base,
            ("retire", OURS, "chart"),
        ),
        (
            "ownedBy removed → drop our owner reference",
            &web,
            &team,
            vec![handed_over],
            &base,
            ("hand-over", OURS, ""),
        ),
        (
            "handed over → the user's, never touched",
            &web,
            &team,
            vec![handed_over_done],
            &base,
            ("skip", "", "CoveredByUserPDB"),
        ),
        ("ownedBy re-added → managed again", &web, &team, vec![reclaimed], &base, ("adopt", OURS, "false")),
        (
            "our name taken by a non-covering PDB",
            &web,
            &team,
            vec![squatter],
            &base,
            ("skip", "", "NameTaken"),
        ),
        (
            "second owned PDB for the Deployment",
            &web,
            &team,
            vec![ours.clone(), duplicate],
            &base,
            ("delete", "web-old", "Duplicate"),
        ),
        (
            "Go project's PDB → adopted, not duplicated",
            &web,
            &team,
            vec![go],
            &base,
            ("adopt", "web", "true"),
        ),
        (
            "stale CRD UID → owner repaired",
            &web,
            &team,
            vec![ours_stale_uid],
            &base,
            ("adopt", OURS, "false"),
        ),
        (
            "maxUnavailable edited in → repaired",
            &web,
            &team,
            vec![ours_with_max_unavailable],
            &base,
            ("adopt", OURS, "false"),
        ),
    ];
    for (case, d, ns, pdbs, config, (kind, name, detail)) in cases {
        let view = NamespaceView { namespace: ns, pdbs: &pdbs, deployments: std::slice::from_ref(d) };
        let plan = plan_deployment(d, None, &view, config, CRD_UID);
        assert_eq!(summary(&plan.action), (kind, name.to_owned(), detail.to_owned()), "{case}");
        assert!(plan.events.is_empty(), "{case}: {:?}", plan.events);
        // By construction, nothing but a hand-over ever names a PDB without ownedBy.
        if let Action::Delete { pdb, .. }
        | Action::Retire { pdb, .. }
        | Action::UpdateMinAvailable { pdb, .. } = &plan.action
        {
            let target = pdbs.iter().find(|p| name_of(p) == pdb.name());
            assert!(target.is_some_and(|p| is_ours(&p.metadata)), "{case}");
        }
    }
}

#[test]
fn adoption_keeps_the_go_project_name_and_sets_our_owner() {
    let web = deployment("web", 4, WEB);
    let pdbs = [go_project_pdb("web", 3, WEB)];
    let team = namespace("team", &[]);
    let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: std::slice::from_ref(&web) };
    let Action::Adopt { desired, .. } = plan_deployment(&web, None, &view, &config(), CRD_UID).action else {
        panic!("not adopted")
    };
    assert_eq!(desired.metadata.name.as_deref(), Some("web"));
    assert_eq!(desired.metadata.owner_references, Some(vec![crd_owner_reference(CRD_UID)]));
    assert_eq!(desired.spec.and_then(|s| s.min_available), Some(IntOrString::Int(4)));
}

#[test]
fn invalid_annotations_are_events_and_treated_as_unset() {
    let team_maybe = namespace("team", &[(keys::NAMESPACE_ENABLE, "maybe")]);
    let other_maybe = namespace("other", &[(keys::NAMESPACE_ENABLE, "maybe")]);
    let never = with_annotation(deployment("web", 3, WEB), keys::PDB_CREATE, "never");
    let web = deployment("web", 3, WEB);
    let cases = [
        (
            "namespace maybe, listed → default (enabled)",
            &web,
            &team_maybe,
            "create",
            vec![("Namespace", "team")],
        ),
        (
            "namespace maybe, unlisted → default (disabled)",
            &web,
            &other_maybe,
            "skip",
            vec![("Namespace", "other")],
        ),
        (
            "pdb-create never → unset (create)",
            &never,
            &namespace("team", &[]),
            "create",
            vec![("Deployment", "web")],
        ),
    ];
    for (case, d, ns, want, subjects) in cases {
        let view = NamespaceView { namespace: ns, pdbs: &[], deployments: &[] };
        let plan = plan_deployment(d, None, &view, &config(), CRD_UID);
        assert_eq!(summary(&plan.action).0, want, "{case}");
        let found: Vec<_> = plan.events.iter().map(|e| (e.subject.kind, e.subject.name.as_str())).collect();
        assert_eq!(found, subjects, "{case}");
        assert!(
            plan.events
                .iter()
                .all(|e| e.reason.as_str() == "InvalidAnnotation" && e.event_type.as_str() == "Warning"),
            "{case}"
        );
    }
}

#[test]
fn autoscaler_minimum_drives_min_available() {
    let web = deployment("web", 7, WEB);
    let team = namespace("team", &[]);
    let pdbs = [our_pdb("web", 7, WEB)];
    let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: std::slice::from_ref(&web) };
    let cases = [
        (Autoscaler::Hpa { min_replicas: Some(2), annotations: None }, ("update", OURS, "2")),
        (Autoscaler::Hpa { min_replicas: None, annotations: None }, ("update", OURS, "1")),
        (Autoscaler::Keda { min_replica_count: Some(7), annotations: None }, ("nothing", "", "")),
        (
            Autoscaler::Keda { min_replica_count: None, annotations: None },
            ("delete", OURS, "ZeroMinAvailable"),
        ),
    ];
    for (autoscaler, (kind, name, detail)) in cases {
        let plan = plan_deployment(&web, Some(&autoscaler), &view, &config(), CRD_UID);
        assert_eq!(summary(&plan.action), (kind, name.to_owned(), detail.to_owned()), "{autoscaler:?}");
    }
}

#[test]
fn pdb_watch_decisions() {
    let web = deployment("web", 3, WEB);
    let deployments = [web.clone()];
    let handed_over = {
        let mut p = our_pdb("web", 3, WEB);
        p.metadata.annotations = None;
        p
    };
    let untargeted_ours = {
        let mut p = our_pdb("web", 3, WEB);
        if let Some(all) = p.metadata.annotations.as_mut() {
            all.remove(keys::TARGET);
        }
        p
    };
    let cases = [
        ("ours, Deployment present", our_pdb("web", 3, WEB), &deployments[..], ("nothing", "", "")),
        ("ours, Deployment gone", our_pdb("web", 3, WEB), &[][..], ("delete", OURS, "DeploymentDeleted")),
        ("ours without target, found by name", untargeted_ours, &deployments[..], ("nothing", "", "")),
        (
            "Go project's, Deployment present",
            go_project_pdb("web", 3, WEB),
            &deployments[..],
            ("nothing", "", ""),
        ),
        ("ownedBy removed", handed_over, &[][..], ("hand-over", OURS, "")),
        ("user PDB, no Deployment: untouched", pdb("chart", WEB), &[][..], ("nothing", "", "")),
    ];
    for (case, object, deployments, (kind, name, detail)) in cases {
        assert_eq!(
            summary(&plan_pdb(&object, deployments)),
            (kind, name.to_owned(), detail.to_owned()),
            "{case}"
        );
    }
    let affected = affected_deployments(&pdb("chart", WEB), &deployments);
    assert_eq!(affected.len(), 1);
    assert!(affected_deployments(&pdb("db", &[("app", "db")]), &deployments).is_empty());
}

#[test]
fn a_new_pdb_waits_for_its_unstored_deployment_and_an_old_or_seen_deleted_one_does_not() {
    let now = jiff::Timestamp::from_second(1_700_000_000).expect("in range");
    let created = |seconds_ago: i64| {
        let mut object = our_pdb("web", 1, WEB);
        let at = now - jiff::SignedDuration::from_secs(seconds_ago);
        object.metadata.creation_timestamp = Some(Time(at));
        object
    };
    let secs = Duration::from_secs;
    assert_eq!(target_of(&created(0)), "web");
    assert_eq!(wait_for_target(&created(0), false, now), Some(ADMISSION_GRACE), "just created");
    assert_eq!(wait_for_target(&created(5), false, now), Some(secs(30)), "looked at again at 35 s old");
    assert_eq!(wait_for_target(&created(35), false, now), None, "the grace is over");
    assert_eq!(wait_for_target(&created(3600), false, now), None, "an old PDB");
    assert_eq!(wait_for_target(&created(-60), false, now), Some(ADMISSION_GRACE), "a clock behind");
    assert_eq!(wait_for_target(&created(0), true, now), None, "its Deployment was seen deleted");
    assert_eq!(wait_for_target(&our_pdb("web", 1, WEB), false, now), None, "no creation time");
}

#[test]
fn overlapping_default_pdbs_keep_the_first_name() {
    let a = deployment("a", 2, WEB);
    let b = deployment("b", 2, WEB);
    let deployments = [a.clone(), b.clone()];
    let team = namespace("team", &[]);
    let pdbs = [our_pdb("a", 2, WEB), our_pdb("b", 2, WEB)];
    let view = NamespaceView { namespace: &team, pdbs: &pdbs, deployments: &deployments };
    let plan = |d: &Deployment| summary(&plan_deployment(d, None, &view, &config(), CRD_UID).action);
    assert_eq!(plan(&a), ("nothing", String::new(), String::new()));
    assert_eq!(plan(&b), ("retire", "b-eviction-autoscaler".into(), "a-eviction-autoscaler".into()));
    let after = [our_pdb("a", 2, WEB)];
    let view = NamespaceView { namespace: &team, pdbs: &after, deployments: &deployments };
    let action = plan_deployment(&b, None, &view, &config(), CRD_UID).action;
    assert_eq!(summary(&action), ("skip", String::new(), "CoveredByDefaultPDB".into()));
}
