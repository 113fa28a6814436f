//! For each command recorded in shared/reference/kubectl-protocol-transcripts.txt, the request
//! sequence kube-sim sees (method, path, query, answer code) matches the recording. kube-sim
//! serves aggregated discovery, Tables and OpenAPI v3, so apply/create are compared with the
//! `{"openapi":"v3"}` recordings (the `hash=` query of OpenAPI URLs is ignored).

mod common;

use common::{Sim, deployment_yaml, node_yaml};

fn normalise(line: &str) -> String {
    // `/openapi/v3/apis/apps/v1?hash=X&timeout=32s` → `...?timeout=32s`
    match line.split_once("hash=") {
        Some((head, tail)) => {
            let rest = tail.split_once('&').map(|(_, r)| r).unwrap_or("");
            format!("{head}{rest}").replace("?  ", "? ").replace("? ->", " ->")
        }
        None => line.to_string(),
    }
}

async fn check(sim: &Sim, args: &[&str], expected_stdout: &str, expected: &[&str]) {
    let mark = sim.mark();
    let run = sim.kubectl(args).await.ok();
    assert_eq!(run.stdout.trim_end(), expected_stdout, "stdout of kubectl {args:?}; stderr:\n{}", run.stderr);
    let seen: Vec<String> = sim
        .requests_since(mark)
        .iter()
        .map(|r| {
            let target = if r.query.is_empty() { r.path.clone() } else { format!("{}?{}", r.path, r.query) };
            normalise(&format!("{} {} -> {}", r.method, target, r.code))
        })
        .collect();
    let expected: Vec<String> = expected.iter().map(|l| normalise(l)).collect();
    assert_eq!(seen, expected, "request sequence of kubectl {args:?}");
}

const VERSION: &str = "GET /version?timeout=5s -> 200";
const API: &str = "GET /api?timeout=32s -> 200";
const APIS: &str = "GET /apis?timeout=32s -> 200";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version() {
    let sim = Sim::start().await;
    check(
        &sim,
        &["version"],
        "Client Version: v1.32.4-dispatcher\nKustomize Version: v5.5.0\nServer Version: v1.32.0-kube-sim",
        &[VERSION, "GET /version?timeout=32s -> 200"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_pods_and_get_pdb() {
    let sim = Sim::start().await;
    check(
        &sim,
        &["get", "pods"],
        "",
        &[VERSION, API, APIS, "GET /api/v1/namespaces/default/pods?limit=500 -> 200"],
    )
    .await;
    // The discovery cache is warm now: no /api, /apis.
    check(
        &sim,
        &["get", "pdb"],
        "",
        &[VERSION, "GET /apis/policy/v1/namespaces/default/poddisruptionbudgets?limit=500 -> 200"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_raw_metrics() {
    let sim = Sim::start().await;
    let mark = sim.mark();
    let run = sim.kubectl(&["get", "--raw", "/metrics"]).await.ok();
    assert!(run.stdout.starts_with("# HELP apiserver_request_total"), "{}", run.stdout);
    let lines = common::request_lines(&sim.requests_since(mark));
    assert_eq!(lines, ["GET /version?timeout=5s", "GET /metrics"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_and_uncordon() {
    let sim = Sim::start().await;
    sim.seed(&node_yaml("node-1")).await;
    check(
        &sim,
        &["uncordon", "node-1"],
        "node/node-1 already uncordoned",
        &[VERSION, API, APIS, "GET /api/v1/nodes/node-1 -> 200"],
    )
    .await;
    check(
        &sim,
        &["cordon", "node-1"],
        "node/node-1 cordoned",
        &[VERSION, "GET /api/v1/nodes/node-1 -> 200", "PATCH /api/v1/nodes/node-1 -> 200"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_both_paths() {
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    check(
        &sim,
        &["scale", "deployment", "web", "--replicas=3", "--current-replicas=2"],
        "deployment.apps/web scaled",
        &[
            VERSION,
            API,
            APIS,
            "GET /apis/apps/v1/namespaces/default/deployments/web -> 200",
            "GET /apis/apps/v1/namespaces/default/deployments/web/scale -> 200",
            "PUT /apis/apps/v1/namespaces/default/deployments/web/scale -> 200",
        ],
    )
    .await;
    check(
        &sim,
        &["scale", "deployment", "web", "--replicas=5"],
        "deployment.apps/web scaled",
        &[
            VERSION,
            "GET /apis/apps/v1/namespaces/default/deployments/web -> 200",
            "PATCH /apis/apps/v1/namespaces/default/deployments/web/scale -> 200",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotate() {
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    check(
        &sim,
        &["annotate", "deployment", "web", "team=core"],
        "deployment.apps/web annotated",
        &[
            VERSION,
            API,
            APIS,
            "GET /apis/apps/v1/namespaces/default/deployments/web -> 200",
            "PATCH /apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl-annotate -> 200",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_create_then_update() {
    let sim = Sim::start().await;
    let file = sim.write("manifests/deploy.yaml", &deployment_yaml("api", 3));
    let file = file.to_str().expect("utf-8");
    check(&sim, &["apply", "-f", file], "deployment.apps/api created", &[
        VERSION,
        "GET /openapi/v3?timeout=32s -> 200",
        "GET /openapi/v3/apis/apps/v1?timeout=32s -> 200",
        API, APIS,
        "GET /apis/apps/v1/namespaces/default/deployments/api -> 404",
        "POST /apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-client-side-apply&fieldValidation=Strict -> 201",
    ]).await;
    sim.write("manifests/deploy.yaml", &deployment_yaml("api", 4));
    check(&sim, &["apply", "-f", file], "deployment.apps/api configured", &[
        VERSION,
        "GET /openapi/v3?timeout=32s -> 200",
        "GET /openapi/v3/apis/apps/v1?timeout=32s -> 200",
        "GET /apis/apps/v1/namespaces/default/deployments/api -> 200",
        "GET /openapi/v2?timeout=32s -> 404",
        "PATCH /apis/apps/v1/namespaces/default/deployments/api?fieldManager=kubectl-client-side-apply&fieldValidation=Strict -> 200",
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_validate_false() {
    let sim = Sim::start().await;
    let file = sim.write("manifests/deploy.yaml", &deployment_yaml("api", 3));
    check(&sim, &["apply", "--validate=false", "-f", file.to_str().expect("utf-8")], "deployment.apps/api created", &[
        VERSION, API, APIS,
        "GET /apis/apps/v1/namespaces/default/deployments/api -> 404",
        "POST /apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-client-side-apply&fieldValidation=Ignore -> 201",
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_server_side() {
    let sim = Sim::start().await;
    let file = sim.write("manifests/deploy.yaml", &deployment_yaml("api", 3));
    check(&sim, &["apply", "--server-side", "-f", file.to_str().expect("utf-8")], "deployment.apps/api serverside-applied", &[
        VERSION,
        "GET /openapi/v3?timeout=32s -> 200",
        "GET /openapi/v3/apis/apps/v1?timeout=32s -> 200",
        API, APIS,
        "PATCH /apis/apps/v1/namespaces/default/deployments/api?fieldManager=kubectl&fieldValidation=Strict&force=false -> 201",
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_file_and_generators() {
    let sim = Sim::start().await;
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: api-pdb\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: api\n";
    let file = sim.write("manifests/pdb.yaml", pdb);
    check(&sim, &["create", "-f", file.to_str().expect("utf-8")], "poddisruptionbudget.policy/api-pdb created", &[
        VERSION,
        "GET /openapi/v3?timeout=32s -> 200",
        "GET /openapi/v3/apis/policy/v1?timeout=32s -> 200",
        API, APIS,
        "POST /apis/policy/v1/namespaces/default/poddisruptionbudgets?fieldManager=kubectl-create&fieldValidation=Strict -> 201",
    ]).await;
    check(
        &sim,
        &["create", "namespace", "team-b"],
        "namespace/team-b created",
        &[VERSION, "POST /api/v1/namespaces?fieldManager=kubectl-create&fieldValidation=Strict -> 201"],
    )
    .await;
    check(&sim, &["create", "configmap", "c2", "--from-literal=k=v"], "configmap/c2 created", &[
        VERSION, "POST /api/v1/namespaces/default/configmaps?fieldManager=kubectl-create&fieldValidation=Strict -> 201",
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_with_disable_eviction_deletes_with_protobuf_options() {
    let sim = Sim::start().await;
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-abc-1\n  namespace: default\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: ReplicaSet\n    name: web-abc\n    uid: 6d1c2f3e-0000-4000-8000-000000000001\n    controller: true\nspec:\n  nodeName: node-1\n  containers:\n  - name: main\n    image: example/web:1.0\nstatus:\n  phase: Running\n";
    sim.seed(&format!("{}---\n{pod}", node_yaml("node-1"))).await;
    check(
        &sim,
        &[
            "drain",
            "node-1",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--disable-eviction",
            "--timeout=60s",
        ],
        "node/node-1 cordoned\npod/web-abc-1 deleted\nnode/node-1 drained",
        &[
            VERSION,
            API,
            APIS,
            "GET /api/v1/nodes/node-1 -> 200",
            "PATCH /api/v1/nodes/node-1 -> 200",
            "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&limit=500 -> 200",
            "DELETE /api/v1/namespaces/default/pods/web-abc-1 -> 200",
            "GET /api/v1/namespaces/default/pods/web-abc-1 -> 404",
        ],
    )
    .await;
}
