//! The RBAC authorizer: a port of upstream's `plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `pkg/registry/rbac/validation/rule.go` (`VisitRulesFor`, `appliesTo`) and
//! `pkg/apis/rbac/v1/evaluation_helpers.go` (rule matching), preceded by the privileged-group
//! authorizer (`system:masters` is always allowed).
//!
//! Pure: the RBAC objects come from an [`RbacObjects`] source (the cluster's store over HTTP,
//! a fixed set in unit tests). Objects are read as JSON (`rbac.authorization.k8s.io/v1`).
//! Aggregated ClusterRoles are not computed: a ClusterRole grants the `rules` it holds.

use std::sync::Arc;

use serde_json::Value;

use super::{MASTERS_GROUP, RequestAttributes, UserInfo};
use crate::cluster::{Cluster, Gvr, ListOptions};

/// Where the authorizer reads Roles, RoleBindings, ClusterRoles and ClusterRoleBindings.
pub trait RbacObjects {
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>>;
    /// The RoleBindings of one namespace.
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>>;
    /// One Role.
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>>;
    /// One ClusterRole.
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>>;
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn rbac_gvr(plural: &str) -> Gvr {
    Gvr::new(RBAC_GROUP, "v1", plural)
}

impl RbacObjects for Cluster {
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
        self.list(&rbac_gvr("clusterrolebindings"), None, &ListOptions::default())
            .map(|l| l.items)
            .unwrap_or_default()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.list(&rbac_gvr("rolebindings"), Some(namespace), &ListOptions::default())
            .map(|l| l.items)
            .unwrap_or_default()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.get(&rbac_gvr("roles"), Some(namespace), name).ok()
    }
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>> {
        self.get(&rbac_gvr("clusterroles"), None, name).ok()
    }
}

/// The authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Allowed (otherwise: no opinion, i.e. denied).
    pub allowed: bool,
    /// Why: `RBAC: allowed by ...` when allowed; on denial the role-resolution errors
    /// (`RBAC: role.rbac.authorization.k8s.io "x" not found`), appended to the 403 message,
    /// or `""`.
    pub reason: String,
}

/// Decides a request as the apiserver's authorizer chain does for an RBAC cluster:
/// `system:masters` first, then RBAC.
pub fn authorize(objects: &dyn RbacObjects, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
    if user.in_group(MASTERS_GROUP) {
        return Decision { allowed: true, reason: String::new() };
    }
    let mut errors: Vec<String> = Vec::new();
    let mut allowed_by: Option<String> = None;
    visit_rules_for(objects, user, &attrs.namespace, &mut |source, rules, err| {
        if rules.iter().any(|rule| rule_allows(attrs, rule)) {
            allowed_by = Some(source.to_string());
            return false;
        }
        if let Some(err) = err {
            errors.push(err);
        }
        true
    });
    match allowed_by {
        Some(source) => Decision { allowed: true, reason: format!("RBAC: allowed by {source}") },
        None if errors.is_empty() => Decision { allowed: false, reason: String::new() },
        None => Decision { allowed: false, reason: format!("RBAC: {}", aggregate(&errors)) },
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated in `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    if seen.len() == 1 { seen[0].to_string() } else { format!("[{}]", seen.join(", ")) }
}

/// `visit(source, rules, error)`: false stops the walk.
type RuleVisitor<'a> = dyn FnMut(&str, &[Value], Option<String>) -> bool + 'a;

/// Calls `visit(source, rules, error)` for every binding that applies to `user`: all
/// ClusterRoleBindings, then (for a namespaced request) the RoleBindings of `namespace`.
/// `visit` returns false to stop.
fn visit_rules_for(objects: &dyn RbacObjects, user: &UserInfo, namespace: &str, visit: &mut RuleVisitor<'_>) {
    for binding in objects.cluster_role_bindings() {
        let Some(subject) = applies_to(user, &binding["subjects"], "") else { continue };
        let source = describe_binding(&binding, subject, "");
        let keep_going = match role_reference_rules(objects, &binding["roleRef"], "") {
            Ok(rules) => visit(&source, &rules, None),
            Err(err) => visit(&source, &[], Some(err)),
        };
        if !keep_going {
            return;
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in objects.role_bindings(namespace) {
        let Some(subject) = applies_to(user, &binding["subjects"], namespace) else { continue };
        let source = describe_binding(&binding, subject, namespace);
        let keep_going = match role_reference_rules(objects, &binding["roleRef"], namespace) {
            Ok(rules) => visit(&source, &rules, None),
            Err(err) => visit(&source, &[], Some(err)),
        };
        if !keep_going {
            return;
        }
    }
}

/// The rules a binding's `roleRef` grants, or the lister's error message.
fn role_reference_rules(
    objects: &dyn RbacObjects,
    role_ref: &Value,
    binding_namespace: &str,
) -> Result<Vec<Value>, String> {
    let name = str_of(&role_ref["name"]);
    let role = match str_of(&role_ref["kind"]) {
        "Role" => objects
            .role(binding_namespace, name)
            .ok_or_else(|| format!("role.{RBAC_GROUP} \"{name}\" not found"))?,
        "ClusterRole" => objects
            .cluster_role(name)
            .ok_or_else(|| format!("clusterrole.{RBAC_GROUP} \"{name}\" not found"))?,
        other => return Err(format!("unsupported role reference kind: \"{other}\"")),
    };
    Ok(role["rules"].as_array().cloned().unwrap_or_default())
}

/// The first binding subject that applies to `user` (`appliesTo`).
fn applies_to<'a>(user: &UserInfo, subjects: &'a Value, namespace: &str) -> Option<&'a Value> {
    subjects.as_array()?.iter().find(|s| subject_applies(user, s, namespace))
}

fn subject_applies(user: &UserInfo, subject: &Value, namespace: &str) -> bool {
    let name = str_of(&subject["name"]);
    match str_of(&subject["kind"]) {
        "User" => user.username == name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            // A RoleBinding's ServiceAccount subject defaults to the binding's namespace; a
            // ClusterRoleBinding's must name one.
            let sa_namespace = match str_of(&subject["namespace"]) {
                "" => namespace,
                ns => ns,
            };
            !sa_namespace.is_empty() && user.username == super::service_account_username(sa_namespace, name)
        }
        _ => false,
    }
}

/// `RoleBinding "name/ns" of ClusterRole "view" to ServiceAccount "sa/ns"` (upstream's
/// source describer, used in the allow reason).
fn describe_binding(binding: &Value, subject: &Value, namespace: &str) -> String {
    let kind = str_of(&subject["kind"]);
    let subject_name = str_of(&subject["name"]);
    let described_subject = if kind == "ServiceAccount" {
        let ns = match str_of(&subject["namespace"]) {
            "" => namespace,
            ns => ns,
        };
        format!("{kind} \"{subject_name}/{ns}\"")
    } else {
        format!("{kind} \"{subject_name}\"")
    };
    let name = str_of(&binding["metadata"]["name"]);
    let role_ref = &binding["roleRef"];
    let (ref_kind, ref_name) = (str_of(&role_ref["kind"]), str_of(&role_ref["name"]));
    if namespace.is_empty() {
        format!("ClusterRoleBinding \"{name}\" of {ref_kind} \"{ref_name}\" to {described_subject}")
    } else {
        format!("RoleBinding \"{name}/{namespace}\" of {ref_kind} \"{ref_name}\" to {described_subject}")
    }
}

/// `RuleAllows`: does one PolicyRule allow the request?
pub fn rule_allows(attrs: &RequestAttributes, rule: &Value) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        return verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name);
    }
    verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
}

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule[field].as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn verb_matches(rule: &Value, verb: &str) -> bool {
    strings(rule, "verbs").any(|v| v == "*" || v == verb)
}

fn api_group_matches(rule: &Value, group: &str) -> bool {
    strings(rule, "apiGroups").any(|g| g == "*" || g == group)
}

/// `*`, exact `res` / `res/sub`, and `*/sub`. (`res/*` is no wildcard upstream: it matches
/// only a subresource literally named `*`.)
fn resource_matches(rule: &Value, combined: &str, subresource: &str) -> bool {
    strings(rule, "resources").any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// A rule with resourceNames matches only requests that name one of them.
fn resource_name_matches(rule: &Value, name: &str) -> bool {
    let mut names = strings(rule, "resourceNames").peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

/// `*`, exact, or a trailing-`*` prefix.
fn non_resource_url_matches(rule: &Value, path: &str) -> bool {
    strings(rule, "nonResourceURLs")
        .any(|u| u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*'))))
}
