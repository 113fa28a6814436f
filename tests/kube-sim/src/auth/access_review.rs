//! `authorization.k8s.io/v1` access reviews (`pkg/registry/authorization/*accessreview`): the
//! authorizer asked whether a user may do something, answered at once and never stored.
//! A SelfSubjectAccessReview asks about the requester (what `kubectl auth can-i` creates); a
//! SubjectAccessReview about the user its spec names; a LocalSubjectAccessReview the same
//! within the namespace of its URL.

use serde_json::{Value, json};

use super::{RbacObjects, RequestAttributes, UserInfo, authorize};
use crate::error::{ApiError, FieldError};
use crate::resources::ResourceInfo;

/// Answers the review `body` posted by `requester` to `info` (in `namespace` for the local one).
pub fn review(
    objects: &dyn RbacObjects,
    requester: &UserInfo,
    info: &ResourceInfo,
    namespace: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let (resource, non_resource) = (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
    let mut errs = Vec::new();
    match (resource.is_object(), non_resource.is_object()) {
        (true, true) => errs.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            &go_struct(non_resource),
            "cannot be specified in combination with resourceAttributes",
        )),
        (false, false) => errs.push(FieldError::invalid(
            "spec.resourceAttributes",
            "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    let subject = match info.plural.as_str() {
        "selfsubjectaccessreviews" => requester.clone(),
        _ => {
            let user = spec["user"].as_str().unwrap_or_default();
            let groups: Vec<String> = spec["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if user.is_empty() && groups.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.user",
                    "\"\"",
                    "at least one of user or group must be specified",
                ));
            }
            UserInfo {
                username: user.to_owned(),
                uid: spec["uid"].as_str().unwrap_or_default().to_owned(),
                groups,
                ..UserInfo::default()
            }
        }
    };
    if info.namespaced && resource["namespace"].as_str().unwrap_or_default() != namespace {
        errs.push(FieldError::invalid(
            "spec.resourceAttributes.namespace",
            &format!("{:?}", resource["namespace"].as_str().unwrap_or_default()),
            "must match metadata.namespace",
        ));
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid(&info.kind_label(), &info.group, &info.kind, "", &errs));
    }
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let attributes = if resource.is_object() {
        RequestAttributes {
            verb: text(resource, "verb"),
            resource_request: true,
            api_group: text(resource, "group"),
            api_version: text(resource, "version"),
            namespace: text(resource, "namespace"),
            resource: text(resource, "resource"),
            subresource: text(resource, "subresource"),
            name: text(resource, "name"),
            ..RequestAttributes::default()
        }
    } else {
        RequestAttributes::non_resource(&text(non_resource, "verb"), &text(non_resource, "path"))
    };
    let decision = authorize(objects, &subject, &attributes);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    let mut metadata = json!({});
    if info.namespaced {
        metadata["namespace"] = json!(namespace);
    }
    Ok(json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// Go's `%v`-ish rendering of the attributes in that one message.
fn go_struct(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
