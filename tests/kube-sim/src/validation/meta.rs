//! `ValidateObjectMeta`: the per-resource name rule, generateName, labels and annotations.

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
}
