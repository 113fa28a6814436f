//! apps/v1 workloads, policy/v1 PodDisruptionBudgets and autoscaling/v2 HPAs (`pkg/apis/apps/validation`,
//! `pkg/apis/policy/validation`).

use serde_json::Value;

use super::common::{Errs, annotations, label_selector, labels, non_negative, quoted, str_at};
use super::pod::pod_spec;
use crate::error::FieldError;
use crate::resources::ResourceInfo;
use crate::selector::LabelSelector;

const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// `ValidateStatefulSet`/`ValidateDeployment`/... selector, template and replicas rules.
pub(super) fn workload(info: &ResourceInfo, object: &Value, old: Option<&Value>, errs: &mut Errs) {
    let spec = &object["spec"];
    if let Some(r) = spec["replicas"].as_i64()
        && r < 0
    {
        errs.push(FieldError::invalid("spec.replicas", &r.to_string(), "must be greater than or equal to 0"));
    }
    let selector = &spec["selector"];
    let template_labels = &spec["template"]["metadata"]["labels"];
    let mismatch = || {
        FieldError::invalid(
            "spec.template.metadata.labels",
            &template_labels.to_string(),
            "`selector` does not match template `labels`",
        )
    };
    if selector.is_null() {
        errs.push(FieldError::required("spec.selector", ""));
        // A missing selector selects nothing, so no template matches it.
        errs.push(mismatch());
    } else {
        label_selector(selector, "spec.selector", errs);
        let empty = selector["matchLabels"].as_object().is_none_or(|l| l.is_empty())
            && selector["matchExpressions"].as_array().is_none_or(|e| e.is_empty());
        if empty {
            errs.push(FieldError::invalid(
                "spec.selector",
                &selector.to_string(),
                "empty selector is invalid for deployment",
            ));
        } else if LabelSelector::from_api(selector).is_ok_and(|sel| {
            !sel.matches_object(&serde_json::json!({"metadata": {"labels": template_labels}}))
        }) {
            errs.push(mismatch());
        }
        if let Some(old) = old
            && old["spec"]["selector"] != *selector
        {
            errs.push(FieldError::invalid("spec.selector", &selector.to_string(), "field is immutable"));
        }
    }
    // The template's ObjectMeta is validated on the template path itself.
    labels(&spec["template"]["metadata"]["labels"], "spec.template.labels", errs);
    annotations(&spec["template"]["metadata"]["annotations"], "spec.template.annotations", errs);
    pod_spec(&spec["template"]["spec"], "spec.template.spec", errs);
    if info.plural == "deployments" {
        if let Some(policy) = spec["template"]["spec"]["restartPolicy"].as_str()
            && policy != "Always"
        {
            errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", policy, &["Always"]));
        }
        deployment_spec(spec, errs);
    }
}

/// `ValidateDeploymentSpec`: strategy and the second counters.
fn deployment_spec(spec: &Value, errs: &mut Errs) {
    for field in ["minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"] {
        non_negative(&spec[field], &format!("spec.{field}"), errs);
    }
    let strategy = &spec["strategy"];
    match str_at(strategy, "type").unwrap_or("RollingUpdate") {
        "Recreate" => {
            if !strategy["rollingUpdate"].is_null() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => rolling_update(&strategy["rollingUpdate"], errs),
        other => {
            errs.push(FieldError::not_supported("spec.strategy.type", other, &["Recreate", "RollingUpdate"]))
        }
    }
    if let (Some(deadline), min_ready) =
        (spec["progressDeadlineSeconds"].as_i64(), spec["minReadySeconds"].as_i64().unwrap_or(0))
        && deadline <= min_ready
    {
        errs.push(FieldError::invalid(
            "spec.progressDeadlineSeconds",
            &deadline.to_string(),
            "must be greater than minReadySeconds",
        ));
    }
}

/// An int-or-percent as (value, is_percent), or the error for a malformed one.
fn int_or_percent(field: &str, value: &Value, errs: &mut Errs) -> Option<(i64, bool)> {
    match value {
        Value::Null => None,
        Value::Number(n) => {
            let v = n.as_i64().unwrap_or(-1);
            if v < 0 {
                errs.push(FieldError::invalid(field, &n.to_string(), "must be greater than or equal to 0"));
            }
            Some((v, false))
        }
        // `[0-9]+%`: no sign, digits only.
        Value::String(s) => match s
            .strip_suffix('%')
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<i64>().ok())
        {
            None => {
                errs.push(FieldError::invalid(field, &quoted(s), PERCENT_MSG));
                None
            }
            Some(p) => Some((p, true)),
        },
        other => {
            errs.push(FieldError::invalid(field, &other.to_string(), "must be an integer or percentage"));
            None
        }
    }
}

/// `ValidateRollingUpdateDeployment`; absent values default to 25%.
fn rolling_update(ru: &Value, errs: &mut Errs) {
    let unavailable_path = "spec.strategy.rollingUpdate.maxUnavailable";
    let unavailable = int_or_percent(unavailable_path, &ru["maxUnavailable"], errs);
    let surge = int_or_percent("spec.strategy.rollingUpdate.maxSurge", &ru["maxSurge"], errs);
    if let Some((p, true)) = unavailable
        && p > 100
    {
        errs.push(FieldError::invalid(
            unavailable_path,
            &quoted(&format!("{p}%")),
            "must not be greater than 100%",
        ));
    }
    if unavailable.is_some_and(|(v, _)| v == 0) && surge.is_some_and(|(v, _)| v == 0) {
        errs.push(FieldError::invalid(
            unavailable_path,
            &super::common::rendered(&ru["maxUnavailable"]),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
}

fn pdb_int_or_percent(field: &str, value: &Value, errs: &mut Errs) {
    if let Some((p, true)) = int_or_percent(field, value, errs)
        && p > 100
    {
        errs.push(FieldError::invalid(field, &quoted(&format!("{p}%")), "must not be greater than 100%"));
    }
}

/// `ValidatePodDisruptionBudget` (spec and status counters).
pub(super) fn pdb(object: &Value, errs: &mut Errs) {
    let spec = &object["spec"];
    if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
        // The internal Go struct (no JSON tags, fields in declaration order) as upstream prints it.
        let internal = format!(
            "{{\"MinAvailable\":{},\"Selector\":{},\"MaxUnavailable\":{},\"UnhealthyPodEvictionPolicy\":{}}}",
            spec["minAvailable"],
            spec["selector"],
            spec["maxUnavailable"],
            spec["unhealthyPodEvictionPolicy"]
        );
        errs.push(FieldError::invalid(
            "spec",
            &internal,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    pdb_int_or_percent("spec.minAvailable", &spec["minAvailable"], errs);
    pdb_int_or_percent("spec.maxUnavailable", &spec["maxUnavailable"], errs);
    if spec["selector"].is_object() {
        label_selector(&spec["selector"], "spec.selector", errs);
    }
    if let Some(p) = spec["unhealthyPodEvictionPolicy"].as_str()
        && p != "IfHealthyBudget"
        && p != "AlwaysAllow"
    {
        errs.push(FieldError::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            p,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    for field in ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"] {
        non_negative(&object["status"][field], &format!("status.{field}"), errs);
    }
}

/// `ValidateHorizontalPodAutoscaler` (autoscaling/v2): replica bounds and the target reference.
pub(super) fn horizontal_pod_autoscaler(object: &Value, errs: &mut Errs) {
    let spec = &object["spec"];
    let min = spec["minReplicas"].as_i64();
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            &min.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid("spec.maxReplicas", &max.to_string(), "must be greater than 0"));
    }
    if min.is_some_and(|min| max < min) {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = &spec["scaleTargetRef"];
    for key in ["kind", "name"] {
        match str_at(target, key).unwrap_or_default() {
            "" => errs.push(FieldError::required(&format!("spec.scaleTargetRef.{key}"), "")),
            value => super::common::invalid_each(
                errs,
                &format!("spec.scaleTargetRef.{key}"),
                &quoted(value),
                super::common::path_segment_errors(value),
            ),
        }
    }
}
