//! Table tests. Every expected message and warning was taken from a real v1.35.4 apiserver
//! (the same bodies sent with curl and kubectl; where upstream's answer varies between calls,
//! as for server-side apply, the comment says which of its answers kube-sim gives).

use serde_json::{Value, json};

use super::*;
use crate::error::ApiError;
use crate::patch::PatchType;
use crate::resources::{Catalogue, ResourceInfo, crd_resources};

fn builtin(api_version: &str, kind: &str) -> ResourceInfo {
    let catalogue = Catalogue::default();
    let info = catalogue.find_kind(api_version, kind).expect("served kind");
    (*info).clone()
}

/// The CRDs of the probes: `Widget` (a structural schema with preserve-unknown and embedded
/// parts) and `Blob` (`x-kubernetes-preserve-unknown-fields` at the root).
fn custom(kind: &str) -> ResourceInfo {
    let widget = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "nested": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}});
    let schema = match kind {
        "Widget" => widget,
        _ => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    let plural = format!("{}s", kind.to_lowercase());
    // Served once its names are accepted, as the naming controller does.
    let crd = json!({"spec": {"group": "schemaprobe.example.com", "scope": "Namespaced",
        "names": {"plural": plural, "kind": kind},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]},
        "status": {"acceptedNames": {"plural": plural, "kind": kind},
            "conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]}});
    crd_resources(&crd).remove(0)
}

fn messages(errors: &[StrictError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

fn strict_decode(info: &ResourceInfo, body: &str) -> (Value, String) {
    let (object, errors) = decode_json(Schema::of(info), body.as_bytes()).expect("JSON");
    let message = report_decode(&info.kind, &info.version, &errors, FieldValidation::Strict)
        .map_or_else(|e| e.message, |()| String::new());
    (object, message)
}

#[test]
fn the_tree_parses_and_covers_every_builtin_kind() {
    let parsed = tree::Tree::parse(tree::TYPES_JSON).expect("types.json parses");
    for info in Catalogue::default().all() {
        assert!(
            parsed.kind(&info.api_version(), &info.kind).is_some(),
            "{}/{}",
            info.api_version(),
            info.kind
        );
        // The access reviews are only created: they have no lists.
        assert!(
            info.create_only || parsed.kind(&info.api_version(), &info.list_kind()).is_some(),
            "{}",
            info.list_kind()
        );
    }
    for (api_version, kind) in [("autoscaling/v1", "Scale"), ("policy/v1", "Eviction")] {
        assert!(parsed.kind(api_version, kind).is_some(), "{kind}");
    }
    assert!(parsed.named(tree::OBJECT_META).is_some() && parsed.named(tree::JSON_PATCH_OP).is_some());
    assert!(parsed.kinds().count() > 40);
    let doc: Value = serde_json::from_str(tree::TYPES_JSON).expect("JSON");
    assert_eq!(doc["source"]["k8s.io/api"], "v0.35.4", "regenerate with schema/generate.sh");
}

#[test]
fn create_bodies_are_decoded_in_document_order() {
    let cm = builtin("v1", "ConfigMap");
    let (object, message) = strict_decode(
        &cm,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","bogus2":1},"zz":1,"data":{"a":"1","a":"2"},"bogus":{"x":{"y":1}},"data":{"b":"1"}}"#,
    );
    assert_eq!(
        message,
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.bogus2", unknown field "zz", duplicate field "data.a", unknown field "bogus", duplicate field "data""#
    );
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"a": "2", "b": "1"}})
    );

    let pod = builtin("v1", "Pod");
    let (_, message) = strict_decode(
        &pod,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}},"ports":[{"containerPort":1,"zz":1}]}],"Containers":[],"x":{"a":1,"a":2}},"status":{"q":1}}"#,
    );
    // Names are case-sensitive; nothing under an unknown field is looked at.
    assert_eq!(
        message,
        r#"Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].ports[0].zz", unknown field "spec.Containers", unknown field "spec.x", unknown field "status.q""#
    );

    let crd = builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let (_, message) = strict_decode(
        &crd,
        r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"xs.schemaprobe.example.com"},"spec":{"group":"schemaprobe.example.com","scope":"Namespaced","names":{"plural":"xs","kind":"X"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","bogus":1,"properties":{"a":{"type":"object","zz":1,"items":{"type":"string","qq":1}}}}}}]}}"#,
    );
    // `items` has its own UnmarshalJSON: nothing inside it is checked.
    assert_eq!(
        message,
        r#"CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: strict decoding error: unknown field "spec.versions[0].schema.openAPIV3Schema.bogus", unknown field "spec.versions[0].schema.openAPIV3Schema.properties.a.zz""#
    );
}

#[tokio::test]
async fn repeated_keys_merge_structs_and_maps_and_warn() {
    let cm = builtin("v1", "ConfigMap");
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1","labels":{"x":"1"}},"data":{"a":"1","a":"2"},"data":{"b":"1"},"metadata":{"labels":{"y":"2"},"annotations":{"q":"r"}}}"#;
    let ((object, answer), warnings) = crate::warnings::collect(async {
        let (object, errors) = decode_json(Schema::of(&cm), body.as_bytes()).expect("JSON");
        (object, report_decode("ConfigMap", "v1", &errors, FieldValidation::Warn))
    })
    .await;
    assert!(answer.is_ok());
    assert_eq!(
        warnings,
        [
            r#"299 - "duplicate field \"data.a\"""#,
            r#"299 - "duplicate field \"data\"""#,
            r#"299 - "duplicate field \"metadata\"""#
        ]
    );
    assert_eq!(
        object["metadata"],
        json!({"name": "m1", "labels": {"x": "1", "y": "2"}, "annotations": {"q": "r"}})
    );
    assert_eq!(object["data"], json!({"a": "2", "b": "1"}));
}

#[test]
fn yaml_and_in_process_objects_are_pruned_in_key_order() {
    let cm = builtin("v1", "ConfigMap");
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "zz": 1, "metadata": {"name": "c", "bogus": 1}, "aa": 2});
    let errors = prune(Schema::of(&cm), &mut object);
    assert_eq!(
        messages(&errors),
        r#"unknown field "aa", unknown field "metadata.bogus", unknown field "zz""#
    );
    assert_eq!(object, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));
    assert!(check_object("ConfigMap", "v1", Schema::of(&cm), &mut object, FieldValidation::Strict).is_ok());
}

#[tokio::test]
async fn yaml_bodies_report_the_yaml_decoders_duplicate_then_unknown_fields() {
    let cm = builtin("v1", "ConfigMap");
    let text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\nzz: 1\naa: 2\ndata:\n  a: \"1\"\n  a: \"2\"";
    let (object, errors) = decode_yaml(Schema::of(&cm), text).expect("YAML");
    let strict = report_decode("ConfigMap", "v1", &errors, FieldValidation::Strict).expect_err("strict");
    assert_eq!(
        strict.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal errors:\n  line 9: key \"a\" already set in map, unknown field \"aa\", unknown field \"zz\""
    );
    assert_eq!(object["data"], json!({"a": "2"}));
    // Upstream names every repeated key (one warning per line); kube-sim's parser the first.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\nzz: 1\ndata:\n  a: \"1\"\n  b: \"1\"\n  a: \"2\"\n";
    let (object, errors) = decode_yaml(Schema::of(&cm), text).expect("YAML");
    let (answer, warnings) =
        crate::warnings::collect(async { report_decode("ConfigMap", "v1", &errors, FieldValidation::Warn) })
            .await;
    assert!(answer.is_ok());
    assert_eq!(
        warnings,
        ["299 - \"line 9: key \\\"a\\\" already set in map\"", "299 - \"unknown field \\\"zz\\\"\""]
    );
    assert_eq!(object["data"], json!({"a": "2", "b": "1"}));
}

#[test]
fn custom_resources_are_pruned_by_their_structural_schema() {
    let widget = custom("Widget");
    let (object, message) = strict_decode(
        &widget,
        r#"{"apiVersion":"schemaprobe.example.com/v1","kind":"Widget","metadata":{"name":"w1","zmeta":1,"labels":{"a":"b","a":"c"}},"zz":1,"spec":{"size":1,"bogus":{"x":1},"items":[{"name":"n","q":1}],"labels":{"x":"y"},"nested":{"k":{"a":"1","b":2}},"free":{"any":{"thing":1},"known":{"k":"v","u":1}},"embedded":{"apiVersion":"v1","kind":"X","metadata":{"name":"e","junk":1},"foo":1}},"status":{"phase":"x","y":1}}"#,
    );
    // Duplicates (document order), then metadata, then the pruned paths (sorted), then the
    // embedded resources' metadata.
    assert_eq!(
        message,
        r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "metadata.labels.a", unknown field "metadata.zmeta", unknown field "spec.bogus", unknown field "spec.free.known.u", unknown field "spec.items[0].q", unknown field "spec.nested.k.b", unknown field "status.y", unknown field "zz", unknown field "spec.embedded.metadata.junk""#
    );
    assert_eq!(
        object["spec"],
        json!({"embedded":{"apiVersion":"v1","foo":1,"kind":"X","metadata":{"name":"e"}},"free":{"any":{"thing":1},"known":{"k":"v"}},"items":[{"name":"n"}],"labels":{"x":"y"},"nested":{"k":{"a":"1"}},"size":1})
    );
    assert_eq!(object["status"], json!({"phase": "x"}));
    assert_eq!(object["metadata"], json!({"name": "w1", "labels": {"a": "c"}}));
    assert_eq!(object.get("zz"), None);

    let blob = custom("Blob");
    let (object, message) = strict_decode(
        &blob,
        r#"{"apiVersion":"schemaprobe.example.com/v1","kind":"Blob","metadata":{"name":"b1","zmeta":1},"zz":1,"spec":{"a":{"a":1,"a":2}}}"#,
    );
    assert_eq!(
        message,
        r#"Blob in version "v1" cannot be handled as a Blob: strict decoding error: duplicate field "spec.a.a", unknown field "metadata.zmeta""#
    );
    assert_eq!(
        object,
        json!({"apiVersion":"schemaprobe.example.com/v1","kind":"Blob","metadata":{"name":"b1"},"spec":{"a":{"a":2}},"zz":1})
    );
}

fn strict_patch(info: &ResourceInfo, patch_type: PatchType, body: &str, mut patched: Value) -> ApiError {
    PatchFields::new(info, patch_type, body.as_bytes(), FieldValidation::Strict)
        .check(Schema::of(info), &mut patched)
        .expect_err("strict")
}

#[test]
fn merge_and_json_patches_show_the_patched_object() {
    let cm = builtin("v1", "ConfigMap");
    // The patched object of `{"zz":1,"data":{"a":"1","a":"3"},"metadata":{"bogus":"x"},"aa":{"b":[1]}}`
    // (upstream's also carries the stored metadata: uid, managedFields...).
    let patched = json!({"aa": {"b": [1]}, "apiVersion": "v1", "data": {"a": "3"}, "kind": "ConfigMap",
        "metadata": {"bogus": "x", "name": "c1"}, "zz": 1});
    let err = strict_patch(
        &cm,
        PatchType::Merge,
        r#"{"zz":1,"data":{"a":"1","a":"3"},"metadata":{"bogus":"x"},"aa":{"b":[1]}}"#,
        patched,
    );
    let detail = r#"strict decoding error: duplicate field "data.a", unknown field "aa", unknown field "metadata.bogus", unknown field "zz""#;
    let value = r#""{\"aa\":{\"b\":[1]},\"apiVersion\":\"v1\",\"data\":{\"a\":\"3\"},\"kind\":\"ConfigMap\",\"metadata\":{\"bogus\":\"x\",\"name\":\"c1\"},\"zz\":1}""#;
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(err.message, format!(r#" "" is invalid: patch: Invalid value: {value}: {detail}"#));
    assert_eq!(
        err.details,
        Some(json!({"causes": [{"reason": "FieldValueInvalid", "field": "patch",
            "message": format!("Invalid value: {value}: {detail}")}]}))
    );

    let patched = json!({"apiVersion": "v1", "data": {"a": "3"}, "kind": "ConfigMap",
        "metadata": {"name": "c1", "x": {"y": 1}}, "zz": 1});
    let err = strict_patch(
        &cm,
        PatchType::Json,
        r#"[{"op":"add","path":"/zz","value":1,"bogus":2},{"op":"add","op":"add","path":"/metadata/x","value":{"y":1}}]"#,
        patched,
    );
    assert!(
        err.message.ends_with(r#": strict decoding error: json patch unknown field "[0].bogus", json patch duplicate field "[1].op", unknown field "metadata.x", unknown field "zz""#),
        "{}",
        err.message
    );
}

#[test]
fn strategic_patches_show_the_patch_as_go_prints_it() {
    let cm = builtin("v1", "ConfigMap");
    let body = r#"{"zz":1.5,"data":{"a":"1","a":"3"},"metadata":{"bogus":"x","labels":{"q":"r"}},"aa":{"b":[1,"s",null,true, 1e21, 100000000000000000000000, -0.0, 1.0]},"a-b":{"c":{}}, "a":{"z":1}}"#;
    let mut patched: Value = serde_json::from_str(body).expect("JSON");
    patched["apiVersion"] = json!("v1");
    patched["kind"] = json!("ConfigMap");
    patched["metadata"]["name"] = json!("c1");
    let err = strict_patch(&cm, PatchType::StrategicMerge, body, patched);
    // The converter sorts its errors by message: `"a"` < `"a-b"` < `"aa"`.
    assert_eq!(
        err.message,
        r#" "" is invalid: patch: Invalid value: "map[a:map[z:1] a-b:map[c:map[]] aa:map[b:[1 s <nil> true 1e+21 1e+23 -0 1]] data:map[a:3] metadata:map[bogus:x labels:map[q:r]] zz:1.5]": strict decoding error: duplicate field "data.a", unknown field "a", unknown field "a-b", unknown field "aa", unknown field "metadata.bogus", unknown field "zz""#
    );

    // kubectl apply of `bogus: 1` onto an existing ConfigMap (its three-way patch).
    let annotation = "{\"apiVersion\":\"v1\",\"bogus\":1,\"data\":{\"a\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c1\",\"namespace\":\"schema-probe-a\"}}\n";
    let patch = json!({"bogus": 1, "data": {"a": "1"}, "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": annotation}}});
    let patched = json!({"apiVersion": "v1", "kind": "ConfigMap", "bogus": 1, "data": {"a": "1"}, "metadata": {"name": "c1"}});
    let err = strict_patch(&cm, PatchType::StrategicMerge, &patch.to_string(), patched);
    // kubectl prints it as `The request is invalid: patch: Invalid value: …`.
    assert_eq!(
        err.message,
        r#" "" is invalid: patch: Invalid value: "map[bogus:1 data:map[a:1] metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:{\"apiVersion\":\"v1\",\"bogus\":1,\"data\":{\"a\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c1\",\"namespace\":\"schema-probe-a\"}}\n]]]": strict decoding error: unknown field "bogus""#
    );
}

#[tokio::test]
async fn patches_warn_and_drop_under_warn_and_only_drop_under_ignore() {
    let cm = builtin("v1", "ConfigMap");
    let body = br#"{"zz":1,"data":{"a":"1","a":"3"},"aa":{"b":[1]}}"#;
    let patched = json!({"aa": {"b": [1]}, "apiVersion": "v1", "data": {"a": "3"}, "kind": "ConfigMap", "metadata": {"name": "c1"}, "zz": 1});
    for (directive, expected) in [
        (
            FieldValidation::Warn,
            vec![
                r#"299 - "duplicate field \"data.a\"""#,
                r#"299 - "unknown field \"aa\"""#,
                r#"299 - "unknown field \"zz\"""#,
            ],
        ),
        (FieldValidation::Ignore, vec![]),
    ] {
        let mut object = patched.clone();
        let (answer, warnings) = crate::warnings::collect(async {
            PatchFields::new(&cm, PatchType::Merge, body, directive).check(Schema::of(&cm), &mut object)
        })
        .await;
        assert!(answer.is_ok());
        assert_eq!(warnings, expected, "{directive:?}");
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "data": {"a": "3"}, "kind": "ConfigMap", "metadata": {"name": "c1"}})
        );
    }
}

fn apply_error(info: &ResourceInfo, body: &Value) -> String {
    let (text, mut merged) = (body.to_string(), body.clone());
    PatchFields::new(info, PatchType::Apply, text.as_bytes(), FieldValidation::Ignore)
        .check(Schema::of(info), &mut merged)
        .map_or_else(|e| format!("{} {}", e.code, e.message), |()| String::new())
}

#[test]
fn server_side_apply_refuses_undeclared_fields_whatever_the_directive() {
    let cm = builtin("v1", "ConfigMap");
    let body = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c9"},"zz":1,"data":{"a":"1"}});
    assert_eq!(
        apply_error(&cm, &body),
        "500 failed to create typed patch object (/c9; /v1, Kind=ConfigMap): .zz: field not declared in schema"
    );
    // kubectl apply --server-side names the namespace.
    let body = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k1","namespace":"schema-probe-a"},"bogus":1});
    assert!(
        apply_error(&cm, &body)
            .ends_with("(schema-probe-a/k1; /v1, Kind=ConfigMap): .bogus: field not declared in schema")
    );

    let deploy = builtin("apps/v1", "Deployment");
    let template = |container: Value| json!({"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[container]}}});
    // Each object stops at its first undeclared key (`zz` is not looked at); the default
    // protocol completes the port's key.
    let body = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1"},"zy":1,"zz":1,
        "spec": template(json!({"name":"c","image":"i","ports":[{"containerPort":80,"xx":1}]}))});
    assert_eq!(
        apply_error(&deploy, &body),
        "500 failed to create typed patch object (/d1; apps/v1, Kind=Deployment): errors:\n  .spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"].xx: field not declared in schema\n  .zy: field not declared in schema"
    );
    // Upstream's order is Go's random map order (it answered each of these lines, in varying
    // subsets); kube-sim's is the sorted one.
    let body = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1","q":1},"za":1,"zb":2,"zc":3,
        "spec": template(json!({"name":"c","image":"i","env":[{"name":"E","q":1}],"volumeMounts":[{"name":"v","mountPath":"/m","q":1}]}))});
    assert_eq!(
        apply_error(&deploy, &body),
        "500 failed to create typed patch object (/d1; apps/v1, Kind=Deployment): errors:\n  .metadata.q: field not declared in schema\n  .spec.template.spec.containers[name=\"c\"].env[name=\"E\"].q: field not declared in schema\n  .spec.template.spec.containers[name=\"c\"].volumeMounts[mountPath=\"/m\"].q: field not declared in schema\n  .za: field not declared in schema"
    );

    let body = json!({"apiVersion":"schemaprobe.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"zz":1,"size":2}});
    assert_eq!(
        apply_error(&custom("Widget"), &body),
        "500 failed to create typed patch object (/w2; schemaprobe.example.com/v1, Kind=Widget): .spec.zz: field not declared in schema"
    );
    let body = json!({"apiVersion":"schemaprobe.example.com/v1","kind":"Blob","metadata":{"name":"b2","q":1},"spec":{"zz":1,"size":2}});
    assert_eq!(
        apply_error(&custom("Blob"), &body),
        "500 failed to create typed patch object (/b2; schemaprobe.example.com/v1, Kind=Blob): .metadata.q: field not declared in schema"
    );
    let fine = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c9"},"data":{"a":"1"}});
    assert_eq!(apply_error(&cm, &fine), "");
}

#[test]
fn field_validation_values() {
    assert_eq!(FieldValidation::parse(""), Some(FieldValidation::Warn));
    assert_eq!(FieldValidation::parse("Strict"), Some(FieldValidation::Strict));
    assert_eq!(FieldValidation::parse("Ignore"), Some(FieldValidation::Ignore));
    assert_eq!(FieldValidation::parse("strict"), None);
}

#[test]
fn go_renderings() {
    for (f, go) in [
        (1.5, "1.5"),
        (1e21, "1e+21"),
        (1e23, "1e+23"),
        (-0.0, "-0"),
        (1.0, "1"),
        (1e6, "1e+06"),
        (100000.0, "100000"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (123456789.0, "1.23456789e+08"),
        (1.5e-7, "1.5e-07"),
        (-2.25, "-2.25"),
        (1e100, "1e+100"),
    ] {
        assert_eq!(crate::go_fmt::float(f), go, "{f}");
    }
    assert_eq!(crate::go_fmt::quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
    assert_eq!(crate::go_fmt::json(&json!({"b": "<&>", "a": 1})), r#"{"a":1,"b":"\u003c\u0026\u003e"}"#);
    assert_eq!(crate::go_fmt::value(&json!({"b": [], "a": {}, "c": null})), "map[a:map[] b:[] c:<nil>]");
}

#[test]
fn hostile_inputs_do_not_panic() {
    let pod = builtin("v1", "Pod");
    for body in
        ["[]", "1", "null", r#"{"spec":[1]}"#, r#"{"spec":{"containers":{"a":1}}}"#, r#"{"metadata":"x"}"#]
    {
        let (_, _) = decode_json(Schema::of(&pod), body.as_bytes()).expect("JSON");
    }
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(decode_json(Schema::of(&pod), deep.as_bytes()).is_err(), "serde_json's recursion limit");
    let mut value = json!(null);
    for _ in 0..2000 {
        value = json!({"spec": value});
    }
    let _ = prune(Schema::of(&custom("Widget")), &mut value);
    let _ = prune(Schema::of(&pod), &mut value);
}

#[test]
fn kube_sims_own_defaults_stay_within_the_schema() {
    // What the write pipeline adds after pruning must be fields the kinds have, or a later
    // patch of the object would drop (or, under Strict, refuse) kube-sim's own fields.
    let template =
        json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    for (api_version, kind, group, plural) in [
        ("apps/v1", "Deployment", "apps", "deployments"),
        ("apps/v1", "ReplicaSet", "apps", "replicasets"),
        ("apps/v1", "StatefulSet", "apps", "statefulsets"),
        ("apps/v1", "DaemonSet", "apps", "daemonsets"),
    ] {
        let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template}});
        crate::defaults::apply(group, plural, &mut object);
        assert_eq!(messages(&prune(Schema::of(&builtin(api_version, kind)), &mut object)), "", "{kind}");
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": template["spec"], "status": {"phase": "Pending"}});
    crate::defaults::apply("", "pods", &mut pod);
    crate::defaults::admit_new_pod(&mut pod);
    pod["status"]["qosClass"] = json!(crate::defaults::pod_qos_class(&pod));
    assert_eq!(messages(&prune(Schema::of(&builtin("v1", "Pod")), &mut pod)), "");
    let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}});
    crate::defaults::apply("", "namespaces", &mut namespace);
    assert_eq!(messages(&prune(Schema::of(&builtin("v1", "Namespace")), &mut namespace)), "");
}
