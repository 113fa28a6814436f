//! Deployment pod templates; CustomResourceDefinitions.

use kube_sim::Cluster;
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn deployment_pod_templates_are_validated_like_upstream() {
    let cluster = Cluster::default();
    let pod = |containers: Value, extra: Value| {
        let mut spec = json!({"containers": containers});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            spec[k] = v;
        }
        deployment(spec)
    };
    let c = "spec.template.spec.containers[0]";
    let cases = [
        (pod(json!([container(json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}}))]), json!({})),
            "FieldValueRequired", format!("{c}.securityContext.seccompProfile.localhostProfile"),
            format!("{c}.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost")),
        (pod(json!([container(json!({}))]), json!({"securityContext": {"seccompProfile": {"type": "Default"}}})),
            "FieldValueNotSupported", "spec.template.spec.securityContext.seccompProfile.type".into(),
            "spec.template.spec.securityContext.seccompProfile.type: Unsupported value: \"Default\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"".into()),
        (pod(json!([container(json!({"livenessProbe": {"httpGet": {"path": "/", "port": 8080}, "tcpSocket": {"port": 8080}}}))]), json!({})),
            "FieldValueForbidden", format!("{c}.livenessProbe.tcpSocket"), format!("{c}.livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type")),
        (pod(json!([container(json!({"readinessProbe": {"periodSeconds": 5}}))]), json!({})),
            "FieldValueRequired", format!("{c}.readinessProbe"), format!("{c}.readinessProbe: Required value: must specify a handler type")),
        (pod(json!([container(json!({"livenessProbe": {"tcpSocket": {"port": 0}, "successThreshold": 2}}))]), json!({})),
            "FieldValueInvalid", format!("{c}.livenessProbe.successThreshold"), format!("{c}.livenessProbe.successThreshold: Invalid value: 2: must be 1")),
        (pod(json!([container(json!({"startupProbe": {"tcpSocket": {"port": 0}}}))]), json!({})),
            "FieldValueInvalid", format!("{c}.startupProbe.tcpSocket.port"), format!("{c}.startupProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive")),
        (pod(json!([container(json!({}))]), json!({"volumes": [{"name": "certs", "secret": {}}]})),
            "FieldValueRequired", "spec.template.spec.volumes[0].secret.secretName".into(), "spec.template.spec.volumes[0].secret.secretName: Required value".into()),
        (pod(json!([container(json!({}))]), json!({"volumes": [{"name": "v", "emptyDir": {}, "configMap": {"name": "c"}}]})),
            "FieldValueForbidden", "spec.template.spec.volumes[0].configMap".into(), "spec.template.spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type".into()),
        (pod(json!([container(json!({}))]), json!({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]})),
            "FieldValueDuplicate", "spec.template.spec.volumes[1].name".into(), "spec.template.spec.volumes[1].name: Duplicate value: \"v\"".into()),
        (pod(json!([container(json!({"volumeMounts": [{"name": "certs", "mountPath": "/certs"}]}))]), json!({})),
            "FieldValueNotFound", format!("{c}.volumeMounts[0].name"), format!("{c}.volumeMounts[0].name: Not found: \"certs\"")),
        (pod(json!([container(json!({"volumeMounts": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}]}))]), json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            "FieldValueInvalid", format!("{c}.volumeMounts[1].mountPath"), format!("{c}.volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique")),
        (pod(json!([container(json!({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}}))]), json!({})),
            "FieldValueInvalid", format!("{c}.resources.requests"), format!("{c}.resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1500m")),
        (pod(json!([container(json!({"resources": {"requests": {"example.com/gpu": "1"}}}))]), json!({})),
            "FieldValueRequired", format!("{c}.resources.limits"), format!("{c}.resources.limits: Required value: Limit must be set for non overcommitable resources")),
        (pod(json!([container(json!({"ports": [{"name": "webhook-server-port", "containerPort": 9443}, {"containerPort": 0}]}))]), json!({})),
            "FieldValueInvalid", format!("{c}.ports[0].name"), format!("{c}.ports[0].name: Invalid value: \"webhook-server-port\": must be no more than 15 characters")),
        (pod(json!([container(json!({"ports": [{"containerPort": 0}]}))]), json!({})),
            "FieldValueRequired", format!("{c}.ports[0].containerPort"), format!("{c}.ports[0].containerPort: Required value")),
        (pod(json!([container(json!({"env": [{"name": "A=B", "value": "x"}]}))]), json!({})),
            "FieldValueInvalid", format!("{c}.env[0].name"), format!("{c}.env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='")),
        (pod(json!([container(json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}))]), json!({})),
            "FieldValueRequired", format!("{c}.env[0].valueFrom.secretKeyRef.key"), format!("{c}.env[0].valueFrom.secretKeyRef.key: Required value")),
        (pod(json!([container(json!({}))]), json!({"serviceAccountName": "Eviction_Autoscaler"})),
            "FieldValueInvalid", "spec.template.spec.serviceAccountName".into(),
            "spec.template.spec.serviceAccountName: Invalid value: \"Eviction_Autoscaler\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()),
        (pod(json!([container(json!({"securityContext": {"allowPrivilegeEscalation": false, "privileged": true, "runAsUser": -1}}))]), json!({})),
            "FieldValueInvalid", format!("{c}.securityContext.runAsUser"), format!("{c}.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive")),
        (pod(json!([container(json!({})), container(json!({}))]), json!({})),
            "FieldValueDuplicate", "spec.template.spec.containers[1].name".into(), "spec.template.spec.containers[1].name: Duplicate value: \"app\"".into()),
        (pod(json!([container(json!({}))]), json!({"tolerations": [{"operator": "Equal", "value": "x"}]})),
            "FieldValueInvalid", "spec.template.spec.tolerations[0].operator".into(),
            "spec.template.spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into()),
    ];
    for (object, reason, field, message) in cases {
        let err = rejects(&cluster, &object, reason, &field, &message).await;
        assert!(err.message.starts_with("Deployment.apps \"web\" is invalid: "), "{}", err.message);
    }
    let bad_quantity =
        pod(json!([container(json!({"resources": {"limits": {"memory": "1 Gi"}}}))]), json!({}));
    let err = create(&cluster, &bad_quantity).await.expect_err("unparsable quantity");
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let mut strategy = deployment(json!({"containers": [container(json!({}))]}));
    strategy["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}});
    rejects(
        &cluster,
        &strategy,
        "FieldValueInvalid",
        "spec.strategy.rollingUpdate.maxUnavailable",
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
    )
    .await;
}

#[tokio::test]
async fn custom_resource_definitions_need_the_upstream_basics() {
    let cluster = Cluster::default();
    let two_storage = crd(
        "widgets.example.com",
        "example.com",
        json!([schema_version("v1", true), schema_version("v2", true)]),
    );
    let err = create(&cluster, &two_storage).await.expect_err("two storage versions");
    let all = causes(&err);
    assert!(
        all.iter().any(|(r, f, m)| r == "FieldValueInvalid"
            && f == "spec.versions"
            && m.ends_with(": must have exactly one version marked as storage version")),
        "{all:#?}"
    );
    assert!(
        err.message.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: "
        ),
        "{}",
        err.message
    );

    let wrong_name = crd("widget.example.com", "example.com", json!([schema_version("v1", true)]));
    rejects(
        &cluster,
        &wrong_name,
        "FieldValueInvalid",
        "metadata.name",
        "metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group",
    )
    .await;
    let no_dot = crd("widgets.example", "example", json!([schema_version("v1", true)]));
    rejects(
        &cluster,
        &no_dot,
        "FieldValueInvalid",
        "spec.group",
        "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
    )
    .await;
    let no_schema =
        crd("widgets.example.com", "example.com", json!([{"name": "v1", "served": true, "storage": true}]));
    rejects(
        &cluster,
        &no_schema,
        "FieldValueRequired",
        "spec.versions[0].schema.openAPIV3Schema",
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
    )
    .await;
    let mut scope = crd("widgets.example.com", "example.com", json!([schema_version("v1", true)]));
    scope["spec"]["scope"] = json!("Global");
    rejects(
        &cluster,
        &scope,
        "FieldValueNotSupported",
        "spec.scope",
        "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
    )
    .await;
}
