//! `fieldValidation` over HTTP: unknown and duplicate fields on create, update, the patches and
//! server-side apply, for built-in kinds and custom resources, and kubectl's strict apply. The
//! expected messages are the real v1.35 apiserver's (see `src/schema/tests.rs`).

mod common;

use std::process::Stdio;

use common::{Kubectl, Sim};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

/// One answer: code, `Warning` header values and the JSON body.
#[derive(Debug)]
struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

/// Sends `body` as is (duplicate keys survive) with `content_type`.
async fn send(sim: &Sim, method: &str, path: &str, content_type: &str, body: &str) -> Answer {
    use http_body_util::BodyExt as _;
    let client = sim.client().await;
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("request");
    let response = client.send(request).await.expect("the server answers");
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    Answer { code, warnings, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn warning(text: &str) -> String {
    format!("299 - \"{}\"", text.replace('"', "\\\""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_strict_warn_and_ignore() {
    let sim = Sim::start().await;
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","bogus2":1},"zz":1,"data":{"a":"1","a":"2"}}"#;
    let strict = send(&sim, "POST", &format!("{CMS}?fieldValidation=Strict"), "application/json", body).await;
    assert_eq!(strict.code, 400, "{strict:?}");
    assert_eq!(strict.body["reason"], "BadRequest");
    assert_eq!(
        strict.body["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.bogus2", unknown field "zz", duplicate field "data.a""#
    );
    assert!(!sim.exists("v1", "configmaps", Some("default"), "c1"));

    // Warn is the default.
    let warn = send(&sim, "POST", CMS, "application/json", body).await;
    assert_eq!(warn.code, 201, "{warn:?}");
    assert_eq!(
        warn.warnings,
        [
            warning(r#"unknown field "metadata.bogus2""#),
            warning(r#"unknown field "zz""#),
            warning(r#"duplicate field "data.a""#)
        ]
    );
    let stored = sim.get("v1", "configmaps", Some("default"), "c1");
    assert_eq!((stored.get("zz"), stored["metadata"].get("bogus2")), (None, None));
    assert_eq!(stored["data"], json!({"a": "2"}));

    let ignore = send(
        &sim,
        "POST",
        &format!("{CMS}?fieldValidation=Ignore"),
        "application/json",
        &body.replace("c1", "c2"),
    )
    .await;
    assert_eq!((ignore.code, ignore.warnings.len()), (201, 0), "{ignore:?}");
    assert_eq!(sim.get("v1", "configmaps", Some("default"), "c2").get("zz"), None);

    // A YAML body is decoded first, then pruned in key order.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c3\nzz: 1\naa: 2\n";
    let strict = send(&sim, "POST", &format!("{CMS}?fieldValidation=Strict"), "application/yaml", yaml).await;
    assert_eq!(
        (strict.code, strict.body["message"].as_str()),
        (
            400,
            Some(
                r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "aa", unknown field "zz""#
            )
        )
    );

    let bad = send(&sim, "POST", &format!("{CMS}?fieldValidation=strict"), "application/json", body).await;
    assert_eq!(bad.code, 422);
    assert_eq!(
        bad.body["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn""#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_strict_warn_and_ignore() {
    let sim = Sim::start().await;
    let created = send(
        &sim,
        "POST",
        CMS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}"#,
    )
    .await;
    assert_eq!(created.code, 201);
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"zz":1,"data":{"a":"1"}}"#;
    let strict =
        send(&sim, "PUT", &format!("{CMS}/c1?fieldValidation=Strict"), "application/json", body).await;
    assert_eq!(strict.code, 400);
    assert_eq!(
        strict.body["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "zz""#
    );
    let warn = send(&sim, "PUT", &format!("{CMS}/c1"), "application/json", body).await;
    assert_eq!((warn.code, warn.warnings.clone()), (200, vec![warning(r#"unknown field "zz""#)]), "{warn:?}");
    assert_eq!((warn.body.get("zz"), &warn.body["data"]), (None, &json!({"a": "1"})));
    let ignore = send(
        &sim,
        "PUT",
        &format!("{CMS}/c1?fieldValidation=Ignore"),
        "application/json",
        &body.replace("\"1\"", "\"2\""),
    )
    .await;
    assert_eq!((ignore.code, ignore.warnings.len()), (200, 0));
    assert_eq!(sim.get("v1", "configmaps", Some("default"), "c1")["data"], json!({"a": "2"}));

    // The scale subresource's body is a Scale.
    let deploy = common::deployment_yaml("web", 1);
    sim.seed(&deploy).await;
    let scale = r#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2,"bogus":1}}"#;
    let strict = send(
        &sim,
        "PUT",
        "/apis/apps/v1/namespaces/default/deployments/web/scale?fieldValidation=Strict",
        "application/json",
        scale,
    )
    .await;
    assert_eq!(
        (strict.code, strict.body["message"].as_str()),
        (
            400,
            Some(
                r#"Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.bogus""#
            )
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_strict_warn_and_ignore() {
    let sim = Sim::start().await;
    let created = send(
        &sim,
        "POST",
        CMS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"1"}}"#,
    )
    .await;
    assert_eq!(created.code, 201);
    let merge = r#"{"zz":1,"data":{"a":"1","a":"3"},"metadata":{"bogus":"x"},"aa":{"b":[1]}}"#;
    let strict = send(
        &sim,
        "PATCH",
        &format!("{CMS}/c1?fieldValidation=Strict"),
        "application/merge-patch+json",
        merge,
    )
    .await;
    assert_eq!((strict.code, strict.body["reason"].as_str()), (422, Some("Invalid")), "{strict:?}");
    let message = strict.body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            r#" "" is invalid: patch: Invalid value: "{\"aa\":{\"b\":[1]},\"apiVersion\":\"v1\""#
        ),
        "{message}"
    );
    assert!(
        message.ends_with(r#"": strict decoding error: duplicate field "data.a", unknown field "aa", unknown field "metadata.bogus", unknown field "zz""#),
        "{message}"
    );
    assert_eq!(strict.body["details"]["causes"][0]["field"], "patch");
    assert_eq!(
        sim.get("v1", "configmaps", Some("default"), "c1")["data"],
        json!({"a": "1"}),
        "nothing written"
    );

    let warn = send(&sim, "PATCH", &format!("{CMS}/c1"), "application/merge-patch+json", merge).await;
    assert_eq!(warn.code, 200);
    assert_eq!(
        warn.warnings,
        [
            warning(r#"duplicate field "data.a""#),
            warning(r#"unknown field "aa""#),
            warning(r#"unknown field "metadata.bogus""#),
            warning(r#"unknown field "zz""#)
        ]
    );
    let stored = sim.get("v1", "configmaps", Some("default"), "c1");
    assert_eq!((stored.get("zz"), stored.get("aa"), &stored["data"]), (None, None, &json!({"a": "3"})));

    let ignore = send(
        &sim,
        "PATCH",
        &format!("{CMS}/c1?fieldValidation=Ignore"),
        "application/merge-patch+json",
        r#"{"zz":2,"data":{"b":"4"}}"#,
    )
    .await;
    assert_eq!((ignore.code, ignore.warnings.len()), (200, 0));
    assert_eq!(sim.get("v1", "configmaps", Some("default"), "c1")["data"], json!({"a": "3", "b": "4"}));

    // Strategic merge: the 422 shows the patch as Go prints it.
    let strategic = r#"{"zz":1.5,"metadata":{"labels":{"q":"r"}}}"#;
    let strict = send(
        &sim,
        "PATCH",
        &format!("{CMS}/c1?fieldValidation=Strict"),
        "application/strategic-merge-patch+json",
        strategic,
    )
    .await;
    assert_eq!(
        (strict.code, strict.body["message"].as_str()),
        (
            422,
            Some(
                r#" "" is invalid: patch: Invalid value: "map[metadata:map[labels:map[q:r]] zz:1.5]": strict decoding error: unknown field "zz""#
            )
        )
    );
    // JSON patch: the operations are checked too.
    let ops = r#"[{"op":"add","path":"/zz","value":1,"bogus":2}]"#;
    let warn = send(&sim, "PATCH", &format!("{CMS}/c1"), "application/json-patch+json", ops).await;
    assert_eq!(warn.code, 200);
    assert_eq!(
        warn.warnings,
        [warning(r#"json patch unknown field "[0].bogus""#), warning(r#"unknown field "zz""#)]
    );

    // Server-side apply refuses undeclared fields whatever fieldValidation says.
    let apply = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c9"},"zz":1,"data":{"a":"1"}}"#;
    for query in ["", "&fieldValidation=Ignore"] {
        let answer = send(
            &sim,
            "PATCH",
            &format!("{CMS}/c9?fieldManager=m{query}"),
            "application/apply-patch+yaml",
            apply,
        )
        .await;
        assert_eq!(answer.code, 500);
        assert_eq!(
            answer.body["message"],
            "failed to create typed patch object (/c9; /v1, Kind=ConfigMap): .zz: field not declared in schema"
        );
    }
    assert!(!sim.exists("v1", "configmaps", Some("default"), "c9"));
}

const CRDS: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
  "metadata":{"name":"widgets.schemaprobe.example.com"},
  "spec":{"group":"schemaprobe.example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
    "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
      "spec":{"type":"object","properties":{"size":{"type":"integer"},
        "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_with_and_without_preserve_unknown_fields() {
    let sim = Sim::start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(send(&sim, "POST", crds, "application/json", CRDS).await.code, 201);
    let blob = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.schemaprobe.example.com"},
        "spec": {"group": "schemaprobe.example.com", "scope": "Namespaced", "names": {"plural": "blobs", "kind": "Blob"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(send(&sim, "POST", crds, "application/json", &blob.to_string()).await.code, 201);

    let widgets = "/apis/schemaprobe.example.com/v1/namespaces/default/widgets";
    let body = r#"{"apiVersion":"schemaprobe.example.com/v1","kind":"Widget","metadata":{"name":"w1","zmeta":1},"zz":1,"spec":{"size":1,"bogus":2,"free":{"any":{"thing":1}}}}"#;
    let strict =
        send(&sim, "POST", &format!("{widgets}?fieldValidation=Strict"), "application/json", body).await;
    assert_eq!(
        (strict.code, strict.body["message"].as_str()),
        (
            400,
            Some(
                r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "metadata.zmeta", unknown field "spec.bogus", unknown field "zz""#
            )
        )
    );
    let warn = send(&sim, "POST", widgets, "application/json", body).await;
    assert_eq!(warn.code, 201, "{warn:?}");
    assert_eq!(
        warn.warnings,
        [
            warning(r#"unknown field "metadata.zmeta""#),
            warning(r#"unknown field "spec.bogus""#),
            warning(r#"unknown field "zz""#)
        ]
    );
    let stored = sim.get("schemaprobe.example.com/v1", "widgets", Some("default"), "w1");
    assert_eq!(stored["spec"], json!({"size": 1, "free": {"any": {"thing": 1}}}));
    assert_eq!((stored.get("zz"), stored["metadata"].get("zmeta")), (None, None));

    let merge = send(
        &sim,
        "PATCH",
        &format!("{widgets}/w1?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec":{"zz":1,"size":2}}"#,
    )
    .await;
    assert_eq!(merge.code, 422);
    assert!(
        merge.body["message"]
            .as_str()
            .unwrap_or_default()
            .ends_with(r#": strict decoding error: unknown field "spec.zz""#)
    );

    // Preserved at the root: only metadata is checked.
    let blobs = "/apis/schemaprobe.example.com/v1/namespaces/default/blobs";
    let body = r#"{"apiVersion":"schemaprobe.example.com/v1","kind":"Blob","metadata":{"name":"b1","zmeta":1},"zz":1,"spec":{"a":{"a":1,"a":2}}}"#;
    let warn = send(&sim, "POST", blobs, "application/json", body).await;
    assert_eq!(warn.code, 201, "{warn:?}");
    assert_eq!(
        warn.warnings,
        [warning(r#"duplicate field "spec.a.a""#), warning(r#"unknown field "metadata.zmeta""#)]
    );
    let stored = sim.get("schemaprobe.example.com/v1", "blobs", Some("default"), "b1");
    assert_eq!((&stored["zz"], &stored["spec"]), (&json!(1), &json!({"a": {"a": 2}})));

    let apply = r#"{"apiVersion":"schemaprobe.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"zz":1,"size":2}}"#;
    let answer =
        send(&sim, "PATCH", &format!("{widgets}/w2?fieldManager=m"), "application/apply-patch+yaml", apply)
            .await;
    assert_eq!(
        (answer.code, answer.body["message"].as_str()),
        (
            500,
            Some(
                "failed to create typed patch object (/w2; schemaprobe.example.com/v1, Kind=Widget): .spec.zz: field not declared in schema"
            )
        )
    );
}

/// Runs kubectl with `stdin` as its standard input.
async fn kubectl_stdin(sim: &Sim, args: &[&str], stdin: &str) -> (i32, String, String) {
    let kubectl = Kubectl::new(sim.kubeconfig(), &sim.dir.path().join("home"));
    let mut child = tokio::process::Command::from(kubectl.command())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).await.expect("write stdin");
    drop(input);
    let out = child.wait_with_output().await.expect("kubectl ends");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_is_strict_about_unknown_fields() {
    let sim = Sim::start().await;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k1\nbogus: 1\ndata:\n  a: \"1\"\n";
    let (code, _, stderr) = kubectl_stdin(&sim, &["apply", "-f", "-"], manifest).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr.trim(),
        r#"Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus""#
    );
    assert!(!sim.exists("v1", "configmaps", Some("default"), "k1"));

    // --validate=warn: created without the field, kubectl prints the warning.
    let (code, stdout, stderr) =
        kubectl_stdin(&sim, &["apply", "--validate=warn", "-f", "-"], manifest).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!((stdout.trim(), stderr.trim()), ("configmap/k1 created", r#"Warning: unknown field "bogus""#));
    assert_eq!(sim.get("v1", "configmaps", Some("default"), "k1").get("bogus"), None);

    // Applying it again patches: the strategic patch carries the field, and is refused.
    let (code, _, stderr) = kubectl_stdin(&sim, &["apply", "-f", "-"], manifest).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr.trim(),
        r#"The request is invalid: patch: Invalid value: "map[bogus:1]": strict decoding error: unknown field "bogus""#
    );
}
