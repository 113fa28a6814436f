//! `ValidateObjectMeta`: the per-resource name rule, generateName, labels, annotations and
//! owner references; on update, no new finalizers once the object is being deleted.

use serde_json::Value;

use super::common::{
    Errs, annotations, dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, invalid_each,
    labels, path_segment_errors, quoted,
};
use crate::error::FieldError;
use crate::resources::ResourceInfo;

/// Which `ValidateNameFunc` a resource uses upstream.
fn name_errors(info: &ResourceInfo, object: &Value, name: &str) -> Vec<String> {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => dns1123_label_errors(name),
        ("", "services") => dns1035_label_errors(name),
        // Minimal path-segment names (`system:controller:...` is a valid ClusterRole name).
        ("rbac.authorization.k8s.io", _) => path_segment_errors(name),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let mut errs = dns1123_subdomain_errors(name);
            let spec = &object["spec"];
            let required = format!(
                "{}.{}",
                spec["names"]["plural"].as_str().unwrap_or_default(),
                spec["group"].as_str().unwrap_or_default()
            );
            if name != required {
                errs.push("must be spec.names.plural+\".\"+spec.group".to_string());
            }
            errs
        }
        _ => dns1123_subdomain_errors(name),
    }
}

/// `maskTrailingDash`: a generateName may end in `-` (the random suffix follows).
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => name.to_string(),
    }
}

/// Validates `metadata` of a fully formed object (name already generated).
pub(super) fn object_meta(info: &ResourceInfo, object: &Value, errs: &mut Errs) {
    let meta = &object["metadata"];
    let skip_names = info.plural == "nodes";
    if let Some(generate) = meta["generateName"].as_str().filter(|g| !g.is_empty())
        && !skip_names
    {
        let errors = name_errors(info, object, &mask_trailing_dash(generate));
        // The name-must-match rule of CRDs concerns the final name only.
        let errors = errors.into_iter().filter(|e| !e.starts_with("must be spec.names")).collect();
        invalid_each(errs, "metadata.generateName", &quoted(generate), errors);
    }
    match meta["name"].as_str().unwrap_or_default() {
        "" => errs.push(FieldError::required("metadata.name", "name or generateName is required")),
        _ if skip_names => {}
        name => invalid_each(errs, "metadata.name", &quoted(name), name_errors(info, object, name)),
    }
    labels(&meta["labels"], "metadata.labels", errs);
    annotations(&meta["annotations"], "metadata.annotations", errs);
    owner_references(&meta["ownerReferences"], errs);
}

/// `ValidateOwnerReferences`: each reference names a version, kind, name and uid (the field
/// paths carry no index, as upstream's), and at most one is the controller.
fn owner_references(references: &Value, errs: &mut Errs) {
    let Some(references) = references.as_array() else { return };
    let mut controller: Option<String> = None;
    for reference in references {
        let text = |key: &str| reference[key].as_str().unwrap_or_default();
        let version = text("apiVersion").rsplit('/').next().unwrap_or_default();
        let checks = [
            ("apiVersion", version.is_empty(), "version must not be empty"),
            ("kind", text("kind").is_empty(), "must not be empty"),
            ("name", text("name").is_empty(), "must not be empty"),
            ("uid", text("uid").is_empty(), "must not be empty"),
        ];
        for (key, failed, message) in checks {
            if failed {
                errs.push(FieldError::invalid(
                    &format!("metadata.ownerReferences.{key}"),
                    &quoted(text(key)),
                    message,
                ));
            }
        }
        if reference["controller"] == true {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => errs.push(FieldError::invalid(
                    "metadata.ownerReferences",
                    &references_value(references),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => controller = Some(this),
            }
        }
    }
}

/// How upstream renders the list of references in that message (JSON of the Go structs).
fn references_value(references: &[Value]) -> String {
    serde_json::to_string(references).unwrap_or_default()
}

/// `ValidateObjectMetaAccessorUpdate`'s rule for objects being deleted. Upstream runs it twice
/// (the generic update checks and the kind's own `ValidateObjectMetaUpdate`), so the answer
/// names the cause twice.
pub(super) fn object_meta_update(object: &Value, old: &Value, errs: &mut Errs) {
    if old["metadata"]["deletionTimestamp"].is_null() {
        return;
    }
    let names = |v: &Value| -> std::collections::BTreeSet<String> {
        v["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let added: Vec<String> = names(object).difference(&names(old)).map(|f| format!("{f:?}")).collect();
    if !added.is_empty() {
        let message = format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            added.join(", ")
        );
        for _ in 0..2 {
            errs.push(FieldError::forbidden("metadata.finalizers", &message));
        }
    }
}
