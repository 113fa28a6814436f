//! Strategic merge patch on built-in kinds.

use serde_json::{Value, json};

use super::{Case, Want, custom, deployment, node, pdb, pod, run};
use crate::patch::{PatchError, PatchType};

fn smp(name: &'static str, original: Value, body: &str, want: Want) -> Case {
    Case::builtin(name, original, PatchType::StrategicMerge, body, want)
}

const CONTAINER_NAMES: &str = "/spec/template/spec/containers/*name";

#[test]
fn cordon_drain_and_uncordon_bodies() {
    let mut cordoned = node();
    cordoned["spec"]["unschedulable"] = json!(true);
    run(vec![
        smp(
            "kubectl cordon / drain",
            node(),
            r#"{"spec":{"unschedulable":true}}"#,
            Want::Fields(vec![
                ("/spec/unschedulable", Some(json!(true))),
                ("/spec/taints/0/key", Some(json!("dedicated"))),
                ("/spec/podCIDR", Some(json!("10.0.1.0/24"))),
            ]),
        ),
        smp(
            "kubectl uncordon removes the field",
            cordoned,
            r#"{"spec":{"unschedulable":null}}"#,
            Want::Whole(node()),
        ),
    ]);
}

#[test]
fn kubectl_client_side_apply_body_merges_containers_by_name() {
    // Shape of transcript 02's PATCH: replicas, image and the last-applied annotation.
    let body = r#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"apps/v1\"}\n"}},"spec":{"replicas":4,"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"},{"name":"sidecar"}],"containers":[{"image":"nginx:1.28","name":"nginx"}]}}}}"#;
    run(vec![smp(
        "apply: replicas, image, last-applied annotation",
        deployment(),
        body,
        Want::Fields(vec![
            ("/spec/replicas", Some(json!(4))),
            (
                "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
                Some(json!("{\"apiVersion\":\"apps/v1\"}\n")),
            ),
            ("/metadata/annotations/owner", Some(json!("team-a"))),
            (CONTAINER_NAMES, Some(json!(["nginx", "sidecar"]))),
            ("/spec/template/spec/containers/0/image", Some(json!("nginx:1.28"))),
            ("/spec/template/spec/containers/0/ports/0/containerPort", Some(json!(80))),
            ("/spec/template/spec/containers/0/env/*name", Some(json!(["A", "B"]))),
            ("/spec/template/spec/containers/1/image", Some(json!("busybox:1.36"))),
            ("/spec/template/spec/$setElementOrder~1containers", None),
            ("/status/replicas", Some(json!(3))),
        ]),
    )]);
}

#[test]
fn lists_with_merge_keys_merge_item_by_item() {
    run(vec![
        smp(
            "a new container without $setElementOrder goes first (as upstream)",
            deployment(),
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"proxy","image":"envoy"}]}}}}"#,
            Want::Fields(vec![(CONTAINER_NAMES, Some(json!(["proxy", "nginx", "sidecar"])))]),
        ),
        smp(
            "$setElementOrder places a new container",
            deployment(),
            r#"{"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"nginx"},{"name":"proxy"},{"name":"sidecar"}],
                "containers":[{"name":"proxy","image":"envoy"}]}}}}"#,
            Want::Fields(vec![
                (CONTAINER_NAMES, Some(json!(["nginx", "proxy", "sidecar"]))),
                ("/spec/template/spec/containers/1/image", Some(json!("envoy"))),
            ]),
        ),
        smp(
            "$setElementOrder alone reorders",
            deployment(),
            r#"{"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"sidecar"},{"name":"nginx"}]}}}}"#,
            Want::Fields(vec![(CONTAINER_NAMES, Some(json!(["sidecar", "nginx"])))]),
        ),
        smp(
            "$setElementOrder that contradicts the patch list is rejected",
            deployment(),
            r#"{"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"nginx"},{"name":"sidecar"}],
                "containers":[{"name":"sidecar","image":"x"},{"name":"nginx","image":"y"}]}}}}"#,
            Want::AnyBadRequest,
        ),
        smp(
            "$patch: delete removes one container",
            deployment(),
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#,
            Want::Fields(vec![(CONTAINER_NAMES, Some(json!(["nginx"])))]),
        ),
        smp(
            "$patch: replace replaces the whole list",
            deployment(),
            r#"{"spec":{"template":{"spec":{"containers":[{"$patch":"replace"},{"name":"only","image":"x"}]}}}}"#,
            Want::Fields(vec![(
                "/spec/template/spec/containers",
                Some(json!([{"name": "only", "image": "x"}])),
            )]),
        ),
        smp(
            "env by name, ports by containerPort, volumeMounts by mountPath inside a container",
            deployment(),
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx",
                "env":[{"name":"B","value":"two"},{"name":"A","$patch":"delete"}],
                "ports":[{"containerPort":80,"name":"http"}],
                "volumeMounts":[{"mountPath":"/data","readOnly":true}]}]}}}}"#,
            Want::Fields(vec![
                ("/spec/template/spec/containers/0/env", Some(json!([{"name": "B", "value": "two"}]))),
                (
                    "/spec/template/spec/containers/0/ports",
                    Some(json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])),
                ),
                (
                    "/spec/template/spec/containers/0/volumeMounts",
                    Some(json!([{"name": "data", "mountPath": "/data", "readOnly": true}])),
                ),
                ("/spec/template/spec/containers/0/image", Some(json!("nginx:1.27"))),
            ]),
        ),
        smp(
            "volumes merge by name; $retainKeys drops the replaced volume source",
            deployment(),
            r#"{"spec":{"template":{"spec":{"volumes":[
                {"name":"data","$retainKeys":["configMap","name"],"configMap":{"name":"cfg"}},
                {"name":"cache","emptyDir":{"medium":"Memory"}}]}}}}"#,
            Want::Fields(vec![(
                "/spec/template/spec/volumes",
                // Items the patch lists keep the patch's order.
                Some(json!([
                    {"name": "data", "configMap": {"name": "cfg"}},
                    {"name": "cache", "emptyDir": {"medium": "Memory"}}
                ])),
            )]),
        ),
        smp(
            "PDB status conditions merge by type",
            pdb(),
            r#"{"status":{"disruptionsAllowed":0,"conditions":[{"type":"DisruptionAllowed","status":"False","reason":"InsufficientPods"}]}}"#,
            Want::Fields(vec![
                ("/status/disruptionsAllowed", Some(json!(0))),
                (
                    "/status/conditions",
                    Some(
                        json!([{"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods"}]),
                    ),
                ),
                ("/status/currentHealthy", Some(json!(3))),
            ]),
        ),
        smp(
            "pod DisruptionTarget condition is added, others kept",
            pod(),
            r#"{"status":{"conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI"}]}}"#,
            Want::Fields(vec![(
                "/status/conditions/*type",
                Some(json!(["DisruptionTarget", "PodScheduled", "Ready"])),
            )]),
        ),
        smp(
            "node addresses merge by type",
            node(),
            r#"{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"}]}}"#,
            Want::Fields(vec![("/status/addresses/*address", Some(json!(["10.0.0.9", "node-1"])))]),
        ),
        smp(
            "ownerReferences merge by uid",
            pod(),
            r#"{"metadata":{"ownerReferences":[{"uid":"rs-1","controller":false}]}}"#,
            Want::Fields(vec![
                ("/metadata/ownerReferences/0/controller", Some(json!(false))),
                ("/metadata/ownerReferences/0/name", Some(json!("web-abc"))),
            ]),
        ),
        smp(
            "garbage collector removes a dangling ownerReference",
            pod(),
            r#"{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"rs-1"}],"uid":"p-1"}}"#,
            Want::Fields(vec![("/metadata/ownerReferences", Some(json!([])))]),
        ),
    ]);
}

#[test]
fn lists_without_merge_keys_are_replaced() {
    run(vec![
        smp(
            "pod tolerations have no merge key upstream: replaced",
            pod(),
            r#"{"spec":{"tolerations":[{"key":"dedicated","operator":"Exists"}]}}"#,
            Want::Fields(vec![(
                "/spec/tolerations",
                Some(json!([{"key": "dedicated", "operator": "Exists"}])),
            )]),
        ),
        smp(
            "node taints have no merge key upstream: replaced",
            node(),
            r#"{"spec":{"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}]}}"#,
            Want::Fields(vec![("/spec/taints/*key", Some(json!(["node.kubernetes.io/unschedulable"])))]),
        ),
        smp(
            "selector matchExpressions replaced",
            pdb(),
            r#"{"spec":{"selector":{"matchExpressions":[{"key":"tier","operator":"Exists"}]}}}"#,
            Want::Fields(vec![
                ("/spec/selector/matchLabels/app", Some(json!("web"))),
                ("/spec/selector/matchExpressions/*key", Some(json!(["tier"]))),
            ]),
        ),
        Case::builtin(
            "a kind without a schema replaces lists but still merges metadata lists",
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "finalizers": ["a"]},
                "data": {"k": "v"}, "items": [{"name": "x", "v": 1}]
            }),
            PatchType::StrategicMerge,
            r#"{"metadata":{"finalizers":["b"]},"items":[{"name":"y"}],"data":{"k2":"v2"}}"#,
            Want::Fields(vec![
                ("/items", Some(json!([{"name": "y"}]))),
                ("/metadata/finalizers", Some(json!(["b", "a"]))),
                ("/data", Some(json!({"k": "v", "k2": "v2"}))),
            ]),
        ),
    ]);
}

#[test]
fn primitive_lists_maps_and_directives() {
    run(vec![
        smp(
            "finalizers merge as a set; a new one goes first (as upstream)",
            deployment(),
            r#"{"metadata":{"finalizers":["example.com/b","example.com/a"]}}"#,
            Want::Fields(vec![("/metadata/finalizers", Some(json!(["example.com/b", "example.com/a"])))]),
        ),
        smp(
            "finalizer appended with $setElementOrder",
            deployment(),
            r#"{"metadata":{"$setElementOrder/finalizers":["example.com/a","orphan"],"finalizers":["orphan"]}}"#,
            Want::Fields(vec![("/metadata/finalizers", Some(json!(["example.com/a", "orphan"])))]),
        ),
        smp(
            "$deleteFromPrimitiveList removes a finalizer",
            deployment(),
            r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}"#,
            Want::Fields(vec![("/metadata/finalizers", Some(json!([])))]),
        ),
        smp(
            "null deletes keys at any depth",
            deployment(),
            r#"{"metadata":{"annotations":null},"spec":{"strategy":{"rollingUpdate":null}}}"#,
            Want::Fields(vec![
                ("/metadata/annotations", None),
                ("/spec/strategy", Some(json!({"type": "RollingUpdate"}))),
            ]),
        ),
        smp(
            "$retainKeys clears the strategy's rollingUpdate when switching to Recreate",
            deployment(),
            r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#,
            Want::Fields(vec![("/spec/strategy", Some(json!({"type": "Recreate"})))]),
        ),
        smp(
            "$retainKeys must list every key the patch sets",
            deployment(),
            r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate","rollingUpdate":{}}}}"#,
            Want::Error(PatchError::BadRequest("invalid patch format of retainKeys".into())),
        ),
        smp(
            "$patch: replace on a map",
            deployment(),
            r#"{"spec":{"selector":{"$patch":"replace","matchLabels":{"tier":"db"}}}}"#,
            Want::Fields(vec![("/spec/selector", Some(json!({"matchLabels": {"tier": "db"}})))]),
        ),
        smp(
            "$patch: delete on a map empties it",
            deployment(),
            r#"{"metadata":{"labels":{"$patch":"delete"}}}"#,
            Want::Fields(vec![("/metadata/labels", Some(json!({})))]),
        ),
        smp(
            "$patch: merge is tolerated",
            deployment(),
            r#"{"metadata":{"labels":{"$patch":"merge","tier":"web"}}}"#,
            Want::Fields(vec![("/metadata/labels", Some(json!({"app": "web", "tier": "web"})))]),
        ),
        Case::builtin(
            "service ports merge by port",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                   "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
            PatchType::StrategicMerge,
            r#"{"spec":{"ports":[{"port":443,"name":"https"}]}}"#,
            Want::Fields(vec![(
                "/spec/ports",
                Some(json!([{"port": 80, "targetPort": 8080}, {"port": 443, "name": "https"}])),
            )]),
        ),
        smp("a null body is a no-op (Go decodes it to an empty map)", node(), "null", Want::Whole(node())),
    ]);
}

#[test]
fn strategic_merge_errors() {
    run(vec![
        custom(
            "custom resources do not support strategic merge patch",
            PatchType::StrategicMerge,
            r#"{"spec":{"size":7}}"#,
            Want::Error(PatchError::UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml"
                    .into(),
            )),
        ),
        smp("syntax error", node(), "{\"spec\":", Want::AnyBadRequest),
        smp(
            "array body",
            node(),
            "[1]",
            Want::Error(PatchError::BadRequest(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into(),
            )),
        ),
        smp(
            "container without its merge key",
            deployment(),
            r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
            Want::Error(PatchError::BadRequest(
                r#"map: {"image":"x"} does not contain declared merge key: name"#.into(),
            )),
        ),
        smp("unknown $patch value", deployment(), r#"{"spec":{"$patch":"explode"}}"#, Want::AnyBadRequest),
        smp(
            "list items of mixed types",
            deployment(),
            r#"{"metadata":{"finalizers":[1]}}"#,
            Want::AnyBadRequest,
        ),
        smp(
            "list of lists in a merge list",
            deployment(),
            r#"{"metadata":{"finalizers":[["x"]]}}"#,
            Want::Error(PatchError::Unprocessable("lists of lists are not supported".into())),
        ),
        smp(
            "$deleteFromPrimitiveList without a field name",
            deployment(),
            r#"{"metadata":{"$deleteFromPrimitiveList":["a"]}}"#,
            Want::Error(PatchError::BadRequest("invalid patch format of primitive list".into())),
        ),
        smp(
            "$setElementOrder that is not a list",
            deployment(),
            r#"{"metadata":{"$setElementOrder/finalizers":"a"}}"#,
            Want::AnyBadRequest,
        ),
    ]);
}
