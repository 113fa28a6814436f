//! Bodies are rebuilt field by field from the dumps in transcript `06-protobuf-bodies.txt`;
//! the message lengths asserted below are the ones the dump shows, so the rebuilt bytes are
//! the ones kubectl sent.

use serde_json::json;

use super::decode;

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A length-delimited field.
fn ld(number: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(number << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A varint field.
fn vi(number: u64, value: u64) -> Vec<u8> {
    let mut out = varint(number << 3);
    out.extend(varint(value));
    out
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = cat(&[ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())]);
    cat(&[b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, raw), ld(3, b""), ld(4, b"")])
}

/// ObjectMeta as gogo-protobuf writes it: every plain string and int, even when empty.
fn object_meta(name: &str, labels: &[(&str, &str)]) -> Vec<u8> {
    let mut parts = vec![ld(1, name.as_bytes())];
    parts.extend((2..=6).map(|n| ld(n, b"")));
    parts.push(vi(7, 0));
    parts.push(ld(8, b""));
    for (k, v) in labels {
        parts.push(ld(11, &cat(&[ld(1, k.as_bytes()), ld(2, v.as_bytes())])));
    }
    cat(&parts)
}

#[test]
fn empty_delete_options_matches_documented_bytes() {
    let body = envelope("v1", "DeleteOptions", b"");
    let mut documented = vec![0x6b, 0x38, 0x73, 0x00, 0x0a, 0x13, 0x0a, 0x02, b'v', b'1', 0x12, 0x0d];
    documented.extend_from_slice(b"DeleteOptions");
    documented.extend_from_slice(&[0x12, 0x00, 0x1a, 0x00, 0x22, 0x00]);
    assert_eq!(body, documented);
    assert_eq!(decode(&body), Ok(json!({"apiVersion": "v1", "kind": "DeleteOptions"})));
}

#[test]
fn delete_options_from_drain_with_grace_period() {
    let raw = vi(1, 7);
    assert_eq!(raw, [0x08, 0x07]);
    assert_eq!(
        decode(&envelope("v1", "DeleteOptions", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 7}))
    );
}

#[test]
fn delete_options_all_fields() {
    let raw = cat(&[
        vi(1, 0),
        ld(2, &cat(&[ld(1, b"uid-1"), ld(2, b"42")])),
        vi(3, 1),
        ld(4, b"Foreground"),
        ld(5, b"All"),
    ]);
    assert_eq!(
        decode(&envelope("meta.k8s.io/v1", "DeleteOptions", &raw)),
        Ok(json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
            "gracePeriodSeconds": 0, "preconditions": {"uid": "uid-1", "resourceVersion": "42"},
            "orphanDependents": true, "propagationPolicy": "Foreground", "dryRun": ["All"]}))
    );
}

#[test]
fn create_namespace_transcript() {
    let meta = object_meta("team-b", &[]);
    assert_eq!(meta.len(), 22);
    let raw = cat(&[ld(1, &meta), ld(2, b""), ld(3, &ld(1, b""))]);
    assert_eq!(raw.len(), 30);
    assert_eq!(
        decode(&envelope("v1", "Namespace", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"},
            "spec": {}, "status": {}}))
    );
}

#[test]
fn create_configmap_transcript_and_binary_data() {
    let meta = object_meta("c2", &[]);
    assert_eq!(meta.len(), 18);
    let entry = cat(&[ld(1, b"k"), ld(2, b"v")]);
    assert_eq!(entry.len(), 6);
    let raw = cat(&[ld(1, &meta), ld(2, &entry)]);
    assert_eq!(raw.len(), 28);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2"},
            "data": {"k": "v"}}))
    );

    let raw = cat(&[
        ld(1, &object_meta("c3", &[])),
        ld(2, &cat(&[ld(1, b"empty"), ld(2, b"")])),
        ld(2, &cat(&[ld(1, b"b"), ld(2, b"x")])),
        ld(3, &cat(&[ld(1, b"bin"), ld(2, &[0, 1, 2])])),
        vi(4, 0),
    ]);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c3"},
            "data": {"empty": "", "b": "x"}, "binaryData": {"bin": "AAEC"}, "immutable": false}))
    );
}

#[test]
fn create_deployment_transcript() {
    let labels = [("app", "d2")];
    let meta = object_meta("d2", &labels);
    assert_eq!(meta.len(), 29);
    let container = cat(&[
        ld(1, b"nginx"),
        ld(2, b"nginx"),
        ld(5, b""),
        ld(8, b""),
        ld(13, b""),
        ld(14, b""),
        vi(16, 0),
        vi(17, 0),
        vi(18, 0),
        ld(20, b""),
    ]);
    assert_eq!(container.len(), 34);
    let mut pod_spec = vec![ld(2, &container)];
    pod_spec.extend([3, 6, 8, 9, 10].map(|n| ld(n, b"")));
    pod_spec.extend([11, 12, 13].map(|n| vi(n, 0)));
    pod_spec.extend([16, 17, 19, 24].map(|n| ld(n, b"")));
    let pod_spec = cat(&pod_spec);
    assert_eq!(pod_spec.len(), 64);
    let template_meta = object_meta("", &labels);
    assert_eq!(template_meta.len(), 27);
    let template = cat(&[ld(1, &template_meta), ld(2, &pod_spec)]);
    assert_eq!(template.len(), 95);
    let selector = ld(1, &cat(&[ld(1, b"app"), ld(2, b"d2")]));
    assert_eq!(selector.len(), 11);
    let spec = cat(&[vi(1, 2), ld(2, &selector), ld(3, &template), ld(4, &ld(1, b"")), vi(5, 0), vi(7, 0)]);
    assert_eq!(spec.len(), 120);
    let status = cat(&[1, 2, 3, 4, 5, 7].map(|n| vi(n, 0)));
    assert_eq!(status.len(), 12);
    let raw = cat(&[ld(1, &meta), ld(2, &spec), ld(3, &status)]);
    assert_eq!(raw.len(), 167);
    assert_eq!(
        decode(&envelope("apps/v1", "Deployment", &raw)),
        Ok(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d2", "labels": {"app": "d2"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d2"}},
                "template": {"metadata": {"labels": {"app": "d2"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                "strategy": {}},
            "status": {}}))
    );
}

#[test]
fn deployment_zero_replicas_ports_and_rolling_update() {
    let port = cat(&[vi(3, 80), ld(4, b"TCP")]);
    let container = cat(&[ld(1, b"web"), ld(2, b"x"), ld(6, &port)]);
    let int_or_string = |s: &str| cat(&[vi(1, 1), vi(2, 0), ld(3, s.as_bytes())]);
    let rolling = cat(&[ld(1, &int_or_string("25%")), ld(2, &cat(&[vi(1, 0), vi(2, 1), ld(3, b"")]))]);
    let spec = cat(&[
        vi(1, 0),
        ld(3, &ld(2, &ld(2, &container))),
        ld(4, &cat(&[ld(1, b"RollingUpdate"), ld(2, &rolling)])),
    ]);
    let raw = cat(&[ld(1, &object_meta("web", &[])), ld(2, &spec)]);
    assert_eq!(
        decode(&envelope("apps/v1", "Deployment", &raw)),
        Ok(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 0,
                "template": {"spec": {"containers": [{"name": "web", "image": "x",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}},
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}}}}))
    );
}

#[test]
fn create_pdb_service_and_secret() {
    // kubectl create pdb web-pdb --selector=app=web --min-available=1
    let pdb_spec = cat(&[
        ld(1, &cat(&[vi(1, 0), vi(2, 1), ld(3, b"")])),
        ld(2, &ld(1, &cat(&[ld(1, b"app"), ld(2, b"web")]))),
    ]);
    let raw = cat(&[ld(1, &object_meta("web-pdb", &[])), ld(2, &pdb_spec)]);
    assert_eq!(
        decode(&envelope("policy/v1", "PodDisruptionBudget", &raw)),
        Ok(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web-pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
    );

    // kubectl create service clusterip my-cs --tcp=5678:8080
    let port = cat(&[
        ld(1, b"5678-8080"),
        ld(2, b"TCP"),
        vi(3, 5678),
        ld(4, &cat(&[vi(1, 0), vi(2, 8080), ld(3, b"")])),
        vi(5, 0),
    ]);
    let service_spec =
        cat(&[ld(1, &port), ld(2, &cat(&[ld(1, b"app"), ld(2, b"my-cs")])), ld(3, b""), ld(4, b"ClusterIP")]);
    let raw =
        cat(&[ld(1, &object_meta("my-cs", &[("app", "my-cs")])), ld(2, &service_spec), ld(3, &ld(1, b""))]);
    assert_eq!(
        decode(&envelope("v1", "Service", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "my-cs", "labels": {"app": "my-cs"}},
            "spec": {"ports": [{"name": "5678-8080", "protocol": "TCP", "port": 5678,
                "targetPort": 8080}], "selector": {"app": "my-cs"}, "type": "ClusterIP"},
            "status": {}}))
    );

    let raw = cat(&[
        ld(1, &object_meta("s", &[])),
        ld(2, &cat(&[ld(1, b"password"), ld(2, b"hunter2")])),
        ld(3, b"Opaque"),
    ]);
    assert_eq!(
        decode(&envelope("v1", "Secret", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"}))
    );
}

#[test]
fn object_meta_fields_and_unknown_fields() {
    let owner = cat(&[ld(1, b"ReplicaSet"), ld(3, b"web-1"), ld(4, b"u1"), ld(5, b"apps/v1"), vi(6, 1)]);
    let meta = cat(&[
        ld(2, b"web-"),
        ld(3, b"team-a"),
        ld(8, &cat(&[vi(1, 1_700_000_000), vi(2, 0)])),
        ld(12, &cat(&[ld(1, b"note"), ld(2, b"hi")])),
        ld(13, &owner),
        ld(14, b"example.com/f"),
        ld(99, b"ignored"),
        vi(98, 5),
    ]);
    let raw = cat(&[ld(1, &meta), vi(50, 1)]);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "generateName": "web-", "namespace": "team-a",
            "creationTimestamp": "2023-11-14T22:13:20Z", "annotations": {"note": "hi"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "uid": "u1",
                "apiVersion": "apps/v1", "controller": true}],
            "finalizers": ["example.com/f"]}}))
    );
}

#[test]
fn malformed_bodies_are_errors() {
    let good = envelope("v1", "ConfigMap", &ld(1, &object_meta("c", &[])));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{\"kind\":\"ConfigMap\"}".to_vec(), "magic bytes"),
        (b"k8s\0".to_vec(), "no kind"),
        (good[..good.len() - 9].to_vec(), "runs past the end"),
        (cat(&[b"k8s\0".to_vec(), vec![0x0a, 0xff]]), "truncated varint"),
        (cat(&[b"k8s\0".to_vec(), vec![0x0b]]), "unsupported wire type 3"),
        (envelope("v1", "Widget", b""), "kind Widget are not supported"),
        (envelope("v1", "ConfigMap", &vi(1, 3)), "ConfigMap.metadata: expected length-delimited, got varint"),
        (envelope("v1", "DeleteOptions", &ld(1, b"7")), "DeleteOptions.gracePeriodSeconds: expected varint"),
        (envelope("v1", "Namespace", &ld(1, &ld(1, &[0xff, 0xfe]))), "not valid UTF-8"),
        (envelope("v1", "Namespace", &ld(1, &[0x0a, 0x05, b'a'])), "runs past the end"),
    ];
    for (body, want) in cases {
        match decode(&body) {
            Ok(v) => panic!("{body:02x?} decoded as {v}"),
            Err(e) => assert!(e.contains(want), "got {e:?}, want {want:?}"),
        }
    }
    let mut with_encoding = envelope("v1", "ConfigMap", b"");
    with_encoding.truncate(with_encoding.len() - 4);
    with_encoding.extend(ld(3, b"gzip"));
    let err = decode(&with_encoding).err().unwrap_or_default();
    assert!(err.contains("content encoding \"gzip\""), "{err}");
}

#[test]
fn truncated_prefixes_never_panic() {
    let raw = cat(&[ld(1, &object_meta("d", &[("a", "b")])), ld(2, &vi(1, 3))]);
    let body = envelope("apps/v1", "Deployment", &raw);
    for end in 0..body.len() {
        let _ = decode(&body[..end]);
    }
    assert!(decode(&body).is_ok());
}

#[test]
fn container_resources_job_and_cron_job() {
    let quantity = |s: &str| ld(1, s.as_bytes());
    let resources = cat(&[
        ld(1, &cat(&[ld(1, b"cpu"), ld(2, &quantity("500m"))])),
        ld(2, &cat(&[ld(1, b"memory"), ld(2, &quantity("64Mi"))])),
    ]);
    let container = cat(&[
        ld(1, b"job"),
        ld(2, b"busybox"),
        ld(3, b"sh"),
        ld(3, b"-c"),
        ld(7, &cat(&[ld(1, b"MODE"), ld(2, b"fast")])),
        ld(8, &resources),
    ]);
    let pod_spec = cat(&[ld(2, &container), ld(3, b"Never"), vi(4, 30)]);
    let job_spec = cat(&[vi(7, 6), ld(6, &ld(2, &pod_spec))]);
    let raw = cat(&[ld(1, &object_meta("once", &[])), ld(2, &job_spec)]);
    let want_spec = json!({"backoffLimit": 6, "template": {"spec": {
        "containers": [{"name": "job", "image": "busybox", "command": ["sh", "-c"],
            "env": [{"name": "MODE", "value": "fast"}],
            "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}}}],
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 30}}});
    assert_eq!(
        decode(&envelope("batch/v1", "Job", &raw)),
        Ok(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": want_spec}))
    );

    let cron_spec = cat(&[ld(1, b"*/5 * * * *"), vi(4, 0), ld(5, &ld(2, &job_spec))]);
    let raw = cat(&[ld(1, &object_meta("tick", &[])), ld(2, &cron_spec)]);
    assert_eq!(
        decode(&envelope("batch/v1", "CronJob", &raw)),
        Ok(json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": "*/5 * * * *", "suspend": false, "jobTemplate": {"spec": want_spec}}}))
    );
}

#[test]
fn secret_string_data_and_immutable() {
    let raw = cat(&[
        ld(1, &object_meta("s", &[])),
        ld(4, &cat(&[ld(1, b"user"), ld(2, b"admin")])),
        ld(3, b"kubernetes.io/basic-auth"),
        vi(5, 1),
    ]);
    assert_eq!(
        decode(&envelope("v1", "Secret", &raw)),
        Ok(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"user": "admin"}, "type": "kubernetes.io/basic-auth", "immutable": true}))
    );
}
