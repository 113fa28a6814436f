//! RBAC roles and bindings; webhook configurations.

use kube_sim::{Cluster, WriteOptions};
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn rbac_rules_and_bindings_follow_upstream() {
    let cluster = Cluster::default();
    let role = |kind: &str, rules: Value| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": "r"}, "rules": rules});
    rejects(
        &cluster,
        &role("Role", json!([{"apiGroups": [""], "resources": ["pods"]}])),
        "FieldValueRequired",
        "rules[0].verbs",
        "rules[0].verbs: Required value: verbs must contain at least one value",
    )
    .await;
    let err = rejects(&cluster, &role("Role", json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])), "FieldValueInvalid", "rules[0].nonResourceURLs",
        "rules[0].nonResourceURLs: Invalid value: []string{\"/metrics\"}: namespaced rules cannot apply to non-resource URLs").await;
    assert!(err.message.starts_with("Role.rbac.authorization.k8s.io \"r\" is invalid: "), "{}", err.message);
    rejects(
        &cluster,
        &role("ClusterRole", json!([{"resources": ["pods"], "verbs": ["get"]}])),
        "FieldValueRequired",
        "rules[0].apiGroups",
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
    )
    .await;
    rejects(&cluster, &role("ClusterRole", json!([{"nonResourceURLs": ["/metrics"], "resources": ["pods"], "verbs": ["get"]}])), "FieldValueInvalid", "rules[0].nonResourceURLs",
        "rules[0].nonResourceURLs: Invalid value: []string{\"/metrics\"}: rules cannot apply to both regular resources and non-resource URLs").await;

    let crb = |role_ref: Value, subjects: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"}, "roleRef": role_ref, "subjects": subjects})
    };
    let bad = crb(
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}),
        json!([{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}]),
    );
    rejects(
        &cluster,
        &bad,
        "FieldValueNotSupported",
        "roleRef.kind",
        "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
    )
    .await;
    rejects(
        &cluster,
        &bad,
        "FieldValueRequired",
        "subjects[0].namespace",
        "subjects[0].namespace: Required value",
    )
    .await;
    rejects(&cluster, &bad, "FieldValueNotSupported", "subjects[1].kind",
        "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"").await;
    rejects(
        &cluster,
        &crb(json!({"apiGroup": "rbac", "kind": "ClusterRole"}), json!([])),
        "FieldValueRequired",
        "roleRef.name",
        "roleRef.name: Required value",
    )
    .await;

    let good = crb(
        json!({"kind": "ClusterRole", "name": "view"}),
        json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]),
    );
    create(&cluster, &good).await.expect("valid binding");
    let mut changed = good.clone();
    changed["roleRef"]["name"] = json!("edit");
    let err = cluster
        .update(&gvr_of(&good), None, "b", None, changed, &WriteOptions::default())
        .await
        .expect_err("roleRef is immutable");
    assert!(
        causes(&err).iter().any(|(_, f, m)| f == "roleRef" && m.ends_with(": cannot change roleRef")),
        "{err}"
    );
}

#[tokio::test]
async fn webhook_configurations_follow_upstream() {
    let cluster = Cluster::default();
    let mut hook = valid_hook();
    hook["name"] = json!("guard.example");
    hook["sideEffects"] = Value::Null;
    hook["admissionReviewVersions"] = json!(["v2"]);
    hook["timeoutSeconds"] = json!(31);
    hook["failurePolicy"] = json!("Retry");
    hook["rules"][0]["operations"] = json!(["CREATE", "PATCH"]);
    hook["clientConfig"]["service"]["port"] = json!(0);
    hook["clientConfig"]["service"]["path"] = json!("validate");
    let config = webhook_configuration("ValidatingWebhookConfiguration", hook);
    let expect = [
        (
            "FieldValueInvalid",
            "webhooks[0].name",
            "webhooks[0].name: Invalid value: \"guard.example\": should be a domain with at least three segments separated by dots",
        ),
        (
            "FieldValueRequired",
            "webhooks[0].sideEffects",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            "FieldValueInvalid",
            "webhooks[0].admissionReviewVersions",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
        ),
        (
            "FieldValueInvalid",
            "webhooks[0].timeoutSeconds",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            "FieldValueNotSupported",
            "webhooks[0].failurePolicy",
            "webhooks[0].failurePolicy: Unsupported value: \"Retry\": supported values: \"Fail\", \"Ignore\"",
        ),
        (
            "FieldValueNotSupported",
            "webhooks[0].rules[0].operations[1]",
            "webhooks[0].rules[0].operations[1]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        ),
        (
            "FieldValueInvalid",
            "webhooks[0].clientConfig.service.port",
            "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (
            "FieldValueInvalid",
            "webhooks[0].clientConfig.service.path",
            "webhooks[0].clientConfig.service.path: Invalid value: \"validate\": must start with a '/'",
        ),
    ];
    for (reason, field, message) in expect {
        let err = rejects(&cluster, &config, reason, field, message).await;
        assert!(
            err.message.starts_with(
                "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"guard\" is invalid: ["
            ),
            "{}",
            err.message
        );
    }

    let mut both = valid_hook();
    both["clientConfig"]["url"] = json!("http://guard.example.com/validate?x=1");
    rejects(
        &cluster,
        &webhook_configuration("MutatingWebhookConfiguration", both),
        "FieldValueRequired",
        "webhooks[0].clientConfig",
        "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
    )
    .await;
    let url_hook = json!({"name": "m.guard.example.com", "clientConfig": {"url": "http://guard.example.com/validate?x=1"},
        "admissionReviewVersions": ["v1"], "sideEffects": "Some"});
    let config = webhook_configuration("MutatingWebhookConfiguration", url_hook);
    rejects(&cluster, &config, "FieldValueInvalid", "webhooks[0].clientConfig.url",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]").await;
    rejects(
        &cluster,
        &config,
        "FieldValueInvalid",
        "webhooks[0].clientConfig.url",
        "webhooks[0].clientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
    )
    .await;
    rejects(
        &cluster,
        &config,
        "FieldValueNotSupported",
        "webhooks[0].sideEffects",
        "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
    )
    .await;

    let twice = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "twice"}, "webhooks": [valid_hook(), valid_hook()]});
    rejects(
        &cluster,
        &twice,
        "FieldValueDuplicate",
        "webhooks[1].name",
        "webhooks[1].name: Duplicate value: \"eviction.guard.example.com\"",
    )
    .await;
}
