use k8s_openapi::api::apps::v1::RollingUpdateDeployment;

use super::*;
use crate::budget::ScaleError;
use crate::budget::tests::{int, max_unavailable, min_available, text};

/// Pods `p0…` of one controller with `replicas`; the names in `not_ready` unhealthy, those
/// in `shared` under a second PDB too.
fn pods(replicas: usize, not_ready: &[&str], shared: &[&str]) -> Vec<SelectedPod> {
    (0..replicas)
        .map(|i| {
            let name = format!("p{i}");
            SelectedPod {
                healthy: !not_ready.contains(&name.as_str()),
                budgets: if shared.contains(&name.as_str()) { 2 } else { 1 },
                name,
            }
        })
        .collect()
}

fn class(spec: &PodDisruptionBudgetSpec, pods: &[SelectedPod], controller_scale: i32) -> PdbClass {
    classify(SelectedBudget { spec, pods, controller_scale }).unwrap()
}

fn unhealthy(names: &[&str], always_allow_frees_them: bool) -> PdbClass {
    PdbClass::Unhealthy {
        not_ready: names.iter().map(|n| (*n).to_owned()).collect(),
        always_allow_frees_them,
    }
}

/// One PDB of every class: what it is, its spec, its pods, their controllers' scale, its class.
fn every_class() -> Vec<(&'static str, PodDisruptionBudgetSpec, Vec<SelectedPod>, i32, PdbClass)> {
    let always_allow = PodDisruptionBudgetSpec {
        unhealthy_pod_eviction_policy: Some("AlwaysAllow".into()),
        ..min_available(int(2))
    };
    vec![
        ("selects no pod", min_available(int(1)), pods(0, &[], &[]), 0, PdbClass::NoEffect),
        ("minAvailable 0", min_available(int(0)), pods(3, &[], &[]), 3, PdbClass::NoEffect),
        ("maxUnavailable 100%", max_unavailable(text("100%")), pods(3, &[], &[]), 3, PdbClass::NoEffect),
        (
            "maxUnavailable equal to the pods",
            max_unavailable(int(3)),
            pods(3, &[], &[]),
            3,
            PdbClass::NoEffect,
        ),
        ("one replica, minAvailable 1", min_available(int(1)), pods(1, &[], &[]), 1, PdbClass::BlocksAll),
        ("minAvailable equal to the pods", min_available(int(3)), pods(3, &[], &[]), 3, PdbClass::BlocksAll),
        ("minAvailable above the pods", min_available(int(5)), pods(3, &[], &[]), 3, PdbClass::BlocksAll),
        ("maxUnavailable 0", max_unavailable(int(0)), pods(3, &[], &[]), 3, PdbClass::BlocksAll),
        ("maxUnavailable 0%", max_unavailable(text("0%")), pods(3, &[], &[]), 3, PdbClass::BlocksAll),
        ("minAvailable 100%", min_available(text("100%")), pods(4, &[], &[]), 4, PdbClass::BlocksAll),
        // ceil(2 × 51 / 100) = 2 of 2.
        (
            "minAvailable 51% of 2 rounds up",
            min_available(text("51%")),
            pods(2, &[], &[]),
            2,
            PdbClass::BlocksAll,
        ),
        ("minAvailable 50% of 2", min_available(text("50%")), pods(2, &[], &[]), 2, PdbClass::Ok),
        // ceil(3 × 10 / 100) = 1 may be unavailable.
        (
            "maxUnavailable 10% of 3 rounds up",
            max_unavailable(text("10%")),
            pods(3, &[], &[]),
            3,
            PdbClass::Ok,
        ),
        // Upstream expects 0 pods when none has a controller: nothing is ever allowed.
        ("maxUnavailable over bare pods", max_unavailable(int(1)), pods(2, &[], &[]), 0, PdbClass::BlocksAll),
        (
            "minAvailable 1 on two (Go's tight_budget)",
            min_available(int(1)),
            pods(2, &[], &[]),
            2,
            PdbClass::Ok,
        ),
        // 1 healthy ≥ 1 desired: the default policy already lets the not-Ready pod go.
        (
            "one of two not Ready, budget met",
            min_available(int(1)),
            pods(2, &["p1"], &[]),
            2,
            unhealthy(&["p1"], false),
        ),
        (
            "two of three not Ready",
            min_available(int(2)),
            pods(3, &["p1", "p2"], &[]),
            3,
            unhealthy(&["p1", "p2"], true),
        ),
        (
            "two of three not Ready, AlwaysAllow",
            always_allow,
            pods(3, &["p1", "p2"], &[]),
            3,
            unhealthy(&["p1", "p2"], false),
        ),
        ("not Ready but budget still open", min_available(int(1)), pods(3, &["p2"], &[]), 3, PdbClass::Ok),
        (
            "a pod under two PDBs",
            min_available(int(0)),
            pods(2, &[], &["p1"]),
            2,
            PdbClass::Overlapping { pods: vec!["p1".into()] },
        ),
    ]
}

#[test]
fn every_class_with_the_disruption_controllers_rounding() {
    let mut names = vec![];
    for (name, spec, pods, scale, want) in every_class() {
        assert_eq!(class(&spec, &pods, scale), want, "{name}");
        names.push(want.name());
    }
    names.sort_unstable();
    names.dedup();
    let mut listed = PdbClass::NAMES.to_vec();
    listed.sort_unstable();
    assert_eq!(names, listed, "every class is listed, and met by a case");
}

/// The controller's metrics judge a PDB from the status the disruption controller wrote for
/// those pods: the same class, only without the names of the pods that are not Ready.
#[test]
fn judged_from_the_status_every_class_is_the_same() {
    for (name, spec, pods, scale, want) in every_class() {
        let matched = i32::try_from(pods.len()).unwrap();
        let healthy = i32::try_from(pods.iter().filter(|p| p.healthy).count()).unwrap();
        let written = budget_status(
            &spec,
            PodCounts { controller_scale: scale, matched_pods: matched, healthy_pods: healthy },
        )
        .unwrap();
        let status = PodDisruptionBudgetStatus {
            expected_pods: written.expected_pods,
            desired_healthy: written.desired_healthy,
            current_healthy: written.current_healthy,
            disruptions_allowed: written.disruptions_allowed,
            ..PodDisruptionBudgetStatus::default()
        };
        let overlapping = pods.iter().filter(|p| p.budgets > 1).map(|p| p.name.clone()).collect();
        let got = judge(BudgetFacts::from_status(&spec, &status, overlapping).unwrap());
        let want = match want {
            PdbClass::Unhealthy { always_allow_frees_them, .. } => {
                PdbClass::Unhealthy { not_ready: vec![], always_allow_frees_them }
            }
            other => other,
        };
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn an_unreadable_budget_is_an_error_naming_the_field() {
    let spec = min_available(text("lots"));
    let err =
        classify(SelectedBudget { spec: &spec, pods: &pods(2, &[], &[]), controller_scale: 2 }).unwrap_err();
    assert_eq!(err.field, "minAvailable");
}

#[test]
fn drain_blocking_classes() {
    let blocking: Vec<_> = [
        PdbClass::BlocksAll,
        unhealthy(&["p0"], true),
        PdbClass::Overlapping { pods: vec![] },
        PdbClass::NoEffect,
        PdbClass::Ok,
    ]
    .iter()
    .filter(|c| c.blocks_drain())
    .map(PdbClass::name)
    .collect();
    assert_eq!(blocking, ["blocks_all", "unhealthy", "overlapping"]);
}

fn web<'a>() -> DeploymentView<'a> {
    DeploymentView {
        name: "web",
        strategy: None,
        baseline: 1,
        autoscaler_max: None,
        in_scope: true,
        surge_enabled: true,
        room_estimate: None,
    }
}

/// A surge case: name, class, budget, owner, zero-surge override, expected answer.
type SurgeCase<'a> = (
    &'a str,
    PdbClass,
    &'a PodDisruptionBudgetSpec,
    Owner<'a>,
    Option<IntOrString>,
    Result<(), SurgeBlocker>,
);

fn strategy(type_: &str, max_surge: Option<IntOrString>) -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some(type_.into()),
        rolling_update: max_surge
            .map(|s| RollingUpdateDeployment { max_surge: Some(s), ..Default::default() }),
    }
}

#[test]
fn whether_our_surge_opens_it_and_why_not() {
    let recreate = strategy("Recreate", None);
    let no_surge = strategy("RollingUpdate", Some(int(0)));
    let surge_one = strategy("RollingUpdate", Some(int(1)));
    let one = min_available(int(1));
    let three = min_available(int(3));
    let scales = max_unavailable(int(0));
    let blocks = PdbClass::BlocksAll;
    let cannot =
        |cause: &str| Err(SurgeBlocker::CannotSurge(SurgeError::Unsupported { cause: cause.into() }));
    let cases: Vec<SurgeCase> = vec![
        ("one replica, default maxSurge", blocks.clone(), &one, Owner::Deployment(web()), None, Ok(())),
        ("blocked by not-Ready pods", unhealthy(&["p0"], true), &one, Owner::Deployment(web()), None, Ok(())),
        ("a PDB that blocks nothing", PdbClass::Ok, &one, Owner::None, None, Ok(())),
        (
            "pods under two PDBs",
            PdbClass::Overlapping { pods: vec!["p0".into()] },
            &one,
            Owner::Deployment(web()),
            None,
            Err(SurgeBlocker::Overlapping),
        ),
        ("bare pods", blocks.clone(), &one, Owner::None, None, Err(SurgeBlocker::NoOwner)),
        (
            "a StatefulSet",
            blocks.clone(),
            &one,
            Owner::Other("StatefulSet".into()),
            None,
            Err(SurgeBlocker::NotADeployment("StatefulSet".into())),
        ),
        (
            "two Deployments",
            blocks.clone(),
            &one,
            Owner::Several(vec!["a".into(), "b".into()]),
            None,
            Err(SurgeBlocker::SeveralOwners(vec!["a".into(), "b".into()])),
        ),
        (
            "namespace out of scope",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { in_scope: false, ..web() }),
            None,
            Err(SurgeBlocker::NotInScope),
        ),
        (
            "surge opted out",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { surge_enabled: false, ..web() }),
            None,
            Err(SurgeBlocker::OptedOut("web".into())),
        ),
        (
            "Recreate",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { strategy: Some(&recreate), ..web() }),
            None,
            cannot("strategy is Recreate"),
        ),
        (
            "Recreate with the zero-surge override",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { strategy: Some(&recreate), ..web() }),
            Some(int(1)),
            Ok(()),
        ),
        (
            "maxSurge 0",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { strategy: Some(&no_surge), ..web() }),
            None,
            cannot("maxSurge is 0"),
        ),
        (
            "the budget scales with the replicas",
            blocks.clone(),
            &scales,
            Owner::Deployment(web()),
            None,
            Err(SurgeBlocker::BudgetScales),
        ),
        (
            "opens at 4, maxSurge 1 on 2 reaches 3",
            blocks.clone(),
            &three,
            Owner::Deployment(DeploymentView { strategy: Some(&surge_one), baseline: 2, ..web() }),
            None,
            Err(SurgeBlocker::TooSmall {
                needed: 4,
                reachable: 3,
                fix: "raise maxSurge or lower minAvailable",
            }),
        ),
        (
            "the autoscaler's maximum reached",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { autoscaler_max: Some(1), ..web() }),
            None,
            Err(SurgeBlocker::TooSmall { needed: 2, reachable: 1, fix: "raise the autoscaler's maximum" }),
        ),
        (
            "no room for the surge pod",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { room_estimate: Some(0), ..web() }),
            None,
            Err(SurgeBlocker::NoRoom { room: 0, wanted: 1 }),
        ),
        (
            "room for the surge pod",
            blocks.clone(),
            &one,
            Owner::Deployment(DeploymentView { room_estimate: Some(1), ..web() }),
            None,
            Ok(()),
        ),
    ];
    for (name, class, spec, owner, zero_surge_override, want) in cases {
        assert_eq!(surge_opens(&class, spec, &owner, 1, zero_surge_override.as_ref()), want, "{name}");
    }
}

#[test]
fn each_reason_says_what_to_change() {
    let every = [
        SurgeBlocker::Overlapping,
        SurgeBlocker::NoOwner,
        SurgeBlocker::NotADeployment("StatefulSet".into()),
        SurgeBlocker::SeveralOwners(vec!["Deployment/a".into(), "Deployment/b".into()]),
        SurgeBlocker::NotInScope,
        SurgeBlocker::OptedOut("web".into()),
        SurgeBlocker::CannotSurge(SurgeError::Unsupported { cause: "strategy is Recreate".into() }),
        SurgeBlocker::BudgetScales,
        SurgeBlocker::TooSmall { needed: 4, reachable: 3, fix: "raise maxSurge" },
        SurgeBlocker::NoRoom { room: 0, wanted: 1 },
    ];
    // InvalidBudget is left out: it names the field and what is wrong with its value.
    let verbs = ["keep", "run", "relax", "give", "annotate", "remove", "set", "raise", "add"];
    for reason in &every {
        let text = reason.to_string();
        let fix = text.rsplit("; ").next().unwrap_or_default();
        assert!(text.contains("; ") && verbs.iter().any(|v| fix.starts_with(v)), "{text}");
    }
    let mut labels: Vec<&str> = every.iter().map(SurgeBlocker::reason).collect();
    labels.push(
        SurgeBlocker::InvalidBudget(BudgetError {
            field: "minAvailable",
            problem: ScaleError::Negative("-1".into()),
        })
        .reason(),
    );
    labels.sort_unstable();
    labels.dedup();
    let mut listed = SurgeBlocker::REASONS.to_vec();
    listed.sort_unstable();
    assert_eq!(labels, listed, "one metric label per reason, every one listed");
    let opted_out = SurgeBlocker::OptedOut("web".into()).to_string();
    assert!(opted_out.contains("eviction-autoscaler.azure.com/surge"), "{opted_out}");
    let scope = SurgeBlocker::NotInScope.to_string();
    assert!(scope.contains("eviction-autoscaler.azure.com/enable: \"true\""), "{scope}");
}
