//! 422 validation of the fields this product relies on (names, required fields of Pods,
//! Deployments, PDBs, Scale), with upstream field paths and messages.

use serde_json::Value;

use crate::error::{ApiError, FieldError};
use crate::resources::ResourceInfo;
use crate::selector::LabelSelector;

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Validates a fully formed object for create (`old == None`) or update.
pub fn validate(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        errs.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else if info.plural == "namespaces" || info.plural == "services" {
        if !is_label(name) {
            errs.push(FieldError::invalid("metadata.name", &quoted(name), DNS1123_LABEL_MSG));
        }
    } else if !is_subdomain(name) && info.plural != "nodes" {
        errs.push(FieldError::invalid("metadata.name", &quoted(name), DNS1123_SUBDOMAIN_MSG));
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => pod_spec(&object["spec"], "spec", &mut errs),
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            workload(info, object, old, &mut errs)
        }
        ("policy", "poddisruptionbudgets") => pdb(object, &mut errs),
        _ => {}
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&info.kind_label(), &info.group, &info.kind, name, &errs))
    }
}

fn pod_spec(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let containers = spec["containers"].as_array().map(Vec::as_slice).unwrap_or_default();
    if containers.is_empty() {
        errs.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    for (i, c) in containers.iter().enumerate() {
        let cpath = format!("{path}.containers[{i}]");
        match c["name"].as_str() {
            None | Some("") => errs.push(FieldError::required(&format!("{cpath}.name"), "")),
            Some(n) if !is_label(n) => {
                errs.push(FieldError::invalid(&format!("{cpath}.name"), &quoted(n), DNS1123_LABEL_MSG))
            }
            _ => {}
        }
        if c["image"].as_str().unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{cpath}.image"), ""));
        }
    }
}

fn workload(info: &ResourceInfo, object: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = &object["spec"];
    if let Some(r) = spec["replicas"].as_i64()
        && r < 0
    {
        errs.push(FieldError::invalid("spec.replicas", &r.to_string(), "must be greater than or equal to 0"));
    }
    let selector = &spec["selector"];
    let empty = selector.as_object().is_none_or(|m| {
        m.get("matchLabels").and_then(Value::as_object).is_none_or(|l| l.is_empty())
            && m.get("matchExpressions").and_then(Value::as_array).is_none_or(|e| e.is_empty())
    });
    if empty {
        errs.push(FieldError::required("spec.selector", ""));
        errs.push(FieldError::invalid(
            "spec.selector",
            &format!("{{\"matchLabels\":{}}}", selector["matchLabels"]),
            "empty selector is invalid for deployment",
        ));
    } else {
        match LabelSelector::from_api(selector) {
            Err(e) => errs.push(FieldError::invalid("spec.selector", &selector.to_string(), &e)),
            Ok(sel) => {
                let template_labels = &spec["template"]["metadata"];
                if !sel.matches_object(&serde_json::json!({"metadata": template_labels})) {
                    errs.push(FieldError::invalid(
                        "spec.template.metadata.labels",
                        &format!("map[string]string{}", template_labels["labels"]),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
        if let Some(old) = old
            && old["spec"]["selector"] != *selector
        {
            errs.push(FieldError::invalid("spec.selector", &selector.to_string(), "field is immutable"));
        }
    }
    pod_spec(&spec["template"]["spec"], "spec.template.spec", errs);
    if info.plural == "deployments"
        && let Some(policy) = spec["template"]["spec"]["restartPolicy"].as_str()
        && policy != "Always"
    {
        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", policy, &["Always"]));
    }
}

fn int_or_percent(field: &str, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Null => {}
        Value::Number(n) => {
            if n.as_i64().is_none_or(|i| i < 0) {
                errs.push(FieldError::invalid(field, &n.to_string(), "must be greater than or equal to 0"));
            }
        }
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<u64>().ok()) {
            None => errs.push(FieldError::invalid(
                field,
                &quoted(s),
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            )),
            Some(p) if p > 100 => {
                errs.push(FieldError::invalid(field, &quoted(s), "must not be greater than 100%"))
            }
            Some(_) => {}
        },
        other => errs.push(FieldError::invalid(field, &other.to_string(), "must be an integer or percentage")),
    }
}

fn pdb(object: &Value, errs: &mut Vec<FieldError>) {
    let spec = &object["spec"];
    if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
        errs.push(FieldError::invalid(
            "spec",
            &format!("policy.PodDisruptionBudgetSpec{}", spec),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    int_or_percent("spec.minAvailable", &spec["minAvailable"], errs);
    int_or_percent("spec.maxUnavailable", &spec["maxUnavailable"], errs);
    if spec["selector"].is_object()
        && let Err(e) = LabelSelector::from_api(&spec["selector"])
    {
        errs.push(FieldError::invalid("spec.selector", &spec["selector"].to_string(), &e));
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
        if let Some(n) = object["status"][field].as_i64()
            && n < 0
        {
            errs.push(FieldError::invalid(
                &format!("status.{field}"),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// Validates an `autoscaling/v1 Scale` body.
pub fn validate_scale(name: &str, scale: &Value) -> Result<(), ApiError> {
    match scale["spec"]["replicas"].as_i64() {
        Some(r) if r < 0 => Err(ApiError::invalid(
            "Scale.autoscaling",
            "autoscaling",
            "Scale",
            name,
            &[FieldError::invalid("spec.replicas", &r.to_string(), "must be greater than or equal to 0")],
        )),
        _ => Ok(()),
    }
}
