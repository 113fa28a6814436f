//! Table tests for `apply_patch`. Each case names an object, a patch body and what a client
//! would observe in the result (fields by JSON pointer, or the error).

mod apply;
mod json_and_merge;
mod robustness;
mod strategic;

use serde_json::{Value, json};

use super::{PatchError, PatchType, apply_patch};

/// What a case expects.
pub(super) enum Want {
    /// These JSON pointers hold these values (`None`: the field is absent). A pointer
    /// `<list>/*<key>` stands for the list of the items' `<key>` values, in order.
    Fields(Vec<(&'static str, Option<Value>)>),
    /// The whole patched object.
    Whole(Value),
    /// Exactly this error.
    Error(PatchError),
    /// A 400 with any message.
    AnyBadRequest,
    /// A 422 with any message.
    AnyUnprocessable,
}

pub(super) struct Case {
    pub name: &'static str,
    pub kind: &'static str,
    pub builtin: bool,
    pub original: Value,
    pub patch_type: PatchType,
    pub body: String,
    pub want: Want,
}

impl Case {
    /// A case on a built-in object whose kind is read from `original`.
    pub fn builtin(
        name: &'static str,
        original: Value,
        patch_type: PatchType,
        body: impl Into<String>,
        want: Want,
    ) -> Self {
        let kind = match original.get("kind").and_then(Value::as_str) {
            Some("Deployment") => "Deployment",
            Some("Pod") => "Pod",
            Some("Node") => "Node",
            Some("PodDisruptionBudget") => "PodDisruptionBudget",
            Some("Service") => "Service",
            Some("Scale") => "Scale",
            Some("ConfigMap") => "ConfigMap",
            _ => "Deployment",
        };
        Case { name, kind, builtin: true, original, patch_type, body: body.into(), want }
    }
}

fn api_version_of(kind: &str) -> &'static str {
    match kind {
        "Deployment" => "apps/v1",
        "PodDisruptionBudget" => "policy/v1",
        "Scale" => "autoscaling/v1",
        "Widget" => "example.com/v1",
        _ => "v1",
    }
}

pub(super) fn run(cases: Vec<Case>) {
    for case in cases {
        let got = apply_patch(
            api_version_of(case.kind),
            case.kind,
            case.builtin,
            &case.original,
            case.patch_type,
            case.body.as_bytes(),
        );
        let name = case.name;
        match (case.want, got) {
            (Want::Fields(fields), Ok(patched)) => {
                for (pointer, expected) in fields {
                    assert_eq!(
                        lookup(&patched, pointer),
                        expected,
                        "case {name:?}: field {pointer}; whole result: {patched}"
                    );
                }
            }
            (Want::Whole(expected), Ok(patched)) => {
                assert_eq!(patched, expected, "case {name:?}");
            }
            (Want::Error(expected), Err(error)) => assert_eq!(error, expected, "case {name:?}"),
            (Want::AnyBadRequest, Err(PatchError::BadRequest(_))) => {}
            (Want::AnyUnprocessable, Err(PatchError::Unprocessable(_))) => {}
            (_, got) => panic!("case {name:?}: unexpected outcome {got:?}"),
        }
    }
}

/// Resolves a JSON pointer, or `<list pointer>/*<key>` to the list of the items' `key` values.
fn lookup(value: &Value, pointer: &str) -> Option<Value> {
    match pointer.split_once("/*") {
        Some((list, key)) => {
            let items = value.pointer(list)?.as_array()?;
            Some(Value::Array(
                items.iter().map(|item| item.get(key).cloned().unwrap_or(Value::Null)).collect(),
            ))
        }
        None => value.pointer(pointer).cloned(),
    }
}

pub(super) fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "d-1", "resourceVersion": "10",
            "labels": {"app": "web"},
            "annotations": {"owner": "team-a"},
            "finalizers": ["example.com/a"]
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                        },
                        {"name": "sidecar", "image": "busybox:1.36"}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "k1", "operator": "Exists"}]
                }
            }
        },
        "status": {
            "replicas": 3,
            "conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "True"}
            ]
        }
    })
}

pub(super) fn node() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "uid": "n-1", "labels": {"kubernetes.io/hostname": "node-1"}},
        "spec": {
            "podCIDR": "10.0.1.0/24",
            "podCIDRs": ["10.0.1.0/24"],
            "taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": "node-1"}
            ]
        }
    })
}

pub(super) fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-abc-1", "namespace": "default", "uid": "p-1",
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                "uid": "rs-1", "controller": true
            }]
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "nginx", "image": "nginx:1.27"}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"}
            ],
            "podIPs": [{"ip": "10.0.1.5"}]
        }
    })
}

pub(super) fn pdb() -> Value {
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web-pdb", "namespace": "default", "uid": "pdb-1"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1,
            "expectedPods": 3, "observedGeneration": 1,
            "conditions": [{
                "type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods"
            }]
        }
    })
}

pub(super) fn widget() -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w2", "namespace": "default", "uid": "w-1"},
        "spec": {"size": 5, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}]}
    })
}

/// A custom-resource case.
pub(super) fn custom(name: &'static str, patch_type: PatchType, body: impl Into<String>, want: Want) -> Case {
    Case { name, kind: "Widget", builtin: false, original: widget(), patch_type, body: body.into(), want }
}
