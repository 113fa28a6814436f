//! Container `resources` (`validateResourceRequirements`): names, quantities, requests
//! against limits. Unparsable quantities are a decode error, found by [`decode_error`].

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::common::{Errs, invalid_each, key_path, qualified_name_errors, quoted};
use super::quantity::{self, Quantity};
use crate::error::FieldError;

const STANDARD: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `helper.IsNativeResource`: unprefixed or in the kubernetes.io domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `helper.IsOvercommitAllowed`.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_huge_pages(name)
}

/// `validateContainerResourceName`.
fn resource_name(name: &str, path: &str, errs: &mut Errs) {
    let msgs = qualified_name_errors(name);
    if !msgs.is_empty() {
        invalid_each(errs, path, &quoted(name), msgs);
        return;
    }
    if !name.contains('/') {
        let standard =
            STANDARD.contains(&name) || is_huge_pages(name) || name.starts_with("requests.hugepages-");
        if !standard {
            errs.push(FieldError::invalid(
                path,
                &quoted(name),
                "must be a standard resource type or fully qualified",
            ));
        }
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !is_huge_pages(name) {
            errs.push(FieldError::invalid(path, &quoted(name), "must be a standard resource for containers"));
        }
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `ValidateResourceQuantityValue`: non-negative; whole numbers for extended resources.
fn quantity_value(name: &str, value: &Value, q: &Quantity, path: &str, errs: &mut Errs) {
    if q.is_negative() {
        errs.push(FieldError::invalid(path, &quoted(&text(value)), "must be greater than or equal to 0"));
    }
    if !is_native(name) && !q.is_integer() {
        errs.push(FieldError::invalid(path, &text(value), "must be an integer"));
    }
}

fn parsed(map: &Map<String, Value>, name: &str) -> Option<Quantity> {
    map.get(name).and_then(quantity::parse_value).and_then(Result::ok)
}

/// Validates `resources` of one container (`path` is `<container>.resources`).
pub(super) fn requirements(resources: &Value, path: &str, errs: &mut Errs) {
    let empty = Map::new();
    let limits = resources["limits"].as_object().unwrap_or(&empty);
    let requests = resources["requests"].as_object().unwrap_or(&empty);
    let (limits_path, requests_path) = (format!("{path}.limits"), format!("{path}.requests"));
    let mut cpu_or_memory = false;
    let mut huge_pages = false;
    for (name, value) in limits {
        let at = key_path(&limits_path, name);
        resource_name(name, &at, errs);
        if let Some(q) = parsed(limits, name) {
            quantity_value(name, value, &q, &at, errs);
        }
        huge_pages |= is_huge_pages(name);
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    for (name, value) in requests {
        let at = key_path(&requests_path, name);
        resource_name(name, &at, errs);
        let Some(request) = parsed(requests, name) else { continue };
        quantity_value(name, value, &request, &at, errs);
        match parsed(limits, name) {
            Some(limit) => {
                let order = request.compare(&limit);
                let limit_text = limits.get(name).map(text).unwrap_or_default();
                if order != Ordering::Equal && !overcommit_allowed(name) {
                    let msg = format!("must be equal to {name} limit of {limit_text}");
                    errs.push(FieldError::invalid(&requests_path, &quoted(&text(value)), &msg));
                } else if order == Ordering::Greater {
                    let msg = format!("must be less than or equal to {name} limit of {limit_text}");
                    errs.push(FieldError::invalid(&requests_path, &quoted(&text(value)), &msg));
                }
            }
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &limits_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        huge_pages |= is_huge_pages(name);
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    if huge_pages && !cpu_or_memory {
        errs.push(FieldError::forbidden(path, "HugePages require cpu or memory"));
    }
}

/// The first quantity of `containers`/`initContainers` resources that does not parse: the
/// apiserver refuses such a body while decoding (400), before any validation.
pub(super) fn decode_error(pod_spec: &Value) -> Option<&'static str> {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|list| pod_spec[*list].as_array().into_iter().flatten())
        .flat_map(|c| ["limits", "requests"].map(|k| &c["resources"][k]))
        .flat_map(|m| m.as_object().into_iter().flat_map(Map::values))
        .find_map(|v| quantity::parse_value(v).and_then(Result::err))
}
