//! The HPA controller without a metrics pipeline (k8s-semantics §5.2) and the HPA KEDA
//! generates for a ScaledObject, with KEDA's revert-on-edit rule (§5.4, §5.5).

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::common::{format_time, int_at, name_of, namespace_of, uid_of};

/// What one HPA sync does.
#[derive(Clone, Debug, PartialEq)]
pub struct HpaSync {
    /// `PUT <target>/scale` with this `spec.replicas`, and the event reason
    /// (`New size: <n>; reason: <reason>`).
    pub rescale: Option<(i64, String)>,
    /// The HPA's new `status`.
    pub status: Value,
}

fn set_hpa_condition(
    conditions: &mut Vec<Value>,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let mut condition = json!({"type": kind, "status": status, "lastTransitionTime": format_time(now), "reason": reason, "message": message});
    if let Some(old) = conditions.iter().find(|c| c["type"] == kind).filter(|c| c["status"] == status) {
        condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
    }
    conditions.retain(|c| c["type"] != kind);
    conditions.push(condition);
}

/// One `reconcileAutoscaler` pass. `current` is the target's `/scale` `spec.replicas` (or the
/// error reading it); `metric_desired` replaces the metrics pipeline (a test hook: None keeps
/// the current count). Stabilization windows and behavior policies are not modelled.
pub fn sync_hpa(
    hpa: &Value,
    current: Result<i64, String>,
    metric_desired: Option<i64>,
    now: Timestamp,
) -> HpaSync {
    let mut conditions =
        hpa.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut status = hpa.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let current = match current {
        Ok(current) => current,
        Err(error) => {
            let message = format!("the HPA controller was unable to get the target's current scale: {error}");
            set_hpa_condition(&mut conditions, "AbleToScale", "False", "FailedGetScale", &message, now);
            status["conditions"] = Value::Array(conditions);
            return HpaSync { rescale: None, status };
        }
    };
    set_hpa_condition(
        &mut conditions,
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
        now,
    );
    let (min, max) = (int_at(hpa, "/spec/minReplicas", 1), int_at(hpa, "/spec/maxReplicas", 1));
    let (desired, reason) = if current == 0 && min != 0 {
        set_hpa_condition(
            &mut conditions,
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
            now,
        );
        (0, None)
    } else if current > max {
        (max, Some("Current number of replicas above Spec.MaxReplicas".to_string()))
    } else if current < min {
        (min, Some("Current number of replicas below Spec.MinReplicas".to_string()))
    } else {
        let wanted = metric_desired.unwrap_or(current);
        let scale_up_limit = (2 * current).max(4);
        let (ceiling, limit_reason, limit_message) = if max > scale_up_limit {
            (
                scale_up_limit,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        } else {
            (max, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
        };
        let desired = if wanted < min {
            set_hpa_condition(
                &mut conditions,
                "ScalingLimited",
                "True",
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
                now,
            );
            min
        } else if wanted > ceiling {
            set_hpa_condition(&mut conditions, "ScalingLimited", "True", limit_reason, limit_message, now);
            ceiling
        } else {
            set_hpa_condition(
                &mut conditions,
                "ScalingLimited",
                "False",
                "DesiredWithinRange",
                "the desired count is within the acceptable range",
                now,
            );
            wanted
        };
        let reason = (desired != current).then(|| {
            if desired > current {
                "All metrics above target".to_string()
            } else {
                "All metrics below target".to_string()
            }
        });
        (desired, reason)
    };
    let rescale = reason.map(|r| (desired, r));
    if let Some((n, _)) = &rescale {
        let message = format!("the HPA controller was able to update the target scale to {n}");
        set_hpa_condition(&mut conditions, "AbleToScale", "True", "SucceededRescale", &message, now);
        status["lastScaleTime"] = json!(format_time(now));
    }
    status["currentReplicas"] = json!(current);
    status["desiredReplicas"] = json!(desired);
    if let Some(generation) = hpa.pointer("/metadata/generation") {
        status["observedGeneration"] = generation.clone();
    }
    status["conditions"] = Value::Array(conditions);
    HpaSync { rescale, status }
}

/// The HPA name KEDA uses for `scaled_object`.
pub fn keda_hpa_name(scaled_object: &Value) -> String {
    scaled_object
        .pointer("/spec/advanced/horizontalPodAutoscalerConfig/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("keda-hpa-{}", name_of(scaled_object)), String::from)
}

/// `newHPAForScaledObject`: the HPA KEDA wants for `scaled_object` (`keda_version` goes into
/// `app.kubernetes.io/version`). Each trigger becomes one External metric named
/// `s<i>-<type>` with an `AverageValue` target of its `metadata.value` (or "1").
pub fn keda_hpa(scaled_object: &Value, keda_version: &str) -> Value {
    let so_name = name_of(scaled_object);
    let hpa_name = keda_hpa_name(scaled_object);
    let mut short: String = hpa_name.chars().take(63).collect();
    while short.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        short.pop();
    }
    let excluded: Vec<String> = scaled_object
        .pointer("/metadata/annotations/scaledobject.keda.sh~1hpa-excluded-labels")
        .and_then(Value::as_str)
        .map(|s| s.split(',').map(|l| l.trim().to_string()).collect())
        .unwrap_or_default();
    let mut labels = Map::new();
    for (k, v) in scaled_object.pointer("/metadata/labels").and_then(Value::as_object).into_iter().flatten() {
        if !excluded.contains(k) {
            labels.insert(k.clone(), v.clone());
        }
    }
    labels.insert("app.kubernetes.io/name".into(), json!(short));
    labels.insert("app.kubernetes.io/version".into(), json!(keda_version));
    labels.insert("app.kubernetes.io/part-of".into(), json!(so_name));
    labels.insert("app.kubernetes.io/managed-by".into(), json!("keda-operator"));
    let spec = scaled_object.get("spec").unwrap_or(&Value::Null);
    let target = spec.get("scaleTargetRef").unwrap_or(&Value::Null);
    let paused = scaled_object
        .pointer("/metadata/annotations/autoscaling.keda.sh~1paused-replicas")
        .and_then(Value::as_str)
        .and_then(|n| n.parse::<i64>().ok());
    let (min, max) = match paused {
        Some(n) => (n.max(1), n.max(1)),
        None => (
            spec.get("minReplicaCount").and_then(Value::as_i64).filter(|m| *m > 0).unwrap_or(1),
            spec.get("maxReplicaCount").and_then(Value::as_i64).unwrap_or(100),
        ),
    };
    let metrics: Vec<Value> = spec
        .get("triggers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, trigger)| {
            let kind = trigger["type"].as_str().unwrap_or("external");
            let value = trigger.pointer("/metadata/value").and_then(Value::as_str).unwrap_or("1");
            json!({"type": "External", "external": {
                "metric": {"name": format!("s{i}-{kind}"), "selector": {"matchLabels": {"scaledobject.keda.sh/name": so_name}}},
                "target": {"type": "AverageValue", "averageValue": value}}})
        })
        .collect();
    let mut hpa_spec = json!({
        "scaleTargetRef": {"apiVersion": target.get("apiVersion").and_then(Value::as_str).unwrap_or("apps/v1"),
            "kind": target.get("kind").and_then(Value::as_str).unwrap_or("Deployment"),
            "name": target.get("name").and_then(Value::as_str).unwrap_or("")},
        "minReplicas": min,
        "maxReplicas": max,
        "metrics": metrics,
    });
    if let Some(behavior) =
        spec.pointer("/advanced/horizontalPodAutoscalerConfig/behavior").filter(|b| !b.is_null())
    {
        hpa_spec["behavior"] = behavior.clone();
    }
    let mut metadata = json!({"name": hpa_name, "namespace": namespace_of(scaled_object), "labels": labels,
        "ownerReferences": [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": so_name,
            "uid": uid_of(scaled_object), "controller": true, "blockOwnerDeletion": true}]});
    if let Some(annotations) = scaled_object
        .pointer("/metadata/annotations")
        .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
    {
        metadata["annotations"] = annotations.clone();
    }
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": metadata, "spec": hpa_spec})
}

/// `equality.Semantic.DeepDerivative(desired, found)`: fields unset in `desired` (null,
/// empty string, empty list or map) are ignored.
pub fn deep_derivative(desired: &Value, found: &Value) -> bool {
    match desired {
        Value::Null => true,
        Value::String(s) if s.is_empty() => true,
        Value::Array(a) if a.is_empty() => true,
        Value::Object(m) if m.is_empty() => true,
        Value::Array(a) => {
            let empty = Vec::new();
            let b = found.as_array().unwrap_or(&empty);
            a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| deep_derivative(x, y))
        }
        Value::Object(m) => {
            // Every set field of `desired` must derive the same field of `found`.
            found.is_object()
                && m.iter().all(|(k, v)| deep_derivative(v, found.get(k).unwrap_or(&Value::Null)))
        }
        other => other == found,
    }
}

fn non_empty(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null() && v.as_object().is_none_or(|m| !m.is_empty()))
}

/// KEDA's `updateHPAIfNeeded`: the object to PUT (the desired HPA wholesale, no
/// resourceVersion) when the found HPA drifted, else None.
pub fn keda_hpa_update(desired: &Value, found: &Value) -> Option<Value> {
    let metrics_len = |v: &Value| v.pointer("/spec/metrics").and_then(Value::as_array).map_or(0, Vec::len);
    let at = |v: &'_ Value, p: &str| v.pointer(p).cloned().unwrap_or(Value::Null);
    let desired_annotations = non_empty(desired.pointer("/metadata/annotations"));
    let found_annotations = non_empty(found.pointer("/metadata/annotations"));
    let drifted = metrics_len(desired) != metrics_len(found)
        || at(desired, "/spec/behavior") != at(found, "/spec/behavior")
        || !deep_derivative(&at(desired, "/spec"), &at(found, "/spec"))
        || !deep_derivative(&at(desired, "/metadata/labels"), &at(found, "/metadata/labels"))
        || (desired_annotations.is_none() && found_annotations.is_some())
        || !deep_derivative(
            desired_annotations.unwrap_or(&Value::Null),
            found_annotations.unwrap_or(&Value::Null),
        );
    drifted.then(|| desired.clone())
}

#[cfg(test)]
#[path = "hpa_tests.rs"]
mod tests;
