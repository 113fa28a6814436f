//! `kube-sim --listen 127.0.0.1:0 --kubeconfig PATH [--seed FILE_OR_DIR]... [--nodes N ...]`

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kube_sim::{ClusterConfig, Server, ServerOptions};

/// An in-memory Kubernetes API server.
#[derive(Debug, Parser)]
#[command(name = "kube-sim", version)]
struct Args {
    /// Address to listen on (port 0 = ephemeral).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write the kubeconfig (CA data, bearer token, namespace `default`).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Manifest file or directory (YAML/JSON, multi-document, List kinds) applied at start.
    #[arg(long)]
    seed: Vec<PathBuf>,
    /// Number of watch events kept for resuming watches.
    #[arg(long, default_value_t = 100_000)]
    watch_history: usize,
    /// Behave like a cluster with nodes `node-1`..`node-N` (controllers, kubelet, scheduler,
    /// eviction, admission webhooks). Without it (and without `--controllers`): a pure API server.
    #[arg(long)]
    nodes: Option<usize>,
    /// Run the cluster behaviour even without `--nodes` (then 3 nodes).
    #[arg(long)]
    controllers: bool,
    /// Pod capacity per node.
    #[arg(long, default_value_t = 110)]
    pods_per_node: usize,
    /// Time from a pod starting to it becoming Ready (e.g. `1s`, `500ms`).
    #[arg(long, default_value = "1s", value_parser = kube_sim::controllers::parse_duration)]
    pod_ready_delay: std::time::Duration,
    /// Factor applied to termination grace periods (0.1 turns 30 s into 3 s).
    #[arg(long, default_value_t = 1.0)]
    termination_grace_scale: f64,
    /// Route a webhook `clientConfig.service` to a local address: `NAMESPACE/NAME=HOST:PORT`.
    #[arg(long, value_parser = kube_sim::controllers::parse_service_endpoint)]
    service_endpoint: Vec<((String, String), SocketAddr)>,
}

impl Args {
    fn behaviour(&self) -> Result<Option<kube_sim::ClusterBehaviour>, String> {
        if self.nodes.is_none() && !self.controllers {
            return Ok(None);
        }
        if !(self.termination_grace_scale.is_finite() && self.termination_grace_scale >= 0.0) {
            return Err(format!(
                "--termination-grace-scale must be a non-negative number, got {}",
                self.termination_grace_scale
            ));
        }
        let defaults = kube_sim::ClusterBehaviour::default();
        Ok(Some(kube_sim::ClusterBehaviour {
            nodes: self.nodes.unwrap_or(defaults.nodes),
            pods_per_node: self.pods_per_node,
            pod_ready_delay: self.pod_ready_delay,
            termination_grace_scale: self.termination_grace_scale,
            service_endpoints: self.service_endpoint.iter().cloned().collect(),
            ..defaults
        }))
    }
}

async fn run(args: Args) -> Result<(), String> {
    let behaviour = args.behaviour()?;
    let mut config = ClusterConfig { history_limit: args.watch_history, ..ClusterConfig::default() };
    if let Some(b) = &behaviour {
        config = b.cluster_config(config);
    }
    let cluster = kube_sim::Cluster::new(config.clone());
    let objects = kube_sim::seed::load(&args.seed).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let count = kube_sim::seed::apply(&cluster, objects).await.map_err(|e| e.to_string())?;
    if count > 0 {
        eprintln!("kube-sim: seeded {count} objects in {:.2?}", started.elapsed());
    }
    let options =
        ServerOptions { listen: args.listen, kubeconfig: args.kubeconfig, cluster: config, behaviour };
    let server = Server::start_with(options, cluster).await.map_err(|e| e.to_string())?;
    println!("kube-sim ready {}", server.url());
    wait_for_signal().await?;
    server.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> Result<(), String> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot install the SIGTERM handler: {e}"))?;
    tokio::select! {
        _ = term.recv() => {}
        r = tokio::signal::ctrl_c() => r.map_err(|e| format!("cannot wait for SIGINT: {e}"))?,
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kube-sim: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kube-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
