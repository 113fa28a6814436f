//! The merge a server-side apply makes (field ownership, pruning and conflicts are
//! `managed_fields`'s, tested there).

use serde_json::{Value, json};

use super::{Case, Want, custom, deployment, run};
use crate::patch::{PatchError, PatchType};

/// The body `kubectl apply --server-side -f deploy.yaml` sends (transcript 02h).
const KUBECTL_SSA_BODY: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"api"},"name":"api","namespace":"default"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"image":"example/api:1.0","name":"api"}]}}}}"#;

fn apply(name: &'static str, original: Value, body: &str, want: Want) -> Case {
    Case::builtin(name, original, PatchType::Apply, body, want)
}

#[test]
fn apply_creates_and_merges() {
    let expected_created: Value = match serde_json::from_str(KUBECTL_SSA_BODY) {
        Ok(value) => value,
        Err(error) => panic!("fixture is not JSON: {error}"),
    };
    run(vec![
        apply(
            "apply onto {} (create) yields the applied object",
            json!({}),
            KUBECTL_SSA_BODY,
            Want::Whole(expected_created),
        ),
        apply(
            "apply onto an existing Deployment merges fields and containers",
            deployment(),
            r#"{"apiVersion":"apps/v1","kind":"Deployment",
                "metadata":{"name":"web","labels":{"tier":"frontend"}},
                "spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}"#,
            Want::Fields(vec![
                ("/spec/replicas", Some(json!(5))),
                ("/metadata/labels", Some(json!({"app": "web", "tier": "frontend"}))),
                ("/metadata/uid", Some(json!("d-1"))),
                ("/spec/template/spec/containers/*name", Some(json!(["nginx", "sidecar"]))),
                ("/spec/template/spec/containers/0/image", Some(json!("nginx:1.28"))),
                ("/spec/template/spec/containers/0/env/*name", Some(json!(["A", "B"]))),
                ("/status/replicas", Some(json!(3))),
            ]),
        ),
        apply(
            "YAML body",
            deployment(),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  paused: true\n",
            Want::Fields(vec![
                ("/spec/replicas", Some(json!(2))),
                ("/spec/paused", Some(json!(true))),
                ("/spec/selector/matchLabels/app", Some(json!("web"))),
            ]),
        ),
        custom(
            "custom resource without a schema: objects merged, lists replaced",
            PatchType::Apply,
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  tags: [z]\n",
            Want::Fields(vec![("/spec/tags", Some(json!(["z"]))), ("/spec/size", Some(json!(5)))]),
        ),
    ]);
}

#[test]
fn apply_rejects_invalid_configurations() {
    run(vec![
        apply(
            "apiVersion of another group version",
            deployment(),
            r#"{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"web"}}"#,
            Want::Error(PatchError::BadRequest(
                "Incorrect version specified in apply patch. Specified patch version: \
                 apps/v1beta1, expected: apps/v1"
                    .into(),
            )),
        ),
        apply(
            "missing apiVersion",
            deployment(),
            r#"{"kind":"Deployment","metadata":{"name":"web"}}"#,
            Want::AnyBadRequest,
        ),
        apply(
            "missing kind",
            deployment(),
            r#"{"apiVersion":"apps/v1","metadata":{"name":"web"}}"#,
            Want::AnyBadRequest,
        ),
        apply(
            "kind of another resource",
            deployment(),
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web"}}"#,
            Want::AnyBadRequest,
        ),
        apply(
            "managedFields in the configuration",
            deployment(),
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","managedFields":[{"manager":"x"}]}}"#,
            Want::Error(PatchError::BadRequest("metadata.managedFields must be nil".into())),
        ),
        apply("invalid YAML", deployment(), "a: [b\n", Want::AnyBadRequest),
        apply("a YAML list", deployment(), "- a\n- b\n", Want::AnyBadRequest),
        apply("an empty body", deployment(), "", Want::AnyBadRequest),
    ]);
}
