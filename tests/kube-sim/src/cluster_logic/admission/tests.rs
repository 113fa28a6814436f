use serde_json::{Value, json};

use super::*;

fn eviction_webhook() -> Value {
    let mut configuration = json!({"metadata": {"name": "eviction-guard"}, "webhooks": [{
        "name": "eviction.guard.example.com",
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"], "scope": "Namespaced"}],
        "clientConfig": {"service": {"namespace": "guard", "name": "guard-webhook", "path": "/validate-eviction"}},
        "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 5}]});
    default_configuration(&mut configuration, false);
    configuration["webhooks"][0].clone()
}

fn eviction_attributes() -> AdmissionAttributes {
    AdmissionAttributes {
        resource: ResourceRef::new("", "v1", "pods", "policy/v1", "Eviction"),
        subresource: "eviction".into(),
        operation: Operation::Create,
        namespace: "prod".into(),
        name: "web-7d4b9c6f5-x2kq9".into(),
        object: Some(json!({"kind": "Eviction", "apiVersion": "policy/v1",
            "metadata": {"name": "web-7d4b9c6f5-x2kq9", "namespace": "prod", "creationTimestamp": null}, "deleteOptions": {}})),
        old_object: None,
        dry_run: false,
        options: json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
        user_info: json!({"username": "system:serviceaccount:ops:drainer", "uid": "…",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated"]}),
        equivalents: Vec::new(),
    }
}

fn prod_labels() -> serde_json::Map<String, Value> {
    json!({"kubernetes.io/metadata.name": "prod", "team": "web"}).as_object().cloned().unwrap_or_default()
}

fn calls(webhook: &Value, attributes: &AdmissionAttributes) -> bool {
    matches!(should_call_hook(webhook, attributes, Some(&prod_labels())), Ok(Some(_)))
}

#[test]
fn defaults_are_applied_and_bad_configurations_rejected() {
    let webhook = eviction_webhook();
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["matchPolicy"], "Equivalent");
    assert_eq!(
        (webhook["namespaceSelector"].clone(), webhook["objectSelector"].clone()),
        (json!({}), json!({}))
    );
    assert_eq!(webhook["timeoutSeconds"], 5);
    assert_eq!(webhook["clientConfig"]["service"]["port"], 443);
    assert!(webhook.get("reinvocationPolicy").is_none());
    let mut mutating = json!({"webhooks": [{"name": "m.example.com", "rules": [{"operations": ["*"]}]}]});
    default_configuration(&mut mutating, true);
    assert_eq!(
        (
            mutating["webhooks"][0]["timeoutSeconds"].clone(),
            mutating["webhooks"][0]["reinvocationPolicy"].clone()
        ),
        (json!(10), json!("Never"))
    );
    assert_eq!(mutating["webhooks"][0]["rules"][0]["scope"], "*");
}

#[test]
fn rules_match_resources_subresources_operations_and_scope() {
    let attributes = eviction_attributes();
    let with_rule = |rule: Value| {
        let mut w = eviction_webhook();
        w["rules"] = json!([rule]);
        w
    };
    let rule = |groups: Value, resources: Value, operations: Value, scope: &str| json!({"apiGroups": groups, "apiVersions": ["*"], "resources": resources, "operations": operations, "scope": scope});
    let cases = [
        (rule(json!([""]), json!(["pods/eviction"]), json!(["CREATE"]), "Namespaced"), true),
        (rule(json!([""]), json!(["pods/*"]), json!(["*"]), "*"), true),
        (rule(json!(["*"]), json!(["*/eviction"]), json!(["CREATE"]), "*"), true),
        (rule(json!(["*"]), json!(["*/*"]), json!(["*"]), "*"), true),
        (rule(json!(["*"]), json!(["*"]), json!(["*"]), "*"), false),
        (rule(json!([""]), json!(["pods"]), json!(["CREATE"]), "*"), false),
        (rule(json!(["policy"]), json!(["pods/eviction"]), json!(["CREATE"]), "*"), false),
        (rule(json!([""]), json!(["pods/eviction"]), json!(["UPDATE", "DELETE"]), "*"), false),
        (rule(json!([""]), json!(["pods/eviction"]), json!(["CREATE"]), "Cluster"), false),
    ];
    for (rule, expected) in cases {
        assert_eq!(calls(&with_rule(rule.clone()), &attributes), expected, "{rule}");
    }
}

#[test]
fn object_selector_sees_the_eviction_not_the_pod() {
    let attributes = eviction_attributes();
    let with_selector = |selector: Value| {
        let mut w = eviction_webhook();
        w["objectSelector"] = selector;
        w
    };
    assert!(calls(&with_selector(json!({})), &attributes));
    assert!(!calls(&with_selector(json!({"matchLabels": {"app": "web"}})), &attributes));
    assert!(!calls(
        &with_selector(json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]})),
        &attributes
    ));
    assert!(calls(
        &with_selector(json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]})),
        &attributes
    ));
    let mut labelled = attributes;
    labelled.object = labelled.object.map(|mut o| {
        o["metadata"]["labels"] = json!({"app": "web"});
        o
    });
    assert!(calls(&with_selector(json!({"matchLabels": {"app": "web"}})), &labelled));
}

#[test]
fn namespace_selector_uses_namespace_labels_and_missing_namespaces_error_only_when_rules_match() {
    let attributes = eviction_attributes();
    let mut webhook = eviction_webhook();
    webhook["namespaceSelector"] = json!({"matchLabels": {"team": "web"}});
    assert!(calls(&webhook, &attributes));
    webhook["namespaceSelector"] = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["prod"]}]});
    assert!(!calls(&webhook, &attributes));
    assert_eq!(should_call_hook(&webhook, &attributes, None), Err("namespaces \"prod\" not found".into()));
    webhook["rules"][0]["operations"] = json!(["DELETE"]);
    assert_eq!(should_call_hook(&webhook, &attributes, None), Ok(None));

    let mut cluster_scoped = attributes;
    cluster_scoped.namespace = String::new();
    cluster_scoped.resource = ResourceRef::new("", "v1", "nodes", "v1", "Node");
    cluster_scoped.subresource = String::new();
    webhook["rules"] = json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["nodes"], "operations": ["*"], "scope": "Cluster"}]);
    assert!(calls(&webhook, &cluster_scoped), "cluster-scoped objects ignore namespaceSelector");
}

#[test]
fn webhook_configurations_are_exempt_and_equivalent_versions_match() {
    let mut webhook = eviction_webhook();
    webhook["rules"] =
        json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]);
    let mut attributes = eviction_attributes();
    attributes.subresource = String::new();
    attributes.resource = ResourceRef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    );
    attributes.namespace = String::new();
    assert_eq!(should_call_hook(&webhook, &attributes, None), Ok(None));

    webhook["rules"] = json!([{"apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "resources": ["deployments"], "operations": ["CREATE"]}]);
    attributes.resource = ResourceRef::new("apps", "v1", "deployments", "apps/v1", "Deployment");
    attributes.namespace = "prod".into();
    let old = ResourceRef::new("extensions", "v1beta1", "deployments", "extensions/v1beta1", "Deployment");
    attributes.equivalents = vec![attributes.resource.clone(), old.clone()];
    let invocation = should_call_hook(&webhook, &attributes, Some(&prod_labels()));
    assert_eq!(invocation, Ok(Some(Invocation { resource: old })));
    webhook["matchPolicy"] = json!("Exact");
    assert_eq!(should_call_hook(&webhook, &attributes, Some(&prod_labels())), Ok(None));
}

/// §3.5.1, field for field.
#[test]
fn the_eviction_review_equals_the_spec_example() {
    let attributes = eviction_attributes();
    let webhook = eviction_webhook();
    let invocation = should_call_hook(&webhook, &attributes, Some(&prod_labels())).ok().flatten();
    let invocation = invocation.unwrap_or_else(|| panic!("the eviction webhook must be called"));
    let version = review_version(&webhook).unwrap_or_default();
    let review = admission_review(version, "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11", &invocation, &attributes);
    assert_eq!(
        review,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11",
                "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "subResource": "eviction",
                "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "requestSubResource": "eviction",
                "name": "web-7d4b9c6f5-x2kq9",
                "namespace": "prod",
                "operation": "CREATE",
                "userInfo": {"username": "system:serviceaccount:ops:drainer", "uid": "…", "groups": ["system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated"]},
                "object": {
                    "kind": "Eviction",
                    "apiVersion": "policy/v1",
                    "metadata": {"name": "web-7d4b9c6f5-x2kq9", "namespace": "prod", "creationTimestamp": null},
                    "deleteOptions": {}
                },
                "oldObject": null,
                "dryRun": false,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
            }
        })
    );
    let target = webhook_target(&webhook).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        target.url(timeout_seconds(&webhook)),
        "https://guard-webhook.guard.svc:443/validate-eviction?timeout=5s"
    );
}

fn answer(response: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
    )
    .unwrap_or_default()
}

#[test]
fn denials_become_the_upstream_status_errors() {
    let webhook = eviction_webhook();
    let judge = |response: Value| {
        judge_response(&webhook, false, "admission.k8s.io/v1", "u1", true, 200, &answer(response))
    };
    let denied = |verdict: WebhookVerdict| match verdict {
        WebhookVerdict::Denied { status, .. } => status,
        other => panic!("expected a denial, got {other:?}"),
    };
    assert_eq!(
        denied(judge(json!({"uid": "u1", "allowed": false}))).body,
        json!({"kind": "Status", "apiVersion": "v1",
        "metadata": {}, "status": "Failure",
        "message": "admission webhook \"eviction.guard.example.com\" denied the request without explanation", "code": 400})
    );
    let forbidden = denied(judge(
        json!({"uid": "u1", "allowed": false, "status": {"code": 403, "message": "maintenance freeze"}}),
    ));
    assert_eq!(
        (forbidden.code, forbidden.message()),
        (403, "admission webhook \"eviction.guard.example.com\" denied the request: maintenance freeze")
    );
    assert!(forbidden.body.get("reason").is_none());
    let busy = denied(judge(
        json!({"uid": "u1", "allowed": false, "status": {"code": 429, "reason": "TooManyRequests", "message": "wait"}}),
    ));
    assert_eq!((busy.code, busy.body["reason"].as_str()), (429, Some("TooManyRequests")));
    let low =
        denied(judge(json!({"uid": "u1", "allowed": false, "status": {"code": 200, "reason": "Nope"}})));
    assert_eq!(
        (low.code, low.message()),
        (400, "admission webhook \"eviction.guard.example.com\" denied the request: Nope")
    );
    match judge(json!({"uid": "u1", "allowed": false, "warnings": ["careful"]})) {
        WebhookVerdict::Denied { warnings, .. } => assert_eq!(warnings, vec!["careful".to_string()]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_answers_are_call_errors() {
    let webhook = eviction_webhook();
    let prefix = "failed calling webhook \"eviction.guard.example.com\": ";
    let cases: Vec<(bool, u16, Vec<u8>, &str)> = vec![
        (
            false,
            200,
            answer(json!({"uid": "other", "allowed": true})),
            "received invalid webhook response: expected response.uid=\"u1\", got \"other\"",
        ),
        (
            false,
            200,
            b"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}".to_vec(),
            "received invalid webhook response: webhook response was absent",
        ),
        (
            false,
            200,
            b"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"response\":{}}"
                .to_vec(),
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
        ),
        (
            false,
            200,
            answer(json!({"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"})),
            "received invalid webhook response: validating webhook may not return response.patch",
        ),
        (
            true,
            200,
            answer(json!({"uid": "u1", "allowed": true, "patch": "W10="})),
            "received invalid webhook response: webhook returned response.patch but not response.patchType",
        ),
        (
            true,
            200,
            answer(json!({"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "Merge"})),
            "unsupported patch type \"Merge\"",
        ),
        (
            false,
            500,
            b"boom".to_vec(),
            "failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding",
        ),
        (
            false,
            404,
            b"".to_vec(),
            "failed to call webhook: the server could not find the requested resource",
        ),
    ];
    for (mutating, code, body, expected) in cases {
        let verdict = judge_response(&webhook, mutating, "admission.k8s.io/v1", "u1", true, code, &body);
        assert_eq!(verdict, WebhookVerdict::CallError(format!("{prefix}{expected}")), "{expected}");
    }
}

#[test]
fn patches_are_decoded_and_refused_on_delete() {
    let webhook = eviction_webhook();
    let ops = json!([{"op": "add", "path": "/deleteOptions/gracePeriodSeconds", "value": 5}]);
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ops.to_string());
    let body = answer(
        json!({"uid": "u1", "allowed": true, "patch": encoded, "patchType": "JSONPatch", "auditAnnotations": {"k": "v"}}),
    );
    match judge_response(&webhook, true, "admission.k8s.io/v1", "u1", true, 200, &body) {
        WebhookVerdict::Allowed { patch, audit_annotations, .. } => {
            assert_eq!(patch, Some(ops));
            assert_eq!(audit_annotations.get("k"), Some(&json!("v")));
        }
        other => panic!("{other:?}"),
    }
    match judge_response(&webhook, true, "admission.k8s.io/v1", "u1", false, 200, &body) {
        WebhookVerdict::Reject(status) => assert_eq!(
            (status.code, status.message()),
            (
                500,
                "admission webhook \"eviction.guard.example.com\" attempted to modify the object, which is not supported for this operation"
            )
        ),
        other => panic!("{other:?}"),
    }
    let empty = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "[]");
    let body = answer(json!({"uid": "u1", "allowed": true, "patch": empty, "patchType": "JSONPatch"}));
    assert!(matches!(
        judge_response(&webhook, true, "admission.k8s.io/v1", "u1", false, 200, &body),
        WebhookVerdict::Allowed { patch: None, .. }
    ));
}

#[test]
fn failure_policy_and_dry_run_rules() {
    let mut webhook = eviction_webhook();
    let url = webhook_target(&webhook).map(|t| t.url(10)).unwrap_or_default();
    let error = transport_error_text("eviction.guard.example.com", &url, "context deadline exceeded");
    assert_eq!(
        error,
        "failed calling webhook \"eviction.guard.example.com\": failed to call webhook: Post \"https://guard-webhook.guard.svc:443/validate-eviction?timeout=10s\": context deadline exceeded"
    );
    match on_call_error(&webhook, false, 0, 0, &error) {
        FailureOutcome::Reject(status) => assert_eq!(
            status.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": format!("Internal error occurred: {error}"), "reason": "InternalError",
            "details": {"causes": [{"message": error}]}, "code": 500})
        ),
        other => panic!("{other:?}"),
    }
    webhook["failurePolicy"] = json!("Ignore");
    assert_eq!(
        on_call_error(&webhook, false, 0, 2, &error),
        FailureOutcome::Ignore {
            annotation_key: "failed-open.validating.webhook.admission.k8s.io/round_0_index_2".into(),
            annotation_value: "eviction.guard.example.com".into(),
        }
    );
    assert_eq!(dry_run_unsupported(&webhook, true), None, "sideEffects None supports dry run");
    webhook["sideEffects"] = json!("Unknown");
    assert_eq!(dry_run_unsupported(&webhook, false), None);
    let refused = dry_run_unsupported(&webhook, true).map(|s| (s.code, s.message().to_string()));
    assert_eq!(
        refused,
        Some((400, "admission webhook \"eviction.guard.example.com\" does not support dry run".into()))
    );

    webhook["timeoutSeconds"] = json!(60);
    assert_eq!(timeout_seconds(&webhook), 30);
    webhook["admissionReviewVersions"] = json!(["v2"]);
    assert!(
        review_version(&webhook).is_err_and(
            |e| e.ends_with("webhook does not accept known AdmissionReview versions (v1, v1beta1)")
        )
    );
}

#[test]
fn mutating_order_is_by_configuration_name_then_list_order() {
    let configurations = [
        json!({"metadata": {"name": "zeta"}, "webhooks": [{"name": "z1.example.com"}]}),
        json!({"metadata": {"name": "alpha"}, "webhooks": [{"name": "a1.example.com"}, {"name": "a2.example.com"}]}),
    ];
    let order: Vec<(String, usize, Value)> = ordered_webhooks(&configurations)
        .into_iter()
        .map(|e| (e.configuration, e.index, e.webhook["name"].clone()))
        .collect();
    assert_eq!(
        order,
        vec![
            ("alpha".into(), 0, json!("a1.example.com")),
            ("alpha".into(), 1, json!("a2.example.com")),
            ("zeta".into(), 0, json!("z1.example.com")),
        ]
    );
}
