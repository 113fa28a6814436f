//! The 401 and 403 answers, worded as the apiserver words them
//! (`endpoints/handlers/responsewriters/errors.go` `Forbidden`/`forbiddenMessage`,
//! apimachinery `NewForbidden`, `endpoints/filters/authentication.go` `Unauthorized`).

use serde_json::{Map, Value, json};

use super::{RequestAttributes, UserInfo};
use crate::error::{ApiError, group_resource};
use crate::go_fmt;

/// 401 `Unauthorized` (unknown, expired or revoked bearer token).
pub fn unauthorized() -> ApiError {
    ApiError { code: 401, reason: "Unauthorized".into(), message: "Unauthorized".into(), details: None }
}

/// 403 for a request the authorizer did not allow; `reason` is the authorizer's (may be empty).
pub fn forbidden(user: &UserInfo, attrs: &RequestAttributes, reason: &str) -> ApiError {
    // Upstream escapes HTML-like characters of the message (not of the reason).
    let message =
        forbidden_message(user, attrs).replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let err = if reason.is_empty() { message } else { format!("{message}: {reason}") };
    let (group, resource, name) = if attrs.resource_request {
        (attrs.api_group.as_str(), attrs.resource.as_str(), attrs.name.as_str())
    } else {
        ("", "", "")
    };
    // `NewForbidden`: the qualified resource and the name prefix the message when present.
    let message = match (resource.is_empty() && group.is_empty(), name.is_empty()) {
        (true, _) => format!("forbidden: {err}"),
        (false, true) => format!("{} is forbidden: {err}", group_resource(group, resource)),
        (false, false) => {
            format!("{} {} is forbidden: {err}", group_resource(group, resource), go_fmt::quote(name))
        }
    };
    let mut details = Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", resource)] {
        if !value.is_empty() {
            details.insert(key.into(), json!(value));
        }
    }
    ApiError { code: 403, reason: "Forbidden".into(), message, details: Some(Value::Object(details)) }
}

/// `User "u" cannot get resource "pods" in API group "" in the namespace "ns"` and friends.
fn forbidden_message(user: &UserInfo, attrs: &RequestAttributes) -> String {
    let username = go_fmt::quote(&user.username);
    if !attrs.resource_request {
        return format!("User {username} cannot {} path {}", attrs.verb, go_fmt::quote(&attrs.path));
    }
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let (verb, resource, group) = (&attrs.verb, go_fmt::quote(&resource), go_fmt::quote(&attrs.api_group));
    if attrs.namespace.is_empty() {
        format!("User {username} cannot {verb} resource {resource} in API group {group} at the cluster scope")
    } else {
        let ns = go_fmt::quote(&attrs.namespace);
        format!(
            "User {username} cannot {verb} resource {resource} in API group {group} in the namespace {ns}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa() -> UserInfo {
        UserInfo::service_account("ea", "ea", "uid-1")
    }

    #[test]
    fn messages_match_the_apiserver() {
        let get = RequestAttributes::resource("get", "", "pods", "default", "web-1");
        let err = forbidden(&sa(), &get, "");
        assert_eq!(
            err.message,
            r#"pods "web-1" is forbidden: User "system:serviceaccount:ea:ea" cannot get resource "pods" in API group "" in the namespace "default""#
        );
        assert_eq!(err.details, Some(json!({"name": "web-1", "kind": "pods"})));
        let list = RequestAttributes::resource("list", "apps", "deployments", "", "");
        assert_eq!(
            forbidden(&sa(), &list, "").message,
            r#"deployments.apps is forbidden: User "system:serviceaccount:ea:ea" cannot list resource "deployments" in API group "apps" at the cluster scope"#
        );
        assert_eq!(
            forbidden(&sa(), &list, "").details,
            Some(json!({"group": "apps", "kind": "deployments"}))
        );
        let evict = RequestAttributes::resource("create", "", "pods", "ns", "p").with_subresource("eviction");
        assert!(
            forbidden(&sa(), &evict, "")
                .message
                .contains(r#"cannot create resource "pods/eviction" in API group """#)
        );
        let path = RequestAttributes::non_resource("get", "/foo");
        let err = forbidden(&sa(), &path, "");
        assert_eq!(err.message, r#"forbidden: User "system:serviceaccount:ea:ea" cannot get path "/foo""#);
        assert_eq!(err.details, Some(json!({})));
        assert_eq!(err.to_status()["code"], 403);
        assert_eq!(err.to_status()["reason"], "Forbidden");
    }

    #[test]
    fn the_authorizer_reason_is_appended() {
        let get = RequestAttributes::resource("get", "", "pods", "default", "");
        let err = forbidden(&sa(), &get, r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#);
        assert!(
            err.message.ends_with(
                r#"in the namespace "default": RBAC: role.rbac.authorization.k8s.io "r" not found"#
            )
        );
    }

    #[test]
    fn unauthorized_is_the_bare_status() {
        assert_eq!(
            unauthorized().to_status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})
        );
    }
}
