//! rbac.authorization.k8s.io/v1 (`pkg/apis/rbac/validation/validation.go`). Names use the
//! minimal path-segment rule (see [`super::meta`]).

use serde_json::Value;

use super::common::{
    Errs, array_at, dns1123_subdomain_errors, go_slice, invalid_each, path_segment_errors, quoted, str_at,
};
use crate::error::FieldError;

const GROUP: &str = "rbac.authorization.k8s.io";

/// `validatePolicyRule` for every rule of a Role (`namespaced`) or ClusterRole.
pub(super) fn role(object: &Value, namespaced: bool, errs: &mut Errs) {
    for (i, rule) in array_at(object, "rules").iter().enumerate() {
        let at = format!("rules[{i}]");
        if array_at(rule, "verbs").is_empty() {
            errs.push(FieldError::required(&format!("{at}.verbs"), "verbs must contain at least one value"));
        }
        let urls = array_at(rule, "nonResourceURLs");
        if !urls.is_empty() {
            let value = go_slice("string", urls);
            if namespaced {
                errs.push(FieldError::invalid(
                    &format!("{at}.nonResourceURLs"),
                    &value,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            let resource_rule =
                ["apiGroups", "resources", "resourceNames"].iter().any(|f| !array_at(rule, f).is_empty());
            if resource_rule {
                errs.push(FieldError::invalid(
                    &format!("{at}.nonResourceURLs"),
                    &value,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if array_at(rule, "apiGroups").is_empty() {
            errs.push(FieldError::required(
                &format!("{at}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if array_at(rule, "resources").is_empty() {
            errs.push(FieldError::required(
                &format!("{at}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
        if !array_at(rule, "resourceNames").is_empty() && array_at(rule, "resources").len() > 1 {
            errs.push(FieldError::required(
                &format!("{at}.resourceNames"),
                "resource names cannot apply to multiple resources",
            ));
        }
    }
}

/// `roleRef` as upstream prints it (`%#v` of rbac.RoleRef).
fn role_ref_value(role_ref: &Value) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        quoted(str_at(role_ref, "apiGroup").filter(|g| !g.is_empty()).unwrap_or(GROUP)),
        quoted(str_at(role_ref, "kind").unwrap_or_default()),
        quoted(str_at(role_ref, "name").unwrap_or_default())
    )
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` and their update rule.
pub(super) fn binding(object: &Value, old: Option<&Value>, namespaced: bool, errs: &mut Errs) {
    let role_ref = &object["roleRef"];
    // An empty roleRef.apiGroup defaults to the RBAC group.
    let group = str_at(role_ref, "apiGroup").filter(|g| !g.is_empty()).unwrap_or(GROUP);
    if group != GROUP {
        errs.push(FieldError::not_supported("roleRef.apiGroup", group, &[GROUP]));
    }
    let kind = str_at(role_ref, "kind").unwrap_or_default();
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    match str_at(role_ref, "name").unwrap_or_default() {
        "" => errs.push(FieldError::required("roleRef.name", "")),
        name => invalid_each(errs, "roleRef.name", &quoted(name), path_segment_errors(name)),
    }
    for (i, subject) in array_at(object, "subjects").iter().enumerate() {
        subject_errors(subject, &format!("subjects[{i}]"), namespaced, errs);
    }
    if let Some(old) = old
        && role_ref_value(&old["roleRef"]) != role_ref_value(role_ref)
    {
        errs.push(FieldError::invalid("roleRef", &role_ref_value(role_ref), "cannot change roleRef"));
    }
}

/// `validateRoleBindingSubject`; an empty apiGroup takes the kind's default.
fn subject_errors(subject: &Value, path: &str, namespaced: bool, errs: &mut Errs) {
    let name = str_at(subject, "name").unwrap_or_default();
    if name.is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    }
    let api_group = str_at(subject, "apiGroup").unwrap_or_default();
    match str_at(subject, "kind").unwrap_or_default() {
        "ServiceAccount" => {
            if !name.is_empty() {
                invalid_each(errs, &format!("{path}.name"), &quoted(name), dns1123_subdomain_errors(name));
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(&format!("{path}.apiGroup"), api_group, &[""]));
            }
            if !namespaced && str_at(subject, "namespace").unwrap_or_default().is_empty() {
                errs.push(FieldError::required(&format!("{path}.namespace"), ""));
            }
        }
        kind @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if kind == "User" { "user" } else { "group" };
                errs.push(FieldError::invalid(
                    &format!("{path}.name"),
                    "\"\"",
                    &format!("{what} name cannot be empty"),
                ));
            }
            if !api_group.is_empty() && api_group != GROUP {
                errs.push(FieldError::not_supported(&format!("{path}.apiGroup"), api_group, &[GROUP]));
            }
        }
        other => errs.push(FieldError::not_supported(
            &format!("{path}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}
