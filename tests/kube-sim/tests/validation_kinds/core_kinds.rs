//! Valid objects of every kind; ConfigMap, Secret, Service and metadata rules.

use kube_sim::{Cluster, Gvr, WriteOptions};
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn valid_objects_of_every_kind_are_created() {
    let cluster = Cluster::default();
    let full_pod = json!({
        "serviceAccountName": "eviction-autoscaler",
        "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [{"name": "certs", "secret": {"secretName": "webhook-tls", "defaultMode": 420}},
            {"name": "tmp", "emptyDir": {}}],
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container(json!({
            "args": ["--leader-elect"],
            "ports": [{"name": "webhook", "containerPort": 9443}, {"name": "metrics", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "log.level", "value": "info"}],
            "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": true}, {"name": "tmp", "mountPath": "/tmp"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": 1, "memory": "0.25Gi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 0},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}, "successThreshold": 2},
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/app.json"}}
        }))]
    });
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "eviction-autoscaler", "labels": {"app.kubernetes.io/name": "eviction-autoscaler"}}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "eviction-autoscaler"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"},
            "data": {"config.yaml": "a: 1", "KEY_NAME": "x"}, "binaryData": {"blob.bin": "AAEC"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "webhook-tls"}, "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5\n"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "from-strings"}, "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": "cert", "tls.key": "key"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook"},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "https", "port": 443, "targetPort": "webhook"},
                {"name": "metrics", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "headless"}, "spec": {"clusterIP": "None"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "leader-election"},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:eviction-autoscaler:metrics"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
                {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["web"], "verbs": ["patch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "leader-election"},
            "roleRef": {"kind": "Role", "name": "leader-election"},
            "subjects": [{"kind": "ServiceAccount", "name": "eviction-autoscaler"}, {"kind": "User", "name": "alice"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "eviction-autoscaler"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:eviction-autoscaler:metrics"},
            "subjects": [{"kind": "ServiceAccount", "name": "eviction-autoscaler", "namespace": "eviction-autoscaler"},
                {"kind": "Group", "name": "system:authenticated"}]}),
        webhook_configuration("ValidatingWebhookConfiguration", valid_hook()),
        webhook_configuration(
            "MutatingWebhookConfiguration",
            json!({"name": "mutate.guard.example.com",
            "clientConfig": {"url": "https://guard.example.com:8443/mutate"}, "admissionReviewVersions": ["v1beta1", "v1"],
            "sideEffects": "NoneOnDryRun", "reinvocationPolicy": "IfNeeded",
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}],
            "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
            "matchConditions": [{"name": "not-kube-system", "expression": "true"}]}),
        ),
        deployment(full_pod),
        crd(
            "widgets.example.com",
            "example.com",
            json!([schema_version("v1", true), schema_version("v1beta1", false)]),
        ),
    ];
    for object in objects {
        if let Err(e) = create(&cluster, &object).await {
            panic!("{} {} rejected: {e}", object["kind"], object["metadata"]["name"]);
        }
    }
}

#[tokio::test]
async fn config_map_keys_and_binary_duplicates_are_rejected() {
    let cluster = Cluster::default();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"},
        "data": {"a b": "x", "dup": "y"}, "binaryData": {"dup": "AA=="}});
    let err = rejects(&cluster, &cm, "FieldValueInvalid", "data[a b]",
        "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')").await;
    assert!(err.message.starts_with("ConfigMap \"bad\" is invalid: ["), "{}", err.message);
    rejects(
        &cluster,
        &cm,
        "FieldValueInvalid",
        "data[dup]",
        "data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData",
    )
    .await;
    let dots =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dots"}, "data": {"..": "x"}});
    rejects(
        &cluster,
        &dots,
        "FieldValueInvalid",
        "data[..]",
        "data[..]: Invalid value: \"..\": must not be '..'",
    )
    .await;
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
        "data": {"a": "x".repeat(1024 * 1024 + 1)}});
    rejects(&cluster, &big, "FieldValueTooLong", "", ": Too long: must have at most 1048576 bytes").await;
}

#[tokio::test]
async fn secrets_need_their_type_keys_valid_base64_and_keep_their_type() {
    let cluster = Cluster::default();
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Y2VydA=="}});
    let err =
        rejects(&cluster, &tls, "FieldValueRequired", "data[tls.key]", "data[tls.key]: Required value").await;
    assert_eq!(err.message, "Secret \"tls\" is invalid: data[tls.key]: Required value");

    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b64"}, "data": {"password": "hunter2!"}});
    let err = create(&cluster, &bad).await.expect_err("not base64");
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 7"
    );

    let opaque =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}});
    create(&cluster, &opaque).await.expect("opaque secret");
    let mut changed = opaque.clone();
    changed["type"] = json!("kubernetes.io/basic-auth");
    changed["data"] = json!({"username": "dQ=="});
    let secrets = Gvr::new("", "v1", "secrets");
    let err = cluster
        .update(&secrets, Some("default"), "s", None, changed, &WriteOptions::default())
        .await
        .expect_err("type is immutable");
    assert!(
        causes(&err)
            .iter()
            .any(|(_, f, m)| f == "type"
                && m == "Invalid value: \"kubernetes.io/basic-auth\": field is immutable"),
        "{err}"
    );
}

#[tokio::test]
async fn services_need_valid_ports_names_and_types() {
    let cluster = Cluster::default();
    let svc = |name: &str, spec: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    let err = rejects(
        &cluster,
        &svc("web", json!({"selector": {"app": "web"}})),
        "FieldValueRequired",
        "spec.ports",
        "spec.ports: Required value",
    )
    .await;
    assert_eq!(err.message, "Service \"web\" is invalid: spec.ports: Required value");
    rejects(&cluster, &svc("1web", json!({"ports": [{"port": 80}]})), "FieldValueInvalid", "metadata.name",
        "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')").await;
    let two_ports = svc(
        "web",
        json!({"ports": [{"port": 443, "targetPort": "webhook-server-port"}, {"name": "m", "port": 70000}]}),
    );
    rejects(
        &cluster,
        &two_ports,
        "FieldValueRequired",
        "spec.ports[0].name",
        "spec.ports[0].name: Required value",
    )
    .await;
    rejects(&cluster, &two_ports, "FieldValueInvalid", "spec.ports[0].targetPort",
        "spec.ports[0].targetPort: Invalid value: \"webhook-server-port\": must be no more than 15 characters").await;
    rejects(
        &cluster,
        &two_ports,
        "FieldValueInvalid",
        "spec.ports[1].port",
        "spec.ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
    )
    .await;
    rejects(&cluster, &svc("web", json!({"type": "Internal", "ports": [{"port": 80, "protocol": "HTTP"}]})), "FieldValueNotSupported", "spec.type",
        "spec.type: Unsupported value: \"Internal\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"").await;
    rejects(
        &cluster,
        &svc("web", json!({"ports": [{"port": 80, "protocol": "HTTP"}]})),
        "FieldValueNotSupported",
        "spec.ports[0].protocol",
        "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
    )
    .await;
    rejects(&cluster, &svc("web", json!({"ports": [{"port": 80}], "selector": {"app": "a b"}})), "FieldValueInvalid", "spec.selector",
        "spec.selector: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')").await;
}

#[tokio::test]
async fn metadata_labels_and_rbac_names_follow_their_own_rules() {
    let cluster = Cluster::default();
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "labels": {"app": "-bad"}}});
    rejects(&cluster, &sa, "FieldValueInvalid", "metadata.labels",
        "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')").await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "eviction.autoscaler"}});
    rejects(
        &cluster,
        &ns,
        "FieldValueInvalid",
        "metadata.name",
        "metadata.name: Invalid value: \"eviction.autoscaler\": must not contain dots",
    )
    .await;
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a/b"}});
    rejects(
        &cluster,
        &role,
        "FieldValueInvalid",
        "metadata.name",
        "metadata.name: Invalid value: \"a/b\": may not contain '/'",
    )
    .await;
}
