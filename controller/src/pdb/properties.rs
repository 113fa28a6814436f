//! Property test: the default PDB's `minAvailable` over random replicas, HPA and KEDA floors
//! and surge markers, against a model written here from ARCHITECTURE.md §4.5.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use eviction_autoscaler_shared::keys;

use super::catalogue::SkipReason;
use super::fixtures::{CRD_UID, config, deployment, labels, namespace};
use super::{Action, Autoscaler, NamespaceView, plan_deployment};

#[derive(Clone, Debug)]
enum Floor {
    Replicas,
    Hpa(Option<i32>),
    Keda(Option<i32>),
}

/// What the model expects: a PDB with this `minAvailable`, or no PDB for this reason.
fn model(replicas: Option<i32>, floor: &Floor, marker: Option<&(i32, String)>) -> Result<i32, SkipReason> {
    let unsurged = match floor {
        Floor::Replicas => replicas.unwrap_or(1),
        Floor::Hpa(min) => min.unwrap_or(1),
        Floor::Keda(min) => min.unwrap_or(0),
    };
    let floor = match marker {
        None => unsurged,
        // While a surge is active the recorded baseline is the floor, never the surged value.
        Some((_, baseline)) => baseline.trim().parse().map_err(|_| SkipReason::SurgeBaselineUnknown)?,
    };
    if floor > 0 { Ok(floor) } else { Err(SkipReason::ZeroMinAvailable) }
}

fn floor() -> impl Strategy<Value = Floor> {
    let min = proptest::option::of(0..10i32);
    prop_oneof![Just(Floor::Replicas), min.clone().prop_map(Floor::Hpa), min.prop_map(Floor::Keda)]
}

fn baseline_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..15i32).prop_map(|n| n.to_string()),
        (0..15i32).prop_map(|n| format!(" {n} ")),
        Just(String::new()),
        Just("x".to_owned())
    ]
}

proptest! {
    #![proptest_config(Config { cases: 2000, rng_seed: RngSeed::Fixed(20261203), failure_persistence: None, ..Config::default() })]

    #[test]
    fn default_min_available_follows_the_model(
        replicas in proptest::option::of(0..20i32),
        floor in floor(),
        marker in proptest::option::of((1..30i32, baseline_text())),
    ) {
        let marker_annotations = marker.as_ref().map(|(surged, baseline)| {
            labels(&[(keys::SURGE_REPLICAS, &surged.to_string()), (keys::ORIGINAL_MIN_REPLICAS, baseline)])
        });
        let mut web = deployment("web", 0, &[("app", "web")]);
        if let Some(spec) = web.spec.as_mut() {
            spec.replicas = replicas;
        }
        let autoscaler = match &floor {
            Floor::Replicas => {
                web.metadata.annotations = marker_annotations.clone();
                None
            }
            Floor::Hpa(min) => Some(Autoscaler::Hpa { min_replicas: *min, annotations: marker_annotations.as_ref() }),
            Floor::Keda(min) => Some(Autoscaler::Keda { min_replica_count: *min, annotations: marker_annotations.as_ref() }),
        };
        let team = namespace("team", &[]);
        let deployments = [web.clone()];
        let view = NamespaceView { namespace: &team, pdbs: &[], deployments: &deployments };
        let plan = plan_deployment(&web, autoscaler.as_ref(), &view, &config(), CRD_UID);
        match (model(replicas, &floor, marker.as_ref()), plan.action) {
            (Ok(min), Action::Create { pdb }) => {
                let spec = pdb.spec.expect("a spec");
                prop_assert_eq!(spec.min_available, Some(IntOrString::Int(min)));
            }
            (Err(reason), Action::Skip { reason: skipped, .. }) => prop_assert_eq!(skipped, reason),
            (expected, action) => prop_assert!(false, "model {:?}, plan {:?}", expected, action),
        }
    }
}
