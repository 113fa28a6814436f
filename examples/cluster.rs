//! `make cluster`: starts the real control plane of `tests/cluster/` on loopback (the one the
//! end-to-end tests use), prints how to reach it, and stops everything on Ctrl-C or SIGTERM.
//!
//! `NODES=5 PODS_PER_NODE=20 make cluster` shapes it; `COMPONENT_QPS=500` raises the
//! controller-manager's and scheduler's API rate (for tens of thousands of pods);
//! `CLUSTER_VERSION=oldest` runs the oldest supported Kubernetes (tests/cluster/versions.env).

use e2e_support::cluster;

fn number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let shape =
        cluster::ClusterShape { nodes: number("NODES", 3), pods_per_node: number("PODS_PER_NODE", 110) };
    eprintln!("starting the control plane {} with {} nodes ...", cluster::version_to_run(), shape.nodes);
    let options = cluster::ClusterOptions {
        component_qps: std::env::var("COMPONENT_QPS").ok().and_then(|v| v.parse().ok()),
        ..Default::default()
    };
    let plane = cluster::ControlPlane::start_with(&shape, &options);
    println!(
        "The control plane is up at {}.\n\n  export KUBECONFIG={}\n  alias kubectl={}\n  kubectl get nodes\n\n\
         Audit log (JSON lines): {}\nComponent logs: next to it (etcd.log, kube-apiserver.log, ...).\n\
         Press Ctrl-C to stop every process.",
        plane.server,
        plane.kubeconfig_path().display(),
        plane.bin_dir().join("kubectl").display(),
        plane.audit_log_path().display(),
    );
    // SIGTERM too (scripts stop it with `kill`): the processes stop and the directory goes
    // when `plane` drops, not left behind (~1 GB after a 10,000-Deployment run).
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    eprintln!("stopping ...");
}
