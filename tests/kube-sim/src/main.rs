//! `kube-sim --listen 127.0.0.1:0 --kubeconfig PATH [--seed FILE_OR_DIR]...
//! [--service-account-kubeconfig NS/NAME=PATH]... [--nodes N ...]`

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
    /// Write a kubeconfig authenticating as a ServiceAccount: `NAMESPACE/NAME=PATH`
    /// (repeatable; the namespace and ServiceAccount are created when missing).
    #[arg(long, value_parser = parse_service_account_kubeconfig)]
    service_account_kubeconfig: Vec<ServiceAccountKubeconfig>,
}

/// One `--service-account-kubeconfig NAMESPACE/NAME=PATH`.
#[derive(Clone, Debug)]
struct ServiceAccountKubeconfig {
    namespace: String,
    name: String,
    path: PathBuf,
}

fn parse_service_account_kubeconfig(text: &str) -> Result<ServiceAccountKubeconfig, String> {
    let usage = || format!("expected NAMESPACE/NAME=PATH, got {text:?}");
    let (account, path) = text.split_once('=').ok_or_else(usage)?;
    let (namespace, name) = account.split_once('/').ok_or_else(usage)?;
    if namespace.is_empty() || name.is_empty() || path.is_empty() || name.contains('/') {
        return Err(usage());
    }
    Ok(ServiceAccountKubeconfig { namespace: namespace.into(), name: name.into(), path: path.into() })
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
    let options = ServerOptions {
        listen: args.listen,
        kubeconfig: args.kubeconfig.clone(),
        cluster: config,
        behaviour,
    };
    let server = Server::start_with(options, cluster).await.map_err(|e| e.to_string())?;
    for sa in &args.service_account_kubeconfig {
        server
            .ensure_service_account(&sa.namespace, &sa.name)
            .await
            .map_err(|e| format!("cannot create the service account {}/{}: {e}", sa.namespace, sa.name))?;
        server
            .write_service_account_kubeconfig(&sa.namespace, &sa.name, &sa.path)
            .map_err(|e| e.to_string())?;
    }
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

#[cfg(test)]
mod tests {
    use super::parse_service_account_kubeconfig;

    #[test]
    fn service_account_kubeconfig_flags_are_parsed_and_checked() {
        let parsed = parse_service_account_kubeconfig("ea/ea-sa=/tmp/kc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((parsed.namespace.as_str(), parsed.name.as_str()), ("ea", "ea-sa"));
        assert_eq!(parsed.path, std::path::PathBuf::from("/tmp/kc"));
        for bad in ["ea/ea", "ea=/tmp/kc", "/ea=/tmp/kc", "ea/=/tmp/kc", "ea/b=", "a/b/c=/tmp/x"] {
            let err = parse_service_account_kubeconfig(bad).err().unwrap_or_default();
            assert!(err.contains("expected NAMESPACE/NAME=PATH"), "{bad}: {err}");
        }
    }
}
