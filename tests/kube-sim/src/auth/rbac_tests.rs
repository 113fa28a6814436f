//! The authorizer against a fixed set of RBAC objects: cases from upstream's
//! `plugin/pkg/auth/authorizer/rbac/rbac_test.go` (`TestAuthorizer`) and
//! `pkg/registry/rbac/validation/rule_test.go` (`TestAppliesTo`), plus the bootstrap policy.

use std::sync::Arc;

use serde_json::{Value, json};

use super::rbac::{RbacObjects, authorize};
use super::{RequestAttributes, UserInfo};

/// RBAC objects held in a vector.
#[derive(Default)]
struct Objects(Vec<Arc<Value>>);

impl Objects {
    fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.0.iter().filter(move |o| o["kind"] == kind)
    }
    fn named<'a>(&'a self, kind: &'a str, namespace: &'a str, name: &'a str) -> Option<Arc<Value>> {
        self.of_kind(kind)
            .find(|o| {
                o["metadata"]["name"] == name
                    && o["metadata"]["namespace"].as_str().unwrap_or("") == namespace
            })
            .cloned()
    }
}

impl RbacObjects for Objects {
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
        self.of_kind("ClusterRoleBinding").cloned().collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.of_kind("RoleBinding").filter(|o| o["metadata"]["namespace"] == namespace).cloned().collect()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.named("Role", namespace, name)
    }
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>> {
        self.named("ClusterRole", "", name)
    }
}

/// `newRule(verbs, apiGroups, resources, nonResourceURLs)` with comma-separated lists.
fn rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> Value {
    fn list(s: &str) -> Vec<&str> {
        if s.is_empty() { vec![] } else { s.split(',').collect() }
    }
    let mut r = json!({"verbs": list(verbs)});
    if !resources.is_empty() {
        r["apiGroups"] = json!(groups.split(',').collect::<Vec<_>>());
        r["resources"] = json!(list(resources));
    }
    if !urls.is_empty() {
        r["nonResourceURLs"] = json!(list(urls));
    }
    r
}

fn with_names(mut rule: Value, names: &[&str]) -> Value {
    rule["resourceNames"] = json!(names);
    rule
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn role(namespace: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
}

/// Subjects as `User:name`, `Group:name`, `ServiceAccount:ns:name` (`ns` may be empty).
fn subjects(list: &[&str]) -> Value {
    let parsed: Vec<Value> = list
        .iter()
        .map(|s| match s.split(':').collect::<Vec<_>>().as_slice() {
            ["ServiceAccount", ns, name] => json!({"kind": "ServiceAccount", "namespace": ns, "name": name}),
            [kind, name] => json!({"kind": kind, "name": name}),
            _ => panic!("bad subject {s}"),
        })
        .collect();
    Value::Array(parsed)
}

fn cluster_binding(role: &str, subs: &[&str]) -> Value {
    json!({"kind": "ClusterRoleBinding", "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": subjects(subs)})
}

fn binding(namespace: &str, role_kind: &str, role: &str, subs: &[&str]) -> Value {
    json!({"kind": "RoleBinding", "metadata": {"name": role, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}, "subjects": subjects(subs)})
}

fn objects(list: Vec<Value>) -> Objects {
    Objects(list.into_iter().map(Arc::new).collect())
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn res(verb: &str, resource: &str, namespace: &str) -> RequestAttributes {
    RequestAttributes::resource(verb, "", resource, namespace, "")
}

fn check(objects: &Objects, pass: &[(UserInfo, RequestAttributes)], fail: &[(UserInfo, RequestAttributes)]) {
    for (u, a) in pass {
        assert!(authorize(objects, u, a).allowed, "expected {u:?} to be allowed {a:?}");
    }
    for (u, a) in fail {
        assert!(!authorize(objects, u, a).allowed, "expected {u:?} to be denied {a:?}");
    }
}

#[test]
fn a_role_binding_to_a_cluster_role_grants_only_in_its_namespace() {
    let o = objects(vec![
        cluster_role("admin", vec![rule("*", "*", "*", "*")]),
        binding("ns1", "ClusterRole", "admin", &["User:admin", "Group:admins"]),
    ]);
    let admin = user("admin", &[]);
    check(
        &o,
        &[
            (admin.clone(), res("get", "Pods", "ns1")),
            (admin.clone(), res("watch", "Pods", "ns1")),
            (user("someone", &["admins"]), res("get", "Pods", "ns1")),
            (user("someone", &["admins"]), res("watch", "Pods", "ns1")),
        ],
        &[
            (admin.clone(), res("GET", "Pods", "ns2")),
            (admin.clone(), res("GET", "Pods", "")),
            (admin, res("get", "nodes", "")),
        ],
    );
}

#[test]
fn non_resource_urls_match_exactly_or_by_trailing_star() {
    let o = objects(vec![
        cluster_role("non-resource-url-getter", vec![rule("get", "", "", "/apis")]),
        cluster_role("non-resource-url", vec![rule("*", "", "", "/apis")]),
        cluster_role("non-resource-url-prefix", vec![rule("get", "", "", "/apis/*")]),
        cluster_binding("non-resource-url-getter", &["User:foo", "Group:bar"]),
        cluster_binding("non-resource-url", &["User:admin", "Group:admin"]),
        cluster_binding("non-resource-url-prefix", &["User:prefixed", "Group:prefixed"]),
    ]);
    let path = |verb: &str, p: &str| RequestAttributes::non_resource(verb, p);
    check(
        &o,
        &[
            (user("foo", &[]), path("get", "/apis")),
            (user("", &["bar"]), path("get", "/apis")),
            (user("admin", &[]), path("get", "/apis")),
            (user("", &["admin"]), path("watch", "/apis")),
            (user("prefixed", &[]), path("get", "/apis/v1")),
            (user("", &["prefixed"]), path("get", "/apis/v1/foobar")),
        ],
        &[
            (user("foo", &[]), path("watch", "/apis")),
            (user("", &["bar"]), path("watch", "/apis")),
            (user("foo", &[]), path("get", "/api/v1")),
            (user("admin", &[]), path("get", "/api/v1")),
            (user("prefixed", &[]), path("get", "/api/v1")),
            (user("prefixed", &[]), path("get", "/apis")),
        ],
    );
}

#[test]
fn subresources_need_their_own_rule_or_a_star_prefix() {
    let o = objects(vec![
        cluster_role("pods", vec![rule("*", "*", "pods", "")]),
        cluster_role("sub", vec![rule("*", "*", "pods/status,*/scale,deployments/*", "")]),
        binding("ns1", "ClusterRole", "pods", &["User:pods"]),
        binding("ns1", "ClusterRole", "sub", &["User:sub"]),
    ]);
    let sub = |resource: &str, subresource: &str| res("get", resource, "ns1").with_subresource(subresource);
    check(
        &o,
        &[
            (user("pods", &[]), res("get", "pods", "ns1")),
            (user("sub", &[]), sub("pods", "status")),
            (user("sub", &[]), sub("pods", "scale")),
            (user("sub", &[]), sub("deployments", "scale")),
        ],
        &[
            (user("pods", &[]), sub("pods", "status")),
            (user("sub", &[]), res("get", "pods", "ns1")),
            (user("sub", &[]), res("get", "deployments", "ns1")),
            // `res/*` is no wildcard upstream: it matches a literal `*` subresource only.
            (user("sub", &[]), sub("deployments", "status")),
        ],
    );
}

#[test]
fn resource_names_never_match_a_request_without_a_name() {
    let o = objects(vec![
        role(
            "ns1",
            "one-pod",
            vec![with_names(rule("get,list,watch,create,delete", "", "pods", ""), &["web-1"])],
        ),
        binding("ns1", "Role", "one-pod", &["User:u"]),
    ]);
    let u = user("u", &[]);
    let named = |verb: &str, name: &str| RequestAttributes::resource(verb, "", "pods", "ns1", name);
    check(
        &o,
        &[
            (u.clone(), named("get", "web-1")),
            (u.clone(), named("delete", "web-1")),
            (u.clone(), named("list", "web-1")),
        ],
        &[
            (u.clone(), named("get", "web-2")),
            (u.clone(), named("list", "")),
            (u.clone(), named("watch", "")),
            (u, named("create", "")),
        ],
    );
}

#[test]
fn verbs_and_api_groups_must_match() {
    let o = objects(vec![
        cluster_role("reader", vec![rule("get,list", "apps", "deployments", "")]),
        cluster_binding("reader", &["Group:readers"]),
    ]);
    let reader = user("r", &["readers"]);
    let deploy = |verb: &str, group: &str| RequestAttributes::resource(verb, group, "deployments", "", "");
    check(
        &o,
        &[(reader.clone(), deploy("list", "apps")), (reader.clone(), deploy("get", "apps"))],
        &[
            (reader.clone(), deploy("watch", "apps")),
            (reader.clone(), deploy("list", "extensions")),
            (reader, deploy("list", "")),
        ],
    );
}

#[test]
fn service_account_subjects_default_to_the_binding_namespace() {
    let o = objects(vec![
        cluster_role("view", vec![rule("get", "", "pods", "")]),
        binding("ns1", "ClusterRole", "view", &["ServiceAccount::local"]),
        binding("ns1", "ClusterRole", "view", &["ServiceAccount:other:remote"]),
        cluster_binding("view", &["ServiceAccount::no-namespace", "ServiceAccount:ns2:everywhere"]),
    ]);
    let sa = |ns: &str, name: &str| UserInfo::service_account(ns, name, "");
    check(
        &o,
        &[
            (sa("ns1", "local"), res("get", "pods", "ns1")),
            (sa("other", "remote"), res("get", "pods", "ns1")),
            (sa("ns2", "everywhere"), res("get", "pods", "ns3")),
            (sa("ns2", "everywhere"), res("get", "pods", "")),
        ],
        &[
            (sa("ns2", "local"), res("get", "pods", "ns1")),
            (sa("ns1", "local"), res("get", "pods", "ns2")),
            (sa("ns1", "remote"), res("get", "pods", "ns1")),
            // A ClusterRoleBinding's ServiceAccount subject without a namespace matches nobody.
            (sa("ns1", "no-namespace"), res("get", "pods", "ns1")),
            (sa("", "no-namespace"), res("get", "pods", "")),
        ],
    );
}

#[test]
fn system_masters_is_always_allowed_and_nothing_else_is_by_default() {
    let o = Objects::default();
    assert!(authorize(&o, &UserInfo::admin(), &res("deletecollection", "pods", "x")).allowed);
    assert!(authorize(&o, &UserInfo::admin(), &RequestAttributes::non_resource("get", "/anything")).allowed);
    assert!(!authorize(&o, &UserInfo::service_account("a", "b", ""), &res("get", "pods", "a")).allowed);
    assert!(
        !authorize(&o, &UserInfo::anonymous(), &RequestAttributes::non_resource("get", "/version")).allowed
    );
}

#[test]
fn missing_roles_are_reported_in_the_reason() {
    let o = objects(vec![
        binding("ns1", "Role", "gone", &["User:u"]),
        binding("ns1", "ClusterRole", "also-gone", &["User:u"]),
        binding("ns1", "Role", "not-mine", &["User:someone-else"]),
    ]);
    let decision = authorize(&o, &user("u", &[]), &res("get", "pods", "ns1"));
    assert!(!decision.allowed);
    let mut reasons = [
        r#"role.rbac.authorization.k8s.io "gone" not found"#,
        r#"clusterrole.rbac.authorization.k8s.io "also-gone" not found"#,
    ];
    // Bindings are visited in the order the source lists them.
    if decision.reason.find("also-gone") < decision.reason.find("\"gone\"") {
        reasons.reverse();
    }
    assert_eq!(decision.reason, format!("RBAC: [{}, {}]", reasons[0], reasons[1]));
    let one = objects(vec![binding("ns1", "Role", "gone", &["User:u"])]);
    assert_eq!(
        authorize(&one, &user("u", &[]), &res("get", "pods", "ns1")).reason,
        r#"RBAC: role.rbac.authorization.k8s.io "gone" not found"#
    );
}

#[test]
fn the_allow_reason_names_the_binding() {
    let o = objects(vec![
        cluster_role("view", vec![rule("get", "", "pods", "")]),
        binding("ns1", "ClusterRole", "view", &["ServiceAccount::sa"]),
    ]);
    let decision = authorize(&o, &UserInfo::service_account("ns1", "sa", ""), &res("get", "pods", "ns1"));
    assert_eq!(
        decision.reason,
        r#"RBAC: allowed by RoleBinding "view/ns1" of ClusterRole "view" to ServiceAccount "sa/ns1""#
    );
}

#[test]
fn the_bootstrap_policy_opens_discovery_to_authenticated_users_only() {
    let mut list = super::bootstrap::cluster_roles();
    list.extend(super::bootstrap::cluster_role_bindings());
    let o = objects(list);
    let sa = UserInfo::service_account("ns", "sa", "");
    let anonymous = UserInfo::anonymous();
    let get = |p: &str| RequestAttributes::non_resource("get", p);
    let review =
        RequestAttributes::resource("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "");
    check(
        &o,
        &[
            (sa.clone(), get("/api")),
            (sa.clone(), get("/apis/apps/v1")),
            (sa.clone(), get("/openapi/v3/apis/apps/v1")),
            (sa.clone(), get("/version")),
            (sa.clone(), review.clone()),
            (anonymous.clone(), get("/healthz")),
            (anonymous.clone(), get("/version")),
            (user("u", &["system:masters"]), res("get", "secrets", "kube-system")),
        ],
        &[
            (anonymous.clone(), get("/api")),
            (anonymous, review),
            (sa.clone(), get("/healthz/etcd")),
            (sa.clone(), get("/foo")),
            (sa, res("list", "pods", "ns")),
        ],
    );
}
