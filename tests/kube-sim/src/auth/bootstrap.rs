//! The upstream default RBAC policy kube-sim needs (`plugin/pkg/auth/authorizer/rbac/
//! bootstrappolicy/policy.go`): discovery, health and version for every caller, self reviews
//! for authenticated ones, and `cluster-admin` for `system:masters`. Created at start like
//! the apiserver's bootstrap (existing objects, e.g. seeded ones, are left alone).

use serde_json::{Value, json};

use super::{AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP};
use crate::cluster::{Cluster, Gvr, WriteOptions};
use crate::error::ApiError;

fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata(name),
        "rules": rules})
}

fn binding_to_groups(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": metadata(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": subjects})
}

/// The ClusterRoles created at start.
pub fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                   {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        cluster_role(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:basic-user",
            json!([
                {"apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ]),
        ),
        cluster_role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"]}]),
        ),
    ]
}

/// The ClusterRoleBindings created at start.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding_to_groups("cluster-admin", &[MASTERS_GROUP]),
        binding_to_groups("system:discovery", &[AUTHENTICATED_GROUP]),
        binding_to_groups("system:basic-user", &[AUTHENTICATED_GROUP]),
        binding_to_groups("system:public-info-viewer", &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP]),
    ]
}

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings that do not exist yet.
pub async fn install(cluster: &Cluster) -> Result<(), ApiError> {
    let options = WriteOptions { skip_admission: true, ..WriteOptions::from_user_agent("kube-apiserver") };
    let sets = [("clusterroles", cluster_roles()), ("clusterrolebindings", cluster_role_bindings())];
    for (plural, objects) in sets {
        let gvr = Gvr::new("rbac.authorization.k8s.io", "v1", plural);
        for object in objects {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            if cluster.get(&gvr, None, name).is_ok() {
                continue;
            }
            match cluster.create(&gvr, None, object, &options).await {
                Ok(_) => {}
                // Created concurrently (e.g. by a seed): fine.
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
