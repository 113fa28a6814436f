//! Cluster benchmark: `--nodes 100` with 1,000 Deployments × 5 replicas and one PDB each,
//! seeded before the controllers start; measures the time until every pod is Ready and every
//! PDB status is correct.
//!
//! `cargo run --release -p kube-sim --example cluster_bench -- [NODES] [DEPLOYMENTS] [REPLICAS] [NAMESPACES]`

use std::time::{Duration, Instant};

use kube_sim::{Cluster, ClusterBehaviour, Gvr, ListOptions, Server, ServerOptions};
use serde_json::{Value, json};

fn arg(index: usize, default: usize) -> Result<usize, String> {
    match std::env::args().nth(index) {
        Some(a) => a.parse().map_err(|e| format!("argument {index} ({a:?}): {e}")),
        None => Ok(default),
    }
}

fn objects(deployments: usize, replicas: usize, namespaces: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for n in 0..namespaces {
        out.push(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("bench-{n}")}}),
        );
    }
    for i in 0..deployments {
        let ns = format!("bench-{}", i % namespaces);
        let app = format!("app-{i}");
        out.push(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": app, "namespace": ns, "labels": {"app": app}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"labels": {"app": app}},
                    "spec": {"containers": [{"name": "main", "image": "example/app:1.0"}]}}}}));
        out.push(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": ns},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}}}));
    }
    out
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// (ready pods, correct PDBs)
fn progress(cluster: &Cluster, replicas: usize) -> Result<(usize, usize), String> {
    let all = ListOptions::default();
    let pods = cluster.list(&Gvr::new("", "v1", "pods"), None, &all).map_err(|e| e.to_string())?;
    let pdbs = cluster
        .list(&Gvr::new("policy", "v1", "poddisruptionbudgets"), None, &all)
        .map_err(|e| e.to_string())?;
    let r = replicas as i64;
    let correct = pdbs
        .items
        .iter()
        .filter(|p| {
            let s = &p["status"];
            s["observedGeneration"] == p["metadata"]["generation"]
                && s["expectedPods"] == r
                && s["desiredHealthy"] == r - 1
                && s["currentHealthy"] == r
                && s["disruptionsAllowed"] == 1
        })
        .count();
    Ok((pods.items.iter().filter(|p| ready(p)).count(), correct))
}

async fn run() -> Result<(), String> {
    let (nodes, deployments, replicas, namespaces) = (arg(1, 100)?, arg(2, 1000)?, arg(3, 5)?, arg(4, 100)?);
    let behaviour = ClusterBehaviour { nodes, ..ClusterBehaviour::default() };
    let dir = std::env::temp_dir().join(format!("kube-sim-bench-{}", std::process::id()));
    let options = ServerOptions::new(dir.join("kubeconfig")).with_behaviour(behaviour.clone());
    let cluster = Cluster::new(behaviour.cluster_config(options.cluster.clone()));
    let seeded = kube_sim::seed::apply(&cluster, objects(deployments, replicas, namespaces))
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let server = Server::start_with(options, cluster.clone()).await.map_err(|e| e.to_string())?;
    let want_pods = deployments * replicas;
    let mut last = (0, 0);
    while last != (want_pods, deployments) {
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!("not converged after 300 s: {last:?}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        last = progress(&cluster, replicas)?;
        if std::env::var_os("BENCH_TRACE").is_some() {
            let pods = cluster
                .store()
                .count(&kube_sim::store::StorageKey { group: String::new(), plural: "pods".into() });
            let key = kube_sim::store::StorageKey { group: String::new(), plural: "pods".into() };
            let bound =
                cluster.store().list(&key, None, None, 0, &|p| p["spec"]["nodeName"].is_string()).items.len();
            let running =
                cluster.store().list(&key, None, None, 0, &|p| p["status"]["phase"] == "Running").items.len();
            eprintln!(
                "{:>6.2} s: {pods} pods, {bound} bound, {running} running, {} ready, {} PDBs correct",
                started.elapsed().as_secs_f64(),
                last.0,
                last.1
            );
        }
    }
    let took = started.elapsed();
    println!(
        "nodes={nodes} deployments={deployments} replicas={replicas} namespaces={namespaces} seeded_objects={seeded}: \
         {want_pods} pods Ready and {deployments} PDBs correct in {:.2} s (pod ready delay {:?})",
        took.as_secs_f64(),
        behaviour.pod_ready_delay
    );
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
