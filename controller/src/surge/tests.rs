//! Table tests of the surge state machine: one case per rule of ARCHITECTURE.md §4.1–4.3.

use std::collections::BTreeMap;

use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_shared::keys;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::decide::events;
use super::state::{OverrideHistory, SURGE_OVERRIDES, SurgeState};
use super::status::{StatusFacts, render};
use super::*;
use crate::displaced::Displacement;
use crate::keda::{ScaleTargetRef, ScaledObjectSpec};

pub(crate) fn config() -> Config {
    Config::resolve(&SettingsArgs::default(), None).expect("defaults are valid")
}

pub(crate) fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("in range")
}

pub(super) fn deployment(replicas: i32, annotations: &[(&str, &str)]) -> Deployment {
    crate::fixtures::deployment("prod", "web", replicas, &[], annotations)
}

fn with_max_surge(mut d: Deployment, max_surge: IntOrString) -> Deployment {
    if let Some(spec) = d.spec.as_mut() {
        spec.strategy = Some(DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(max_surge),
                max_unavailable: None,
            }),
        });
    }
    d
}

fn recreate(mut d: Deployment) -> Deployment {
    if let Some(spec) = d.spec.as_mut() {
        spec.strategy = Some(DeploymentStrategy { type_: Some("Recreate".into()), rolling_update: None });
    }
    d
}

fn pdb(
    name: &str,
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
    allowed: i32,
) -> PodDisruptionBudget {
    let mut p = PodDisruptionBudget::default();
    p.metadata.name = Some(name.into());
    p.spec = Some(PodDisruptionBudgetSpec { min_available, max_unavailable, ..Default::default() });
    p.status = Some(PodDisruptionBudgetStatus { disruptions_allowed: allowed, ..Default::default() });
    p
}

pub(super) fn min_available(n: i32, allowed: i32) -> PodDisruptionBudget {
    pdb("web", Some(IntOrString::Int(n)), None, allowed)
}

fn hpa(min: Option<i32>, max: i32, annotations: &[(&str, &str)]) -> HorizontalPodAutoscaler {
    let mut h = HorizontalPodAutoscaler::default();
    h.metadata.name = Some("web-hpa".into());
    h.metadata.resource_version = Some("11".into());
    h.metadata.annotations = (!annotations.is_empty())
        .then(|| annotations.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect());
    h.spec = Some(HorizontalPodAutoscalerSpec {
        min_replicas: min,
        max_replicas: max,
        scale_target_ref: CrossVersionObjectReference {
            kind: "Deployment".into(),
            name: "web".into(),
            api_version: Some("apps/v1".into()),
        },
        ..Default::default()
    });
    h
}

fn scaled_object(min: Option<i32>, max: Option<i32>, annotations: &[(&str, &str)]) -> ScaledObject {
    let mut so = ScaledObject::new(
        "web-so",
        ScaledObjectSpec {
            scale_target_ref: ScaleTargetRef { name: "web".into(), ..Default::default() },
            min_replica_count: min,
            max_replica_count: max,
        },
    );
    so.metadata.resource_version = Some("13".into());
    so.metadata.annotations = (!annotations.is_empty())
        .then(|| annotations.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect());
    so
}

/// An in-scope Deployment with `displaced` pods displaced, all still on a draining node.
pub(super) fn observed(d: Deployment, pdbs: Vec<PodDisruptionBudget>, displaced: u32) -> Observed {
    Observed {
        deployment: d,
        namespace_enabled: true,
        pdbs,
        displacement: Displacement { displaced, on_draining_nodes: displaced },
        any_node_draining: displaced > 0,
        last_signal: Some(at(0)),
        new_signal: true,
        ..Default::default()
    }
}

fn edits(pairs: &[(&str, Option<&str>)]) -> AnnotationEdits {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned))).collect()
}

fn deployment_write(value: Option<i32>, annotations: AnnotationEdits) -> Write {
    Write {
        kind: ScalerKind::Deployment,
        name: "web".into(),
        resource_version: Some("7".into()),
        value,
        annotations,
        deployment_replicas: None,
    }
}

pub(super) fn surged(replicas: i32, surge: i32, baseline: i32) -> Deployment {
    deployment(
        replicas,
        &[(keys::SURGE_REPLICAS, &surge.to_string()), (keys::ORIGINAL_MIN_REPLICAS, &baseline.to_string())],
    )
}

fn cleared() -> AnnotationEdits {
    edits(&[(keys::SURGE_REPLICAS, None), (keys::ORIGINAL_MIN_REPLICAS, None), (SURGE_OVERRIDES, None)])
}

fn reasons_of(plan: &Plan) -> Vec<&'static str> {
    plan.events.iter().map(|e| e.reason).collect()
}

#[test]
fn surge_start_cases() {
    let cases: Vec<(&str, Observed, Option<Write>, Option<&str>)> = vec![
        (
            "1 replica + minAvailable 1: surge to 2 with the baseline recorded",
            observed(deployment(1, &[]), vec![min_available(1, 0)], 1),
            Some(deployment_write(
                Some(2),
                edits(&[(keys::SURGE_REPLICAS, Some("2")), (keys::ORIGINAL_MIN_REPLICAS, Some("1"))]),
            )),
            None,
        ),
        (
            "3 replicas, 2 displaced, maxSurge 1: capped at 4",
            observed(with_max_surge(deployment(3, &[]), IntOrString::Int(1)), vec![min_available(3, 0)], 2),
            Some(deployment_write(
                Some(4),
                edits(&[(keys::SURGE_REPLICAS, Some("4")), (keys::ORIGINAL_MIN_REPLICAS, Some("3"))]),
            )),
            None,
        ),
        (
            "eviction would succeed anyway: no write",
            observed(deployment(3, &[]), vec![min_available(2, 1)], 1),
            None,
            None,
        ),
        (
            "nothing displaced: no write",
            observed(deployment(1, &[]), vec![min_available(1, 0)], 0),
            None,
            None,
        ),
        ("no PDB: no write", observed(deployment(1, &[]), vec![], 1), None, None),
        (
            "namespace out of scope: no write",
            Observed {
                namespace_enabled: false,
                ..observed(deployment(1, &[]), vec![min_available(1, 0)], 1)
            },
            None,
            None,
        ),
        (
            "opted out: no write",
            observed(deployment(1, &[(keys::SURGE, "false")]), vec![min_available(1, 0)], 1),
            None,
            None,
        ),
        (
            "two PDBs: Degraded, no write",
            observed(
                deployment(1, &[]),
                vec![min_available(1, 0), pdb("other", Some(IntOrString::Int(1)), None, 0)],
                1,
            ),
            None,
            Some(reasons::MULTIPLE_PDBS),
        ),
        (
            "maxUnavailable 0 cannot be opened",
            observed(deployment(2, &[]), vec![pdb("web", None, Some(IntOrString::Int(0)), 0)], 1),
            None,
            Some(reasons::CANNOT_OPEN_BUDGET),
        ),
        (
            "minAvailable 100% cannot be opened",
            observed(
                deployment(2, &[]),
                vec![pdb("web", Some(IntOrString::String("100%".into())), None, 0)],
                1,
            ),
            None,
            Some(reasons::CANNOT_OPEN_BUDGET),
        ),
        (
            "minAvailable above what maxSurge can reach",
            observed(deployment(1, &[]), vec![min_available(5, 0)], 1),
            None,
            Some(reasons::CANNOT_OPEN_BUDGET),
        ),
        (
            "Recreate without override: Degraded",
            observed(recreate(deployment(1, &[])), vec![min_available(1, 0)], 1),
            None,
            Some("UnsupportedSurgeConfiguration"),
        ),
        (
            "maxSurge 0 without override: Degraded",
            observed(with_max_surge(deployment(1, &[]), IntOrString::Int(0)), vec![min_available(1, 0)], 1),
            None,
            Some("UnsupportedSurgeConfiguration"),
        ),
        (
            "403 earlier: SurgeForbidden, no write",
            Observed {
                forbidden: Some("admission webhook denied".into()),
                ..observed(deployment(1, &[]), vec![min_available(1, 0)], 1)
            },
            None,
            Some(reasons::FORBIDDEN),
        ),
    ];
    for (name, obs, want_write, want_degraded) in cases {
        let plan = plan(&obs, &config(), at(5));
        assert_eq!(plan.write, want_write, "{name}: write");
        assert_eq!(plan.degraded.as_ref().map(|d| d.reason), want_degraded, "{name}: degraded");
        if plan.write.is_some() {
            assert_eq!(reasons_of(&plan), [events::STARTED], "{name}");
            assert!(plan.next_check.is_some(), "{name}: an active surge always has a timer");
        }
        if want_degraded.is_some() {
            assert!(reasons_of(&plan).contains(&events::DEGRADED), "{name}: Degraded Event");
        }
    }
}

#[test]
fn opt_out_and_no_room_emit_surge_skipped_only_for_a_new_signal() {
    let obs = observed(deployment(1, &[(keys::SURGE, "false")]), vec![min_available(1, 0)], 1);
    assert_eq!(reasons_of(&plan(&obs, &config(), at(5))), [events::SKIPPED]);
    let quiet = Observed { new_signal: false, ..obs };
    assert!(plan(&quiet, &config(), at(5)).events.is_empty());
}

#[test]
fn zero_surge_override_enables_a_surge() {
    let mut config = config();
    config.zero_surge_override = Some(IntOrString::Int(1));
    let obs = observed(recreate(deployment(1, &[])), vec![min_available(1, 0)], 1);
    let plan = plan(&obs, &config, at(5));
    assert_eq!(plan.write.and_then(|w| w.value), Some(2));
    assert_eq!(plan.degraded, None);
}

#[test]
fn degraded_event_is_emitted_once() {
    let obs = observed(deployment(2, &[]), vec![pdb("web", None, Some(IntOrString::Int(0)), 0)], 1);
    let first = plan(&obs, &config(), at(5));
    let status = render(None, &first, &StatusFacts::default(), at(5));
    let again = Observed { previous: Some(status), ..obs };
    assert!(plan(&again, &config(), at(6)).events.is_empty());
}

#[test]
fn autoscaler_cases() {
    let base = || observed(deployment(2, &[]), vec![min_available(2, 0)], 2);
    // 25% of 2 rounds up to 1: target 3 on the HPA, Deployment scaled at once.
    let obs = Observed { hpas: vec![hpa(Some(2), 10, &[])], ..base() };
    let want = Write {
        kind: ScalerKind::Hpa,
        name: "web-hpa".into(),
        resource_version: Some("11".into()),
        value: Some(3),
        annotations: edits(&[(keys::SURGE_REPLICAS, Some("3")), (keys::ORIGINAL_MIN_REPLICAS, Some("2"))]),
        deployment_replicas: Some(3),
    };
    assert_eq!(plan(&obs, &config(), at(5)).write, Some(want), "HPA min raised");

    let capped = Observed { hpas: vec![hpa(Some(2), 2, &[])], ..base() };
    let p = plan(&capped, &config(), at(5));
    assert_eq!(p.write, None, "HPA max equals min: never above max");

    let keda = Observed { scaled_objects: vec![scaled_object(Some(2), Some(20), &[])], ..base() };
    let p = plan(&keda, &config(), at(5));
    let w = p.write.expect("KEDA surge");
    assert_eq!((w.kind, w.value, w.deployment_replicas), (ScalerKind::ScaledObject, Some(3), Some(3)));

    let both = Observed { hpas: vec![hpa(Some(2), 10, &[])], ..keda.clone() };
    let p = plan(&both, &config(), at(5));
    assert_eq!(p.write, None);
    assert_eq!(p.degraded.map(|d| d.reason), Some(reasons::UNSUPPORTED_AUTOSCALER));

    let mut generated = hpa(Some(2), 10, &[]);
    generated.metadata.labels =
        Some([(keys::KEDA_SCALED_OBJECT_LABEL.to_owned(), "web-so".to_owned())].into());
    let keda_with_its_hpa = Observed { hpas: vec![generated], ..keda };
    assert_eq!(
        plan(&keda_with_its_hpa, &config(), at(5)).write.map(|w| w.kind),
        Some(ScalerKind::ScaledObject),
        "the HPA KEDA generates is not a second autoscaler"
    );
}

#[test]
fn a_surge_never_exceeds_baseline_plus_max_surge() {
    for baseline in 1..12 {
        for displaced in 0..15u32 {
            for max_surge in 1..5 {
                let d = with_max_surge(deployment(baseline, &[]), IntOrString::Int(max_surge));
                let obs = observed(d, vec![min_available(baseline, 0)], displaced);
                if let Some(value) = plan(&obs, &config(), at(5)).write.and_then(|w| w.value) {
                    assert!(
                        value <= baseline + max_surge && value > baseline,
                        "{baseline} {displaced} {max_surge}"
                    );
                    assert!(value <= baseline + displaced as i32);
                }
            }
        }
    }
}

#[test]
fn hold_and_revert_cases() {
    let cfg = config(); // cooldown 60 s, max-hold 1 h
    let drained = |d: Deployment| Observed {
        displacement: Displacement::default(),
        any_node_draining: false,
        new_signal: false,
        ..observed(d, vec![min_available(1, 1)], 0)
    };
    type Case = (&'static str, Observed, i64, Option<Write>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "pods still on the draining node after the cooldown (kubectl back-off): hold",
            Observed { new_signal: false, ..observed(surged(2, 2, 1), vec![min_available(1, 1)], 1) },
            300,
            None,
            vec![],
        ),
        ("within the cooldown: hold", drained(surged(2, 2, 1)), 30, None, vec![]),
        (
            "another node still draining: hold",
            Observed { any_node_draining: true, ..drained(surged(2, 2, 1)) },
            300,
            None,
            vec![],
        ),
        (
            "drain over and cooldown passed: back to baseline, annotations gone",
            drained(surged(2, 2, 1)),
            61,
            Some(deployment_write(Some(1), cleared())),
            vec![events::REVERTED],
        ),
        (
            "user scaled to 5 mid-surge: 5 kept, annotations gone",
            drained(surged(5, 2, 1)),
            61,
            Some(deployment_write(None, cleared())),
            vec![events::REVERTED],
        ),
        (
            "forgotten cordon: reverted after max-hold",
            Observed { new_signal: false, ..observed(surged(2, 2, 1), vec![min_available(1, 1)], 1) },
            3600,
            Some(deployment_write(Some(1), cleared())),
            vec![events::EXPIRED],
        ),
        (
            "namespace left scope mid-surge: reverted at once",
            Observed { namespace_enabled: false, ..drained(surged(2, 2, 1)) },
            1,
            Some(deployment_write(Some(1), cleared())),
            vec![events::REVERTED],
        ),
        (
            "Go-written surge with baseline 0 on a Deployment: never reverted to 0",
            drained(surged(2, 2, 0)),
            61,
            Some(deployment_write(None, cleared())),
            vec![events::REVERTED],
        ),
        (
            "Go-written marker without a baseline: replicas kept",
            drained(deployment(2, &[(keys::SURGE_REPLICAS, "2")])),
            61,
            Some(deployment_write(None, cleared())),
            vec![events::REVERTED],
        ),
    ];
    for (name, obs, secs, want, want_events) in cases {
        let plan = plan(&obs, &cfg, at(secs));
        assert_eq!(plan.write, want, "{name}");
        assert_eq!(reasons_of(&plan), want_events, "{name}");
        if plan.write.is_none() {
            let next = plan.next_check.expect("held surge has a timer");
            assert!(next > at(secs) && next <= at(3600), "{name}: timer {next}");
        }
    }
}

#[test]
fn autoscaler_reverts_restore_the_minimum_and_honour_a_recorded_zero() {
    let drained = |mut obs: Observed| {
        obs.displacement = Displacement::default();
        obs.any_node_draining = false;
        obs
    };
    let surge_marks = [(keys::SURGE_REPLICAS, "3"), (keys::ORIGINAL_MIN_REPLICAS, "2")];
    let obs = drained(Observed {
        hpas: vec![hpa(Some(3), 10, &surge_marks)],
        ..observed(deployment(3, &[]), vec![min_available(2, 1)], 0)
    });
    let w = plan(&obs, &config(), at(61)).write.expect("revert");
    assert_eq!(
        (w.kind, w.value, w.deployment_replicas),
        (ScalerKind::Hpa, Some(2), None),
        "HPA scales down itself"
    );

    let zero = [(keys::SURGE_REPLICAS, "1"), (keys::ORIGINAL_MIN_REPLICAS, "0")];
    let obs = drained(Observed {
        scaled_objects: vec![scaled_object(Some(1), None, &zero)],
        ..observed(deployment(1, &[]), vec![min_available(1, 1)], 0)
    });
    assert_eq!(
        plan(&obs, &config(), at(61)).write.and_then(|w| w.value),
        Some(0),
        "KEDA scale-to-zero restored"
    );
}

#[test]
fn step_up_when_more_pods_are_displaced() {
    let d = with_max_surge(surged(4, 4, 3), IntOrString::Int(2));
    let obs = observed(d, vec![min_available(3, 0)], 2);
    let plan = plan(&obs, &config(), at(5));
    assert_eq!(plan.outcome, Outcome::SteppedUp);
    let w = plan.write.expect("step up");
    assert_eq!(w.value, Some(5));
    assert!(!w.annotations.contains_key(keys::ORIGINAL_MIN_REPLICAS), "baseline written once");
}

#[test]
fn overrides_back_off_then_give_up() {
    let cfg = config();
    let blocked = |d: Deployment| observed(d, vec![min_available(1, 0)], 1);
    // 1st reset: recorded, re-surge scheduled after the back-off.
    let p = plan(&blocked(surged(1, 2, 1)), &cfg, at(5));
    assert_eq!(p.outcome, Outcome::OverrideRecorded);
    assert_eq!(reasons_of(&p), [events::OVERRIDDEN]);
    let w = p.write.expect("history write");
    assert_eq!(w.value, None, "no write fight: replicas untouched");
    let history = w.annotations[SURGE_OVERRIDES].clone().expect("history set");
    let recorded: OverrideHistory = serde_json::from_str(&history).expect("json");
    assert_eq!((recorded.count, recorded.resurge_at), (1, Some(at(15))));
    assert_eq!(p.next_check, Some(at(15)));

    let waiting = |count: u32, due: Option<i64>| {
        let history = OverrideHistory { count, last: Some(at(5)), resurge_at: due.map(at), gave_up: false };
        let mut d = surged(1, 2, 1);
        if let Some(a) = d.metadata.annotations.as_mut() {
            a.insert(SURGE_OVERRIDES.into(), serde_json::to_string(&history).expect("json"));
        }
        blocked(d)
    };
    // Before the back-off ends: nothing.
    let p = plan(&waiting(1, Some(15)), &cfg, at(10));
    assert_eq!((p.write, p.next_check), (None, Some(at(15))));
    // After it: one re-surge, history kept without the due time.
    let p = plan(&waiting(1, Some(15)), &cfg, at(16));
    assert_eq!(p.outcome, Outcome::Resurged);
    let w = p.write.expect("re-surge");
    assert_eq!(w.value, Some(2));
    let kept: OverrideHistory =
        serde_json::from_str(w.annotations[SURGE_OVERRIDES].as_deref().unwrap_or("{}")).expect("json");
    assert_eq!((kept.count, kept.resurge_at), (1, None));
    // A third reset (count already 2): give up, leave their value.
    let p = plan(&waiting(2, None), &cfg, at(100));
    assert_eq!(reasons_of(&p), [events::OVERRIDDEN]);
    let w = p.write.expect("gave-up record");
    assert_eq!(w.value, None);
    let state = SurgeState::read(Some(
        &w.annotations.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))).collect::<BTreeMap<_, _>>(),
    ));
    assert!(state.overrides.gave_up);
}

#[test]
fn unschedulable_surge_pods_stop_further_scaling_and_are_reported_once() {
    let d = with_max_surge(surged(4, 4, 3), IntOrString::Int(2));
    let obs = Observed { unschedulable_pods: 1, ..observed(d, vec![min_available(3, 0)], 2) };
    let first = plan(&obs, &config(), at(5));
    assert_eq!(first.write, None, "no step up into a full cluster");
    assert_eq!(first.degraded.as_ref().map(|d| d.reason), Some(reasons::UNSCHEDULABLE));
    assert_eq!(reasons_of(&first), [events::UNSCHEDULABLE]);
    let status = render(None, &first, &StatusFacts::default(), at(5));
    let again = Observed { previous: Some(status), ..obs };
    assert!(plan(&again, &config(), at(6)).events.is_empty());
}

#[test]
fn an_invalid_surge_annotation_is_reported_and_treated_as_unset() {
    let obs = observed(deployment(1, &[(keys::SURGE, "maybe")]), vec![min_available(1, 0)], 1);
    let p = plan(&obs, &config(), at(5));
    assert_eq!(reasons_of(&p), [events::INVALID_ANNOTATION, events::STARTED], "surges as if unset");
    let quiet = Observed { new_signal: false, ..obs };
    assert_eq!(reasons_of(&plan(&quiet, &config(), at(5))), [events::STARTED]);
}
