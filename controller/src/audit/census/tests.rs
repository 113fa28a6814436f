//! The census of one namespace holding a PDB of every class the caches can tell, objects
//! shaped as the API server returns them, each PDB with the status the disruption controller
//! writes for its pods.

use eviction_autoscaler_shared::config::SettingsArgs;
use serde_json::{Value, json};

use super::*;

fn config() -> Config {
    Config::resolve(&SettingsArgs::default(), None).expect("defaults are valid")
}

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

fn deployment(name: &str, replicas: i32, annotations: Value, strategy: Value) -> Deployment {
    object(json!({
        "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
        "spec": {"replicas": replicas, "strategy": strategy, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}}}
    }))
}

/// A PDB over `app` with `budget` (`{"minAvailable": 1}`) and the status
/// `[expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed]`, or none.
fn pdb(name: &str, app: &str, budget: Value, status: Option<[i32; 4]>) -> PodDisruptionBudget {
    let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
    spec.as_object_mut().unwrap().extend(budget.as_object().unwrap().clone());
    let status = status.map_or(Value::Null, |[expected, desired, current, allowed]| {
        json!({"expectedPods": expected, "desiredHealthy": desired, "currentHealthy": current,
               "disruptionsAllowed": allowed, "observedGeneration": 1})
    });
    object(
        json!({"metadata": {"name": name, "namespace": "apps", "generation": 1}, "spec": spec, "status": status}),
    )
}

fn census(pdbs: &[PodDisruptionBudget], deployments: &[Deployment], in_scope: bool) -> Census {
    let annotations: BTreeMap<String, String> = if in_scope {
        [("eviction-autoscaler.azure.com/enable".to_owned(), "true".to_owned())].into()
    } else {
        BTreeMap::new()
    };
    let mut census = Census::default();
    let namespace =
        NamespaceCache { annotations: Some(&annotations), pdbs, deployments, hpas: &[], scaled_objects: &[] };
    census.count(namespace, &config());
    census
}

fn counts(pairs: &[(&'static str, i64)]) -> BTreeMap<&'static str, i64> {
    pairs.iter().copied().collect()
}

#[test]
fn every_class_and_every_reason_the_caches_can_tell() {
    let none = json!({});
    let deployments = [
        deployment("single", 1, none.clone(), none.clone()),
        deployment("zero", 3, none.clone(), none.clone()),
        deployment("pinned", 2, json!({"eviction-autoscaler.azure.com/surge": "false"}), none.clone()),
        deployment("recreate", 2, none.clone(), json!({"type": "Recreate"})),
        deployment("shared", 2, none.clone(), none.clone()),
        deployment("sick", 3, none.clone(), none.clone()),
        deployment("free", 3, none.clone(), none.clone()),
    ];
    let pdbs = [
        // One replica under minAvailable 1: blocks every drain, and our surge opens it.
        pdb("single", "single", json!({"minAvailable": 1}), Some([1, 1, 1, 0])),
        // A StatefulSet's pods: no Deployment's template matches.
        pdb("db", "db", json!({"minAvailable": 1}), Some([1, 1, 1, 0])),
        pdb("zero", "zero", json!({"maxUnavailable": 0}), Some([3, 3, 3, 0])),
        pdb("pinned", "pinned", json!({"minAvailable": 2}), Some([2, 2, 2, 0])),
        pdb("recreate", "recreate", json!({"minAvailable": 2}), Some([2, 2, 2, 0])),
        pdb("shared-a", "shared", json!({"minAvailable": 1}), Some([2, 1, 2, 1])),
        pdb("shared-b", "shared", json!({"maxUnavailable": 1}), Some([2, 1, 2, 1])),
        // 3 replicas, one not Ready: closed now, open once it is (and our surge opens it).
        pdb("sick", "sick", json!({"minAvailable": 2}), Some([3, 2, 2, 0])),
        pdb("free", "free", json!({"minAvailable": 1}), Some([3, 1, 3, 2])),
        pdb("nothing", "gone", json!({"minAvailable": 1}), Some([0, 1, 0, 0])),
        // Not processed by the disruption controller yet: not judged.
        pdb("new", "later", json!({"minAvailable": 1}), None),
    ];
    let found = census(&pdbs, &deployments, true);
    assert_eq!(
        found.pdbs,
        counts(&[("blocks_all", 5), ("unhealthy", 1), ("overlapping", 2), ("no_effect", 1), ("ok", 1)])
    );
    assert_eq!(
        found.drain_blockers,
        counts(&[
            ("not_a_deployment", 1),
            ("budget_scales", 1),
            ("opted_out", 1),
            ("cannot_surge", 1),
            ("overlapping", 2),
        ])
    );

    // Out of scope, even the budget our surge would open is a blocker.
    let out = census(&pdbs[..1], &deployments, false);
    assert_eq!(out.pdbs, counts(&[("blocks_all", 1)]));
    assert_eq!(out.drain_blockers, counts(&[("not_in_scope", 1)]));
}

#[test]
fn a_budget_over_two_deployments_and_an_unreadable_one_left_out() {
    let deployments =
        [deployment("web", 1, json!({}), json!({})), deployment("api", 1, json!({}), json!({}))];
    let mut both = pdb("both", "web", json!({"minAvailable": 2}), Some([2, 2, 2, 0]));
    both.spec.as_mut().unwrap().selector = Some(object(
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}),
    ));
    let broken = pdb("broken", "other", json!({"minAvailable": "lots"}), Some([1, 1, 1, 0]));
    let found = census(&[both, broken], &deployments, true);
    assert_eq!(found.pdbs, counts(&[("blocks_all", 1)]));
    assert_eq!(found.drain_blockers, counts(&[("several_owners", 1)]));
}
