//! Validation of the kinds the product's install manifests ship (Namespace, ServiceAccount,
//! ConfigMap, Secret, Service, RBAC, webhook configurations, Deployment pod templates,
//! CRDs), through the in-process `Cluster` API: invalid objects get the apiserver's 422
//! with its causes, valid ones are created.

use kube_sim::{ApiError, Cluster, Gvr, WriteOptions};
use serde_json::{Value, json};

pub(crate) fn gvr_of(object: &Value) -> Gvr {
    let plural = match object["kind"].as_str().unwrap_or_default() {
        "Namespace" => "namespaces",
        "ServiceAccount" => "serviceaccounts",
        "ConfigMap" => "configmaps",
        "Secret" => "secrets",
        "Service" => "services",
        "Role" => "roles",
        "ClusterRole" => "clusterroles",
        "RoleBinding" => "rolebindings",
        "ClusterRoleBinding" => "clusterrolebindings",
        "ValidatingWebhookConfiguration" => "validatingwebhookconfigurations",
        "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
        "Deployment" => "deployments",
        "CustomResourceDefinition" => "customresourcedefinitions",
        other => panic!("no plural for {other}"),
    };
    Gvr::from_api_version(object["apiVersion"].as_str().unwrap_or_default(), plural)
}

pub(crate) async fn create(cluster: &Cluster, object: &Value) -> Result<Value, ApiError> {
    let namespaced = !matches!(
        object["kind"].as_str(),
        Some(
            "Namespace"
                | "ClusterRole"
                | "ClusterRoleBinding"
                | "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "CustomResourceDefinition"
        )
    );
    let ns = namespaced.then_some("default");
    cluster.create(&gvr_of(object), ns, object.clone(), &WriteOptions::default()).await.map(|o| (*o).clone())
}

/// The `(reason, field, message)` of every cause of a 422.
pub(crate) fn causes(err: &ApiError) -> Vec<(String, String, String)> {
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err}");
    let details = err.details.clone().unwrap_or_default();
    details["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    (s("reason"), s("field"), s("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Creating `object` fails with 422, `message` (`field: ...`) in the Status message and the
/// cause `(reason, field, message without the field)` among others, as upstream's `ErrorBody`.
pub(crate) async fn rejects(
    cluster: &Cluster,
    object: &Value,
    reason: &str,
    field: &str,
    message: &str,
) -> ApiError {
    let err = create(cluster, object).await.expect_err("invalid object must be rejected");
    let all = causes(&err);
    let body = message.strip_prefix(&format!("{field}: ")).unwrap_or(message);
    assert!(
        all.iter().any(|(r, f, m)| r == reason && f == field && m == body),
        "expected {reason} {field}: {body}\n got {all:#?}"
    );
    assert!(err.message.contains(message), "{message:?} not in {:?}", err.message);
    err
}

pub(crate) fn deployment(pod_spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec}}})
}

pub(crate) fn container(extra: Value) -> Value {
    let mut c = json!({"name": "app", "image": "example.com/app:1"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        c[k] = v;
    }
    c
}

pub(crate) fn webhook_configuration(kind: &str, hook: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": "guard"}, "webhooks": [hook]})
}

pub(crate) fn valid_hook() -> Value {
    json!({"name": "eviction.guard.example.com",
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods/eviction"], "scope": "Namespaced"}],
        "clientConfig": {"service": {"namespace": "guard", "name": "guard", "path": "/validate-eviction", "port": 443}},
        "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 5})
}

pub(crate) fn crd(name: &str, group: &str, versions: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": versions}})
}

pub(crate) fn schema_version(name: &str, storage: bool) -> Value {
    json!({"name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
}

mod core_kinds;
mod rbac_and_webhooks;
mod templates_and_crds;
