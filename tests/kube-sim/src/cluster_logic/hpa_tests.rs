use super::*;
use crate::cluster_logic::test_support::ts;

const NOW: &str = "2026-01-01T12:00:00Z";

fn hpa(min: i64, max: i64) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "prod", "generation": 2},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": min, "maxReplicas": max}})
}

fn condition(sync: &HpaSync, kind: &str) -> (String, String) {
    let c = sync.status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .cloned()
        .unwrap_or_default();
    (c["status"].as_str().unwrap_or("-").to_string(), c["reason"].as_str().unwrap_or("-").to_string())
}

/// (min, max, current, metric hook, rescaled to, desired, ScalingLimited (status, reason)).
type ClampCase = (i64, i64, i64, Option<i64>, Option<i64>, i64, (&'static str, &'static str));

#[test]
fn replicas_are_kept_within_min_and_max() {
    // (min, max, current, metric hook) → (rescale to, desired, ScalingLimited/ScalingActive reason)
    let cases: Vec<ClampCase> = vec![
        (2, 10, 12, None, Some(10), 10, ("-", "-")),
        (2, 10, 1, None, Some(2), 2, ("-", "-")),
        (2, 10, 3, None, None, 3, ("False", "DesiredWithinRange")),
        (2, 10, 3, Some(20), Some(6), 6, ("True", "ScaleUpLimit")),
        (2, 5, 3, Some(20), Some(5), 5, ("True", "TooManyReplicas")),
        (2, 10, 5, Some(1), Some(2), 2, ("True", "TooFewReplicas")),
    ];
    for (min, max, current, hook, rescale, desired, limited) in cases {
        let sync = sync_hpa(&hpa(min, max), Ok(current), hook, ts(NOW));
        assert_eq!(sync.rescale.as_ref().map(|r| r.0), rescale, "{min}..{max} at {current} hook {hook:?}");
        assert_eq!(sync.status["desiredReplicas"], desired);
        assert_eq!(sync.status["currentReplicas"], current);
        let (status, reason) = condition(&sync, "ScalingLimited");
        assert_eq!((status.as_str(), reason.as_str()), limited, "{min}..{max} at {current}");
    }
    let above = sync_hpa(&hpa(2, 10), Ok(12), None, ts(NOW));
    assert_eq!(condition(&above, "AbleToScale"), ("True".into(), "SucceededRescale".into()));
    assert_eq!(above.status["lastScaleTime"], NOW);
    assert_eq!(above.status["observedGeneration"], 2);
    assert_eq!(
        above.rescale.map(|r| r.1),
        Some("Current number of replicas above Spec.MaxReplicas".to_string())
    );
}

#[test]
fn zero_replicas_disable_scaling_and_scale_errors_are_reported() {
    let disabled = sync_hpa(&hpa(1, 10), Ok(0), Some(5), ts(NOW));
    assert_eq!(disabled.rescale, None);
    assert_eq!(disabled.status["desiredReplicas"], 0);
    assert_eq!(condition(&disabled, "ScalingActive"), ("False".into(), "ScalingDisabled".into()));
    let failed = sync_hpa(&hpa(1, 10), Err("deployments.apps \"web\" not found".into()), None, ts(NOW));
    assert_eq!(failed.rescale, None);
    assert_eq!(condition(&failed, "AbleToScale"), ("False".into(), "FailedGetScale".into()));
}

fn scaled_object(annotations: Value) -> Value {
    json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": "web", "namespace": "prod", "uid": "so-uid", "labels": {"team": "a", "secret": "x"},
                     "annotations": annotations},
        "spec": {"scaleTargetRef": {"name": "web"}, "minReplicaCount": 0,
                 "triggers": [{"type": "cron", "metadata": {"value": "3"}}]}})
}

#[test]
fn keda_generates_its_hpa_from_the_scaled_object() {
    let so = scaled_object(json!({"scaledobject.keda.sh/hpa-excluded-labels": "secret"}));
    let hpa = keda_hpa(&so, "2.16.0");
    assert_eq!(hpa["metadata"]["name"], "keda-hpa-web");
    assert_eq!(
        hpa["metadata"]["labels"],
        json!({"team": "a", "app.kubernetes.io/name": "keda-hpa-web",
        "app.kubernetes.io/version": "2.16.0", "app.kubernetes.io/part-of": "web", "app.kubernetes.io/managed-by": "keda-operator"})
    );
    assert_eq!(hpa["metadata"]["annotations"], so["metadata"]["annotations"]);
    assert_eq!(hpa["metadata"]["ownerReferences"][0]["uid"], "so-uid");
    assert_eq!(
        hpa["spec"]["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    );
    assert_eq!(
        (hpa["spec"]["minReplicas"].clone(), hpa["spec"]["maxReplicas"].clone()),
        (json!(1), json!(100))
    );
    assert_eq!(hpa["spec"]["metrics"][0]["external"]["metric"]["name"], "s0-cron");
    assert!(hpa["spec"].get("behavior").is_none());

    let mut custom = scaled_object(Value::Null);
    custom["spec"]["minReplicaCount"] = json!(2);
    custom["spec"]["maxReplicaCount"] = json!(7);
    custom["spec"]["advanced"] = json!({"horizontalPodAutoscalerConfig": {"name": "mine", "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}});
    let hpa = keda_hpa(&custom, "2.16.0");
    assert_eq!(
        (
            hpa["metadata"]["name"].clone(),
            hpa["spec"]["minReplicas"].clone(),
            hpa["spec"]["maxReplicas"].clone()
        ),
        (json!("mine"), json!(2), json!(7))
    );
    assert!(hpa["metadata"].get("annotations").is_none());
    assert_eq!(hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 0);
    let paused = keda_hpa(&scaled_object(json!({"autoscaling.keda.sh/paused-replicas": "0"})), "2.16.0");
    assert_eq!(
        (paused["spec"]["minReplicas"].clone(), paused["spec"]["maxReplicas"].clone()),
        (json!(1), json!(1))
    );
}

/// §5.5: which direct edits KEDA reverts.
#[test]
fn direct_edits_of_the_keda_hpa_are_reverted_as_keda_does() {
    for (so_annotations, edit, reverted) in [
        (Value::Null, "none", false),
        (Value::Null, "minReplicas", true),
        (Value::Null, "scaleTargetRef", true),
        (Value::Null, "add metric", true),
        (Value::Null, "add behavior", true),
        (Value::Null, "add label", false),
        (Value::Null, "remove KEDA label", true),
        (Value::Null, "add annotation", true),
        (json!({"a": "b"}), "add annotation", false),
        (json!({"a": "b"}), "change annotation", true),
    ] {
        let desired = keda_hpa(&scaled_object(so_annotations.clone()), "2.16.0");
        let mut found = desired.clone();
        found["metadata"]["resourceVersion"] = json!("42");
        found["status"] = json!({"currentReplicas": 1});
        match edit {
            "minReplicas" => found["spec"]["minReplicas"] = json!(3),
            "scaleTargetRef" => found["spec"]["scaleTargetRef"]["name"] = json!("other"),
            "add metric" => {
                found["spec"]["metrics"] = json!([found["spec"]["metrics"][0].clone(), {"type": "Resource"}])
            }
            "add behavior" => {
                found["spec"]["behavior"] = json!({"scaleUp": {"stabilizationWindowSeconds": 5}})
            }
            "add label" => found["metadata"]["labels"]["extra"] = json!("1"),
            "remove KEDA label" => {
                if let Some(labels) = found["metadata"]["labels"].as_object_mut() {
                    labels.remove("app.kubernetes.io/managed-by");
                }
            }
            "add annotation" => found["metadata"]["annotations"]["x"] = json!("y"),
            "change annotation" => found["metadata"]["annotations"]["a"] = json!("c"),
            _ => {}
        }
        let update = keda_hpa_update(&desired, &found);
        assert_eq!(update.is_some(), reverted, "{edit} with SO annotations {so_annotations}");
        if let Some(update) = update {
            assert_eq!(update, desired, "the update is the desired HPA wholesale");
        }
    }
}
