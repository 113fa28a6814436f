//! 422 validation with upstream field paths and messages: object metadata for every kind;
//! Pods and pod templates, apps workloads, PDBs, HPAs, Scale; Services, ConfigMaps, Secrets, Events,
//! Leases; RBAC; webhook configurations; CRDs; custom resources by their CRD's schema
//! ([`custom`], [`openapi`]).
//!
//! Values the apiserver would have defaulted before validating may be absent here (kube-sim
//! defaults only a few kinds), so absent fields are treated as their defaults. A few decode
//! errors (bad base64, bad quantities) are answered here as the 400 the decoder gives.

mod admission;
mod common;
mod container;
mod coordination;
mod core;
mod crd;
mod custom;
mod events;
mod list_types;
mod meta;
mod openapi;
mod pod;
mod quantity;
mod rbac;
mod resources;
mod security;
mod tls_pair;
mod workloads;

use serde_json::Value;

use crate::error::{ApiError, FieldError};
use crate::resources::ResourceInfo;

/// The 400 the JSON decoder answers for a body it cannot turn into the kind.
fn decode_error(info: &ResourceInfo, err: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {err}",
        kind = info.kind,
        version = info.version
    ))
}

/// Validates a fully formed object for create (`old == None`) or update.
pub fn validate(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    run(info, object, old, false)
}

/// Validates the object a `/status` write makes (custom resources: only its `status`; the
/// built-in kinds as any update).
pub fn validate_status(info: &ResourceInfo, object: &Value, old: &Value) -> Result<(), ApiError> {
    run(info, object, Some(old), true)
}

fn run(info: &ResourceInfo, object: &Value, old: Option<&Value>, status: bool) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let pod_spec = match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => Some(&object["spec"]),
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            Some(&object["spec"]["template"]["spec"])
        }
        _ => None,
    };
    if let Some(err) = pod_spec.and_then(resources::decode_error) {
        return Err(decode_error(info, err));
    }
    if !info.builtin
        && let Some(err) = custom::decode_error(info, object)
    {
        return Err(decode_error(info, &err));
    }
    meta::object_meta(info, object, &mut errs);
    if let Some(old) = old {
        meta::object_meta_update(object, old, &mut errs);
    }
    match (info.group.as_str(), info.plural.as_str()) {
        _ if !info.builtin => match (status, old) {
            (true, Some(old)) => custom::status(info, object, old, &mut errs),
            _ => custom::resource(info, object, old, &mut errs),
        },
        ("", "pods") => pod::pod_spec(&object["spec"], "spec", &mut errs),
        ("", "services") => core::service(object, &mut errs),
        ("", "configmaps") => core::config_map(info, object, old, &mut errs)?,
        ("", "events") => events::event(object, false, old, &mut errs),
        ("events.k8s.io", "events") => events::event(object, true, old, &mut errs),
        ("coordination.k8s.io", "leases") => coordination::lease(object, &mut errs),
        ("", "secrets") => core::secret(info, object, old, &mut errs)?,
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            workloads::workload(info, object, old, &mut errs)
        }
        ("policy", "poddisruptionbudgets") => workloads::pdb(object, &mut errs),
        ("autoscaling", "horizontalpodautoscalers") => {
            workloads::horizontal_pod_autoscaler(object, &mut errs)
        }
        ("rbac.authorization.k8s.io", "roles") => rbac::role(object, true, &mut errs),
        ("rbac.authorization.k8s.io", "clusterroles") => rbac::role(object, false, &mut errs),
        ("rbac.authorization.k8s.io", "rolebindings") => rbac::binding(object, old, true, &mut errs),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => rbac::binding(object, old, false, &mut errs),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            admission::configuration(object, old, false, &mut errs)
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            admission::configuration(object, old, true, &mut errs)
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd::crd(object, old, &mut errs),
        _ => {}
    }
    if errs.is_empty() {
        // A valid object's warnings (the strategies' `WarningsOnCreate`/`WarningsOnUpdate`).
        if info.group.is_empty() && info.plural == "secrets" {
            tls_pair::warning(object).iter().for_each(|w| crate::warnings::add(w));
        }
        Ok(())
    } else {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        // Events are validated as the core kind whichever API wrote them.
        if info.kind == "Event" {
            return Err(ApiError::invalid("Event", "", "Event", name, &errs));
        }
        Err(ApiError::invalid(&info.kind_label(), &info.group, &info.kind, name, &errs))
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
