//! Custom resources validated by their CRD's OpenAPI v3 schema, as a real v1.35 apiserver
//! does it: after pruning, nulls dropped and defaults filled in, then 422s naming each field
//! in upstream's words; the status subresource checks `status` alone; updates ratchet what
//! they leave unchanged. Every expected answer below is what the real apiserver answered to
//! the same requests (CRDs `gadgets.crv-probe.example.com` and `widgets.diff.example.com`).
//! The printed table of a CRD with printer columns shows only those (and NAME).

mod common;

use common::Sim;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS: &str = "/apis/crv.example.com/v1/namespaces/default/gadgets";

async fn create_crd(sim: &Sim, crd: Value) {
    let created = sim.raw("POST", CRDS, Some(crd)).await;
    assert_eq!(created.code, 201, "{}", created.body);
}

/// A CRD of group `crv.example.com` with `spec`/`status` schemas, the status subresource and a
/// scale subresource on `.spec.replicas`.
async fn gadgets(sim: &Sim) {
    let spec = json!({"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "color": {"type": "string", "enum": ["red", "green"]},
        "replicas": {"type": "integer"},
        "def": {"type": "string", "default": "dflt"},
        "reqdef": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "default": "x"}}},
        "emb": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}});
    let status = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "phase": {"type": "string", "enum": ["A", "B"]},
        "conditions": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}}}});
    create_crd(
        sim,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.crv.example.com"},
            "spec": {"group": "crv.example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec, "status": status}}}}]}}),
    )
    .await;
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "crv.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

/// The `(field, message)` of each cause of a 422.
fn causes(body: &Value) -> Vec<(String, String)> {
    body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (c["field"].as_str().unwrap_or("").to_string(), c["message"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn owned(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(f, m)| (f.to_string(), m.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_widget_gets_the_real_apiservers_422_and_the_table_its_columns() {
    // The differential scenario `crd-lifecycle`.
    let sim = Sim::start().await;
    create_crd(
        &sim,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.diff.example.com"},
            "spec": {"group": "diff.example.com", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                "shortNames": ["wd"]}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}}),
    )
    .await;
    let widgets = "/apis/diff.example.com/v1/namespaces/default/widgets";
    let widget = |name: &str, size: i64| {
        json!({"apiVersion": "diff.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": size}})
    };
    assert_eq!(sim.raw("POST", widgets, Some(widget("w1", 3))).await.code, 201);
    let refused = sim.raw("POST", widgets, Some(widget("w2", -1))).await;
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Widget.diff.example.com \"w2\" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0",
            "reason": "Invalid",
            "details": {"name": "w2", "group": "diff.example.com", "kind": "Widget",
                "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: -1: spec.size in body should be greater than or equal to 0",
                    "field": "spec.size"}]},
            "code": 422})
    );
    // The declared columns only: no AGE.
    let run = sim.kubectl(&["get", "widgets"]).await.ok();
    assert_eq!(run.stdout, "NAME   SIZE\nw1     3\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nulls_are_dropped_and_defaults_filled_in_before_validation() {
    let sim = Sim::start().await;
    gadgets(&sim).await;
    // A required field given as null is missing; null elsewhere is dropped; defaults fill in
    // (a required one too), for bodies and server-side apply alike.
    let refused = sim.raw("POST", GADGETS, Some(gadget("g1", json!({"size": null})))).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "Gadget.crv.example.com \"g1\" is invalid: spec.size: Required value"
    );
    let created = sim
        .raw("POST", GADGETS, Some(gadget("g2", json!({"size": 1, "color": null, "reqdef": {"a": null}}))))
        .await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["spec"], json!({"def": "dflt", "reqdef": {"a": "x"}, "size": 1}));
    let applied = sim
        .raw_text(
            "PATCH",
            &format!("{GADGETS}/g3?fieldManager=t"),
            "application/apply-patch+yaml",
            r#"{"apiVersion":"crv.example.com/v1","kind":"Gadget","metadata":{"name":"g3"},"spec":{"size":1,"reqdef":{}}}"#,
        )
        .await;
    assert_eq!(applied.code, 201, "{}", applied.body);
    assert_eq!(applied.body["spec"], json!({"def": "dflt", "reqdef": {"a": "x"}, "size": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refused_field_is_named_with_upstream_wording() {
    let sim = Sim::start().await;
    gadgets(&sim).await;
    let spec = json!({"size": -1, "name": "a", "color": "purple", "ports": [{"name": "a"}, {"name": "a"}]});
    let refused = sim.raw("POST", GADGETS, Some(gadget("g1", spec))).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    // Upstream lists sibling properties in Go's random map order; kube-sim in key order.
    assert_eq!(
        causes(&refused.body),
        owned(&[
            ("spec.color", r#"Unsupported value: "purple": supported values: "red", "green""#),
            ("spec.name", r#"Invalid value: "a": spec.name in body should be at least 2 chars long"#),
            ("spec.size", "Invalid value: -1: spec.size in body should be greater than or equal to 0"),
            ("spec.ports[1]", r#"Duplicate value: {"name":"a"}"#),
        ])
    );
    assert_eq!(refused.body["details"]["causes"][0]["reason"], "FieldValueNotSupported");
    let refused =
        sim.raw("POST", GADGETS, Some(gadget("g2", json!({"size": "string", "name": "abcdef"})))).await;
    assert_eq!(
        refused.body["message"],
        "Gadget.crv.example.com \"g2\" is invalid: [spec.name: Too long: may not be more than 5 bytes, spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"]"
    );
    let reasons: Vec<&str> = refused.body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["FieldValueTooLong", "FieldValueTypeInvalid"]);
    // The scale subresource's replicas path is checked too (upstream names it with its dot).
    let refused = sim.raw("POST", GADGETS, Some(gadget("g3", json!({"size": 1, "replicas": -3})))).await;
    assert_eq!(
        causes(&refused.body),
        owned(&[(".spec.replicas", "Invalid value: -3: should be a non-negative integer")])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_resources_need_a_kind_and_an_api_version() {
    let sim = Sim::start().await;
    gadgets(&sim).await;
    let refused = sim.raw("POST", GADGETS, Some(gadget("g1", json!({"size": 1, "emb": {}})))).await;
    assert_eq!(refused.code, 422);
    assert_eq!(
        causes(&refused.body),
        owned(&[("spec.emb.apiVersion", "Required value"), ("spec.emb.kind", "Required value")])
    );
    // Upstream's decoder refuses a non-string `apiVersion`.
    let emb = json!({"apiVersion": 5, "kind": "Pod", "metadata": {"name": "x"}});
    let refused = sim.raw("POST", GADGETS, Some(gadget("g2", json!({"size": 1, "emb": emb})))).await;
    assert_eq!(refused.code, 400);
    assert_eq!(
        refused.body["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: spec.emb.apiVersion: Invalid value: 5: must be a string"
    );
    let emb = json!({"apiVersion": "a/b/c", "kind": "Bad_Kind", "metadata": {"name": "a/b"}});
    let refused = sim.raw("POST", GADGETS, Some(gadget("g3", json!({"size": 1, "emb": emb})))).await;
    assert_eq!(
        causes(&refused.body),
        owned(&[
            ("spec.emb.apiVersion", r#"Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#),
            (
                "spec.emb.kind",
                r#"Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#
            ),
            ("spec.emb.metadata.name", r#"Invalid value: "a/b": may not contain '/'"#),
        ])
    );
    let emb = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "Bad_NS", "generateName": "a/b", "annotations": {"-x": "y"}}});
    let refused = sim.raw("POST", GADGETS, Some(gadget("g4", json!({"size": 1, "emb": emb})))).await;
    assert_eq!(
        causes(&refused.body),
        owned(&[
            ("spec.emb.metadata.generateName", r#"Invalid value: "a/b": may not contain '/'"#),
            (
                "spec.emb.metadata.namespace",
                r#"Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
            ),
            (
                "spec.emb.metadata.annotations",
                r#"Invalid value: "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#
            ),
        ])
    );
    let emb = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "."}});
    let refused = sim.raw("POST", GADGETS, Some(gadget("g5", json!({"size": 1, "emb": emb})))).await;
    assert_eq!(
        causes(&refused.body),
        owned(&[("spec.emb.metadata.name", r#"Invalid value: ".": may not be '.'"#)])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_subresource_checks_status_alone() {
    let sim = Sim::start().await;
    gadgets(&sim).await;
    let created = sim.raw("POST", GADGETS, Some(gadget("s1", json!({"size": 1, "replicas": 2})))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut object = created.body;
    object["status"] = json!({"phase": "Z", "replicas": -1, "conditions": [{}]});
    // The spec of a status write is not looked at (it is the stored one).
    object["spec"]["size"] = json!(-5);
    let refused = sim.raw("PUT", &format!("{GADGETS}/s1/status"), Some(object.clone())).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        causes(&refused.body),
        owned(&[
            ("status.conditions[0].type", "Required value"),
            ("status.phase", r#"Unsupported value: "Z": supported values: "A", "B""#),
            (".status.replicas", "Invalid value: -1: should be a non-negative integer"),
        ])
    );
    object["status"] = json!({"replicas": "x"});
    let refused = sim.raw("PUT", &format!("{GADGETS}/s1/status"), Some(object.clone())).await;
    assert_eq!(
        causes(&refused.body),
        owned(&[
            (
                "status.replicas",
                r#"Invalid value: "string": replicas in body must be of type integer: "string""#
            ),
            (
                ".status.replicas",
                "Invalid value: 0: .status.replicas accessor error: x is of the type string, expected int64"
            ),
        ])
    );
    object["status"] = json!({"phase": "A", "replicas": 3});
    let written = sim.raw("PUT", &format!("{GADGETS}/s1/status"), Some(object.clone())).await;
    assert_eq!(written.code, 200, "{}", written.body);
    assert_eq!(written.body["spec"]["size"], 1);
    // A main write ignores the status it sends.
    let mut object = written.body;
    object["status"] = json!({"phase": "Z"});
    let written = sim.raw("PUT", &format!("{GADGETS}/s1"), Some(object)).await;
    assert_eq!(written.code, 200, "{}", written.body);
    assert_eq!(written.body["status"], json!({"phase": "A", "replicas": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tightened_crd_keeps_accepting_what_updates_leave_unchanged() {
    let sim = Sim::start().await;
    gadgets(&sim).await;
    let created = sim.raw("POST", GADGETS, Some(gadget("r1", json!({"size": 1, "name": "abcd"})))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let path = format!("{CRDS}/gadgets.crv.example.com");
    let mut crd = sim.raw("GET", &path, None).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["name"]["maxLength"] =
        json!(2);
    assert_eq!(sim.raw("PUT", &path, Some(crd)).await.code, 200);
    let mut object = sim.raw("GET", &format!("{GADGETS}/r1"), None).await.body;
    object["spec"]["size"] = json!(2);
    let written = sim.raw("PUT", &format!("{GADGETS}/r1"), Some(object.clone())).await;
    assert_eq!(written.code, 200, "{}", written.body);
    let mut object = written.body;
    object["spec"]["name"] = json!("abce");
    let refused = sim.raw("PUT", &format!("{GADGETS}/r1"), Some(object)).await;
    assert_eq!(refused.code, 422);
    assert_eq!(causes(&refused.body), owned(&[("spec.name", "Too long: may not be more than 2 bytes")]));
}
