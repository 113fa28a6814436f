//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386).

use serde_json::json;

use super::{Case, Want, custom, deployment, node, pod, run};
use crate::patch::{PatchError, PatchType};

#[test]
fn json_patch_applies_operations_and_reports_failures_like_the_apiserver() {
    run(vec![
        Case::builtin(
            "replace replicas",
            deployment(),
            PatchType::Json,
            r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
            Want::Fields(vec![("/spec/replicas", Some(json!(5)))]),
        ),
        Case::builtin(
            "add an annotation whose key needs ~1 escaping",
            deployment(),
            PatchType::Json,
            r#"[{"op":"add","path":"/metadata/annotations/example.com~1team","value":"core"}]"#,
            Want::Fields(vec![
                ("/metadata/annotations/example.com~1team", Some(json!("core"))),
                ("/metadata/annotations/owner", Some(json!("team-a"))),
            ]),
        ),
        Case::builtin(
            "test guards a replace (optimistic update)",
            deployment(),
            PatchType::Json,
            r#"[{"op":"test","path":"/spec/replicas","value":3},
                {"op":"replace","path":"/spec/replicas","value":1}]"#,
            Want::Fields(vec![("/spec/replicas", Some(json!(1)))]),
        ),
        Case::builtin(
            "a failed test is 422 with upstream's wording and changes nothing",
            deployment(),
            PatchType::Json,
            r#"[{"op":"replace","path":"/spec/replicas","value":1},
                {"op":"test","path":"/spec/replicas","value":7}]"#,
            Want::Error(PatchError::Unprocessable("testing value /spec/replicas failed: test failed".into())),
        ),
        Case::builtin(
            "removing a missing field is 422",
            deployment(),
            PatchType::Json,
            r#"[{"op":"remove","path":"/spec/paused"}]"#,
            Want::AnyUnprocessable,
        ),
        Case::builtin(
            "remove a list item by index",
            deployment(),
            PatchType::Json,
            r#"[{"op":"remove","path":"/spec/template/spec/containers/1"}]"#,
            Want::Fields(vec![
                ("/spec/template/spec/containers/0/name", Some(json!("nginx"))),
                ("/spec/template/spec/containers/1", None),
            ]),
        ),
        Case::builtin(
            "body that is not JSON",
            deployment(),
            PatchType::Json,
            "not json",
            Want::AnyBadRequest,
        ),
        Case::builtin(
            "body that is an object, not an operation list",
            deployment(),
            PatchType::Json,
            r#"{"op":"add","path":"/a","value":1}"#,
            Want::AnyBadRequest,
        ),
        Case::builtin(
            "unknown operation",
            deployment(),
            PatchType::Json,
            r#"[{"op":"frobnicate","path":"/spec"}]"#,
            Want::AnyBadRequest,
        ),
        Case::builtin(
            "operation without a path",
            deployment(),
            PatchType::Json,
            r#"[{"op":"add","value":1}]"#,
            Want::AnyBadRequest,
        ),
        Case::builtin(
            "replacing the whole object by a scalar",
            deployment(),
            PatchType::Json,
            r#"[{"op":"replace","path":"","value":5}]"#,
            Want::AnyUnprocessable,
        ),
        custom(
            "custom resources accept JSON patch",
            PatchType::Json,
            r#"[{"op":"add","path":"/spec/tags/-","value":"c"}]"#,
            Want::Fields(vec![("/spec/tags", Some(json!(["a", "b", "c"])))]),
        ),
    ]);
}

fn scale() -> serde_json::Value {
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "default", "uid": "d-1", "resourceVersion": "1006"},
        "spec": {"replicas": 3},
        "status": {"replicas": 3, "selector": "app=web"}
    })
}

#[test]
fn merge_patch_handles_the_bodies_kubectl_sends() {
    run(vec![
        Case::builtin(
            "kubectl scale --replicas=5 (merge patch on /scale)",
            scale(),
            PatchType::Merge,
            r#"{"spec":{"replicas":5}}"#,
            Want::Fields(vec![("/spec/replicas", Some(json!(5))), ("/status/replicas", Some(json!(3)))]),
        ),
        Case::builtin(
            "kubectl annotate team=core",
            deployment(),
            PatchType::Merge,
            r#"{"metadata":{"annotations":{"team":"core"}}}"#,
            Want::Fields(vec![
                ("/metadata/annotations/team", Some(json!("core"))),
                ("/metadata/annotations/owner", Some(json!("team-a"))),
                ("/metadata/labels/app", Some(json!("web"))),
            ]),
        ),
        Case::builtin(
            "kubectl annotate owner- (null deletes)",
            deployment(),
            PatchType::Merge,
            r#"{"metadata":{"annotations":{"owner":null}}}"#,
            Want::Fields(vec![
                ("/metadata/annotations", Some(json!({}))),
                ("/metadata/name", Some(json!("web"))),
            ]),
        ),
        Case::builtin(
            "kubectl annotate --resource-version keeps the precondition in the result",
            node(),
            PatchType::Merge,
            r#"{"metadata":{"annotations":{"team":"infra"},"resourceVersion":"42"}}"#,
            Want::Fields(vec![
                ("/metadata/annotations/team", Some(json!("infra"))),
                ("/metadata/resourceVersion", Some(json!("42"))),
            ]),
        ),
        Case::builtin(
            "lists are replaced, not merged",
            deployment(),
            PatchType::Merge,
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}"#,
            Want::Fields(vec![
                ("/spec/template/spec/containers", Some(json!([{"name": "nginx", "image": "nginx:2"}]))),
                ("/spec/template/spec/volumes/0/name", Some(json!("data"))),
            ]),
        ),
        Case::builtin(
            "a scalar replaces an object; nulls inside new objects are dropped",
            deployment(),
            PatchType::Merge,
            r#"{"spec":{"strategy":"Recreate","paused":{"a":null,"b":1}}}"#,
            Want::Fields(vec![
                ("/spec/strategy", Some(json!("Recreate"))),
                ("/spec/paused", Some(json!({"b": 1}))),
            ]),
        ),
        Case::builtin(
            "deleting a missing key is a no-op",
            node(),
            PatchType::Merge,
            r#"{"spec":{"unschedulable":null}}"#,
            Want::Whole(node()),
        ),
        Case::builtin(
            "kubectl label tier=db (same merge-patch shape as annotate)",
            pod(),
            PatchType::Merge,
            r#"{"metadata":{"labels":{"tier":"db"}}}"#,
            Want::Fields(vec![
                ("/metadata/labels", Some(json!({"tier": "db"}))),
                ("/metadata/ownerReferences/0/uid", Some(json!("rs-1"))),
            ]),
        ),
        custom(
            "kubectl annotate on a custom resource",
            PatchType::Merge,
            r#"{"metadata":{"annotations":{"foo":"bar"}}}"#,
            Want::Fields(vec![
                ("/metadata/annotations/foo", Some(json!("bar"))),
                ("/spec/size", Some(json!(5))),
            ]),
        ),
        custom(
            "kubectl apply on a custom resource (client-side, merge patch)",
            PatchType::Merge,
            r#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"annotations\":{},\"name\":\"w2\",\"namespace\":\"default\"},\"spec\":{\"size\":7}}\n"}},"spec":{"size":7}}"#,
            Want::Fields(vec![
                ("/spec/size", Some(json!(7))),
                ("/spec/tags", Some(json!(["a", "b"]))),
                ("/metadata/name", Some(json!("w2"))),
            ]),
        ),
    ]);
}

#[test]
fn merge_patch_rejects_bodies_that_are_not_json_objects() {
    // Upstream's wording (v1.35): the strict decoding into a map, then evanphx's `ErrBadJSONPatch`.
    let invalid = |m: &str| Want::Error(PatchError::BadRequest(m.into()));
    let not_a_map = |t: &str| {
        invalid(&format!(
            "error decoding patch: json: cannot unmarshal {t} into Go value of type map[string]interface {{}}"
        ))
    };
    run(vec![
        Case::builtin(
            "syntax error",
            deployment(),
            PatchType::Merge,
            "{bad",
            invalid("error decoding patch: invalid character 'b' looking for beginning of object key string"),
        ),
        Case::builtin("null", deployment(), PatchType::Merge, "null", invalid("Invalid JSON Patch")),
        Case::builtin("array", deployment(), PatchType::Merge, "[1]", not_a_map("array")),
        Case::builtin("number", deployment(), PatchType::Merge, "5", not_a_map("number")),
        Case::builtin(
            "empty body",
            deployment(),
            PatchType::Merge,
            "",
            invalid("error decoding patch: unexpected end of JSON input"),
        ),
    ]);
}
