//! Scale: 10,000 Deployments (+ their ReplicaSets, PDBs) and 50,000 Pods in memory; seeding and
//! a full pod list. Prints the figures recorded in BENCHMARKS.md.

mod common;

use std::time::{Duration, Instant};

use common::Sim;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

const DEPLOYMENTS: usize = 10_000;
const PODS_PER_DEPLOYMENT: usize = 5;

/// 10,000 deployments' worth of objects: per app a Deployment, a ReplicaSet, a PDB and 5 Pods
/// spread over 100 namespaces and 500 nodes.
fn fixture() -> Vec<Value> {
    let mut out = Vec::with_capacity(DEPLOYMENTS * (3 + PODS_PER_DEPLOYMENT));
    for i in 0..DEPLOYMENTS {
        let ns = format!("ns-{}", i % 100);
        let app = format!("app-{i}");
        let labels = json!({"app": app});
        let template = json!({"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "main", "image": "example/app:1.0", "ports": [{"containerPort": 8080}]}]}});
        out.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app, "namespace": ns, "labels": labels},
            "spec": {"replicas": PODS_PER_DEPLOYMENT, "selector": {"matchLabels": labels}, "template": template},
            "status": {"replicas": PODS_PER_DEPLOYMENT, "readyReplicas": PODS_PER_DEPLOYMENT}}));
        let rs = format!("{app}-7d9f8b6c5");
        out.push(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": rs, "namespace": ns, "labels": labels},
            "spec": {"replicas": PODS_PER_DEPLOYMENT, "selector": {"matchLabels": labels}, "template": template}}));
        out.push(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": ns},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}}));
        for p in 0..PODS_PER_DEPLOYMENT {
            out.push(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{rs}-{p:05}"), "namespace": ns, "labels": labels,
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "00000000-0000-4000-8000-000000000000", "controller": true}]},
                "spec": {"nodeName": format!("node-{}", (i * PODS_PER_DEPLOYMENT + p) % 500),
                    "containers": [{"name": "main", "image": "example/app:1.0"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_pods_seed_and_list() {
    let sim = Sim::start().await;
    let objects = fixture();
    let count = objects.len();
    let started = Instant::now();
    kube_sim::seed::apply(sim.cluster(), objects).await.expect("seed");
    let seeded = started.elapsed();

    let started = Instant::now();
    let gvr = kube_sim::Gvr::new("", "v1", "pods");
    let in_process =
        sim.cluster().list(&gvr, None, &kube_sim::ListOptions::default()).expect("list").items.len();
    let listed_in_process = started.elapsed();
    assert_eq!(in_process, DEPLOYMENTS * PODS_PER_DEPLOYMENT);

    let client = sim.client().await;
    let started = Instant::now();
    let request = http::Request::get("/api/v1/pods").body(Vec::new()).expect("request");
    let raw = client.request_text(request).await.expect("raw list");
    let listed_raw = started.elapsed();

    let api: Api<Pod> = Api::all(client);
    let started = Instant::now();
    let pods = api.list(&ListParams::default()).await.expect("list");
    let listed = started.elapsed();
    assert_eq!(pods.items.len(), DEPLOYMENTS * PODS_PER_DEPLOYMENT);

    let started = Instant::now();
    let on_node = api.list(&ListParams::default().fields("spec.nodeName=node-7")).await.expect("list");
    let selected = started.elapsed();
    assert_eq!(on_node.items.len(), DEPLOYMENTS * PODS_PER_DEPLOYMENT / 500);
    println!(
        "kube-sim scale: seeded {count} objects in-process in {seeded:.2?}; full pod list in-process {listed_in_process:.2?}, \
         over HTTPS as bytes ({} MB) {listed_raw:.2?}, over HTTPS decoded by kube-rs into typed Pods {listed:.2?}; \
         field-selected {} pods in {selected:.2?}",
        raw.len() / 1_000_000,
        on_node.items.len()
    );
    // Generous bounds so a debug build on a loaded 2-core machine passes; release figures are in BENCHMARKS.md.
    assert!(seeded < Duration::from_secs(180), "seeding took {seeded:?}");
    assert!(listed < Duration::from_secs(120), "listing took {listed:?}");
}

#[test]
fn binary_seed_of_ten_thousand_deployments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = dir.path().join("seed.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": fixture()});
    std::fs::write(&seed, serde_json::to_vec(&list).expect("json")).expect("write seed");
    let started = Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("--seed")
        .arg(&seed)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kube-sim starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("ready line");
    let ready = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("kube-sim ready "), "{line}");
    println!(
        "kube-sim scale: binary --seed of 10,000 deployments' worth (80,000 objects) ready in {ready:.2?}"
    );
    assert!(ready < Duration::from_secs(300), "seeding took {ready:?}");
}
