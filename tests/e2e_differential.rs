//! kube-sim measured against the real apiserver (issue 21, first slice): the same raw requests
//! to both, each response normalised (uids, resourceVersions, timestamps, managedFields, and the
//! status controllers race to write) and compared: the status code and the body, field by field.
//! Every difference is named `scenario/step` and must be listed in tests/kube-sim/README.md
//! ("Differences measured against the real apiserver"): a new one fails, a fixed one must go.

use std::collections::BTreeSet;

use e2e_support as support;
use http::Request;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use support::{ClusterShape, cluster::ControlPlane};

/// One request of a scenario.
struct Step {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    content_type: &'static str,
    body: Option<Value>,
}

fn step(name: &'static str, method: &'static str, path: &'static str, body: Option<Value>) -> Step {
    Step { name, method, path, content_type: "application/json", body }
}

const NS: &str = "/api/v1/namespaces";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/diff/deployments";
const PDBS: &str = "/apis/policy/v1/namespaces/diff/poddisruptionbudgets";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "example/web:1.0"}]}}}})
}

fn pdb(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec})
}

/// The scenarios, in order (each may rely on the ones before).
fn scenarios() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "namespace",
            vec![step(
                "create",
                "POST",
                NS,
                Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diff"}})),
            )],
        ),
        (
            "deployment",
            vec![
                step("create", "POST", DEPLOYMENTS, Some(deployment("web", 2))),
                step("create-again", "POST", DEPLOYMENTS, Some(deployment("web", 2))),
                step("get-missing", "GET", "/apis/apps/v1/namespaces/diff/deployments/nope", None),
                step(
                    "stale-update",
                    "PUT",
                    "/apis/apps/v1/namespaces/diff/deployments/web",
                    Some({
                        let mut d = deployment("web", 3);
                        d["metadata"]["resourceVersion"] = json!("1");
                        d
                    }),
                ),
                step(
                    "in-missing-namespace",
                    "POST",
                    "/apis/apps/v1/namespaces/ghost/deployments",
                    Some(deployment("web", 1)),
                ),
                step(
                    "dry-run",
                    "POST",
                    "/apis/apps/v1/namespaces/diff/deployments?dryRun=All",
                    Some(deployment("dry", 1)),
                ),
                step("dry-run-not-stored", "GET", "/apis/apps/v1/namespaces/diff/deployments/dry", None),
                Step {
                    content_type: "application/merge-patch+json",
                    ..step(
                        "merge-patch",
                        "PATCH",
                        "/apis/apps/v1/namespaces/diff/deployments/web",
                        Some(json!({"spec": {"replicas": 3}})),
                    )
                },
                step(
                    "no-selector",
                    "POST",
                    DEPLOYMENTS,
                    Some(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
                    "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}}})),
                ),
            ],
        ),
        (
            "pdb",
            vec![
                step(
                    "create",
                    "POST",
                    PDBS,
                    Some(pdb("web", json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}))),
                ),
                step(
                    "both-fields",
                    "POST",
                    PDBS,
                    Some(pdb(
                        "both",
                        json!({"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
                    )),
                ),
                step("negative", "POST", PDBS, Some(pdb("neg", json!({"minAvailable": -1})))),
                step("bad-percent", "POST", PDBS, Some(pdb("pct", json!({"maxUnavailable": "150%"})))),
                step(
                    "update-without-resource-version",
                    "PUT",
                    "/apis/policy/v1/namespaces/diff/poddisruptionbudgets/web",
                    Some(pdb("web", json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}))),
                ),
                step("delete", "DELETE", "/apis/policy/v1/namespaces/diff/poddisruptionbudgets/web", None),
                step(
                    "delete-missing",
                    "DELETE",
                    "/apis/policy/v1/namespaces/diff/poddisruptionbudgets/web",
                    None,
                ),
            ],
        ),
        (
            "eviction",
            vec![step(
                "of-a-missing-pod",
                "POST",
                "/api/v1/namespaces/diff/pods/nope/eviction",
                Some(
                    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "nope", "namespace": "diff"}}),
                ),
            )],
        ),
    ]
}

/// Drops what differs between any two servers (or runs): identities, times, versions, the
/// fields the apiserver manages, and a Deployment's status (its controller races to write it).
fn normalise(mut body: Value) -> Value {
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"] {
            meta.remove(key);
        }
    }
    // The deployment controller writes it at its own pace.
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut)
    {
        annotations.remove("deployment.kubernetes.io/revision");
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
    if (body["kind"] == "Deployment" || body["kind"] == "PodDisruptionBudget")
        && let Some(m) = body.as_object_mut()
    {
        m.remove("status");
    }
    if let Some(details) = body.get_mut("details").and_then(Value::as_object_mut) {
        details.remove("uid");
    }
    body
}

/// Paths where `a` and `b` differ (`/spec/replicas: 2 ≠ 3`).
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                differences(
                    &format!("{path}/{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}/{i}"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: kube-sim {a} ≠ real {b}")),
        _ => {}
    }
}

async fn client_of(kubeconfig: &std::path::Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

async fn send(client: &kube::Client, step: &Step) -> (u16, Value) {
    let body = step.body.as_ref().map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let request = Request::builder()
        .method(step.method)
        .uri(step.path)
        .header(http::header::CONTENT_TYPE, step.content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .expect("request");
    let response = client.send(request.map(kube::client::Body::from)).await.expect("a response");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, normalise(body))
}

/// The differences listed in kube-sim's README: `diff:scenario/step` tokens.
fn listed() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kube-sim/README.md"))
        .expect("README");
    readme.split('`').filter_map(|t| t.strip_prefix("diff:")).map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_sim_answers_as_the_real_apiserver_or_the_difference_is_listed() {
    let plane =
        tokio::task::spawn_blocking(|| ControlPlane::start(&ClusterShape { nodes: 1, pods_per_node: 10 }))
            .await
            .expect("the control plane starts");
    let dir = tempfile::tempdir().expect("temp dir");
    // Both behave as clusters: controllers, a node, the eviction subresource.
    let behaviour = kube_sim::controllers::ClusterBehaviour { nodes: 1, ..Default::default() };
    let options = kube_sim::ServerOptions::new(dir.path().join("kubeconfig")).with_behaviour(behaviour);
    let sim = kube_sim::Server::start(options).await.expect("kube-sim");
    let (sim_client, real_client) =
        (client_of(sim.kubeconfig_path()).await, client_of(&plane.kubeconfig_path()).await);
    let mut found = BTreeSet::new();
    let mut report = Vec::new();
    let mut steps = 0;
    for (scenario, list) in scenarios() {
        for step in list {
            steps += 1;
            let (sim_status, sim_body) = send(&sim_client, &step).await;
            let (real_status, real_body) = send(&real_client, &step).await;
            let mut diffs = Vec::new();
            if sim_status != real_status {
                diffs.push(format!("status: kube-sim {sim_status} ≠ real {real_status}"));
            }
            differences("", &sim_body, &real_body, &mut diffs);
            if !diffs.is_empty() {
                let id = format!("{scenario}/{}", step.name);
                report.push(format!("{id} ({} {}):\n  {}", step.method, step.path, diffs.join("\n  ")));
                found.insert(id);
            }
        }
    }
    let listed = listed();
    let unlisted: Vec<&String> = found.difference(&listed).collect();
    let fixed: Vec<&String> = listed.difference(&found).collect();
    assert!(
        unlisted.is_empty() && fixed.is_empty(),
        "{steps} steps; differences not listed in tests/kube-sim/README.md: {unlisted:?}; listed but no longer found: {fixed:?}\n{}",
        report.join("\n")
    );
}
