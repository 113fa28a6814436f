//! `eviction-autoscaler`: thin wiring. Parse the command line, load and validate the
//! configuration, then hand over to the webhook and controller crates.

use std::{net::IpAddr, path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use eviction_autoscaler_controller::audit;
use eviction_autoscaler_controller::cleanup::{OwnObject, ProductDeployment};
use eviction_autoscaler_shared::config::{Config, LogFormat, SettingsArgs};

mod reload;

/// Keeps node drains from being blocked by PodDisruptionBudgets, and Deployments from being left
/// without one.
#[derive(Parser, Debug)]
#[command(name = "eviction-autoscaler", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the admission webhook and the controller.
    Run(SettingsArgs),
    /// Print the effective configuration (after flags, env and --config) as JSON, and exit.
    Config(SettingsArgs),
    /// Print the EvictionAutoScaler CustomResourceDefinition as YAML.
    Crd,
    /// Write a CA and a serving certificate signed by it (ca.crt, tls.crt, tls.key) for local
    /// runs, tests and the demo. Clusters use cert-manager or the self-managed Secret.
    Certs(CertsArgs),
    /// Before uninstall: revert active surges, delete every PDB carrying
    /// `ownedBy: EvictionAutoScaler` and remove the EvictionAutoScaler objects. Idempotent.
    /// Stop the product first (or let --stop-deployment do it): a running one recreates its PDBs.
    Cleanup(CleanupArgs),
    /// Will a drain stall? Every PodDisruptionBudget that blocks one, why, and whether
    /// eviction-autoscaler's surge opens it; per node, what a drain now would stall on.
    /// Read-only. Exit code 0: every drain would complete; 1: some would stall; 2: error.
    Audit(AuditArgs),
    /// Print the version.
    Version,
}

#[derive(clap::Args, Debug)]
struct CleanupArgs {
    /// List what would be done and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// First scale the product's own Deployment (NAMESPACE/NAME) to 0 and wait until its pods
    /// are gone (at most 2 minutes), so no running replica undoes the cleanup; last, remove
    /// what it made for itself there: its Lease and its self-managed certificate Secret.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    stop_deployment: Option<ProductDeployment>,
    /// The product's settings, as `run` takes them (only their Lease and Secret names and
    /// namespaces are read, with --stop-deployment; its namespace stands in for the pod's).
    #[command(
        flatten,
        next_help_heading = "The product's settings, as `run` takes them (with --stop-deployment: where its Lease and Secret are)"
    )]
    settings: SettingsArgs,
}

#[derive(clap::Args, Debug)]
struct AuditArgs {
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,
    /// One namespace (default: the current context's namespace).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Only this node's drain.
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = AuditOutput::Table)]
    output: AuditOutput,
    /// The installed product's ConfigMap (its settings: scope, zero-surge override).
    #[arg(long, value_name = "NAMESPACE/NAME", default_value = audit::INSTALLED_CONFIG_MAP)]
    config_map: audit::ConfigMapName,
    /// Print the JSON Schema of `-o json` and exit.
    #[arg(long, exclusive = true)]
    schema: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum AuditOutput {
    /// Aligned columns for people.
    Table,
    /// JSON for scripts, in the shape `--schema` prints.
    Json,
}

#[derive(clap::Args, Debug)]
struct CertsArgs {
    /// Directory to write ca.crt, tls.crt and tls.key into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// DNS names of the serving certificate (e.g. eviction-autoscaler.NS.svc).
    #[arg(long = "dns", value_name = "NAME")]
    dns: Vec<String>,
    /// IP addresses of the serving certificate (e.g. 127.0.0.1).
    #[arg(long = "ip", value_name = "ADDR")]
    ip: Vec<IpAddr>,
}

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    let result = match command {
        Command::Audit(args) => return audit(args),
        Command::Run(args) => load_config(&args).and_then(|(config, file)| {
            // The file is followed for changes; flags and environment keep their values.
            let follow = args.config.clone().zip(file).map(|(path, text)| (args, path, text));
            run(config, follow)
        }),
        Command::Config(args) => load_config(&args).and_then(|(config, _)| {
            println!("{}", serde_json::to_string_pretty(&config)?);
            Ok(())
        }),
        Command::Crd => {
            print!("{}", eviction_autoscaler_shared::crd::crd_yaml());
            Ok(())
        }
        Command::Certs(CertsArgs { out, dns, ip }) => {
            eviction_autoscaler_webhook::certs::generate(&out, &dns, &ip)
                .map(|_| {
                    println!("wrote {0}/ca.crt, {0}/tls.crt, {0}/tls.key", out.display());
                })
                .map_err(Into::into)
        }
        Command::Cleanup(CleanupArgs { dry_run, stop_deployment, settings }) => {
            cleanup(dry_run, stop_deployment, settings)
        }
        Command::Version => {
            println!("eviction-autoscaler {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `cleanup`: the controller crate prints one line per step; the summary closes the output.
fn cleanup(
    dry_run: bool,
    product: Option<ProductDeployment>,
    mut settings: SettingsArgs,
) -> anyhow::Result<()> {
    let own = match &product {
        Some(product) => {
            // Run by hand, the product's namespace is where its pods ran.
            settings.pod_namespace.get_or_insert_with(|| product.namespace.clone());
            OwnObject::all(&load_config(&settings)?.0, &product.namespace)
        }
        None => Vec::new(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let client = kube_client().await?;
        let product = product.as_ref().map(|product| (product, own.as_slice()));
        let report = eviction_autoscaler_controller::cleanup::run(client, dry_run, product).await?;
        println!("{}", report.summary());
        Ok(())
    })
}

/// `audit`: exit code 0 when every drain would complete, 1 when some would stall, 2 on errors.
fn audit(args: AuditArgs) -> ExitCode {
    use audit::{Scope, render};
    if args.schema {
        print!("{}", render::SCHEMA);
        return ExitCode::SUCCESS;
    }
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| {
            runtime.block_on(async {
                let client = client_as(http::HeaderValue::from_static(AUDIT_AGENT)).await?;
                let scope = match (args.all_namespaces, args.namespace) {
                    (true, _) => Scope::All,
                    (false, Some(namespace)) => Scope::Namespace(namespace),
                    (false, None) => Scope::Namespace(client.default_namespace().to_owned()),
                };
                Ok(audit::run(client, scope, args.node.as_deref(), &args.config_map).await?)
            })
        });
    match result {
        Ok(audit) => {
            match args.output {
                AuditOutput::Table => print!("{}", render::table(&audit)),
                AuditOutput::Json => println!("{}", render::json(&audit)),
            }
            if audit.report.drains_complete() { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Reads the `--config` file (if any) and resolves every setting; a bad value stops here.
/// Returns the configuration and the file's text.
fn load_config(args: &SettingsArgs) -> anyhow::Result<(Config, Option<String>)> {
    let text = match &args.config {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("config file {}: cannot read", path.display()))?,
        ),
        None => None,
    };
    let source = args.config.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let config = Config::resolve(args, text.as_deref().map(|t| (source.as_str(), t)))?;
    Ok((config, text))
}

/// The `--config` file to follow: the settings given as flags/env, its path, the text read.
type FollowedFile = (SettingsArgs, PathBuf, String);

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log file or collector should get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match format {
        LogFormat::Plain => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Pending signals between the webhook and the controller; beyond this they are dropped and
/// counted (a drain retries every 5 s, so a dropped signal is seen again).
const SIGNAL_QUEUE_CAPACITY: usize = 4096;

/// Pending admitted Deployments and PDBs; beyond this they are dropped (the watch brings them).
const OBJECT_QUEUE_CAPACITY: usize = 1024;

fn run(config: Config, follow: Option<FollowedFile>) -> anyhow::Result<()> {
    init_logging(config.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve(Arc::new(config), follow))
}

/// Starts the webhook, the health port and (unless disabled) the controller; stops all of
/// them on SIGTERM/SIGINT and returns the first error.
async fn serve(config: Arc<Config>, follow: Option<FollowedFile>) -> anyhow::Result<()> {
    use eviction_autoscaler_shared::admission::{AdmissionHandler, IgnoreAdmissions, admission_queue};
    use eviction_autoscaler_shared::health::Readiness;
    use eviction_autoscaler_webhook as webhook;

    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?config, "starting");
    if let Some(warning) = config.not_honoured() {
        tracing::warn!("{warning}");
    }
    let mut registry = prometheus_client::registry::Registry::with_prefix("eviction_autoscaler");
    let readiness = Readiness::new();
    let webhook_metrics = webhook::Metrics::new();
    webhook_metrics.register(&mut registry);
    let shutdown = tokio_util::sync::CancellationToken::new();

    // One client (one connection pool) for the controller and the certificate manager.
    let client = if config.controller_enabled || !config.cert_secret.is_empty() {
        Some(kube_client().await?)
    } else {
        None
    };
    let (controller, handler): (_, Arc<dyn AdmissionHandler>) = match (config.controller_enabled, &client) {
        (true, Some(client)) => {
            let controller = eviction_autoscaler_controller::Controller::new(
                config.clone(),
                client.clone(),
                readiness.clone(),
                &mut registry,
            );
            let (queue, admitted) = admission_queue(SIGNAL_QUEUE_CAPACITY, OBJECT_QUEUE_CAPACITY);
            (Some((controller, admitted)), Arc::new(queue))
        }
        _ => {
            tracing::warn!(
                "controller disabled (--controller-enabled=false): webhook only, nothing is written"
            );
            readiness.set_caches_synced(true);
            (None, Arc::new(IgnoreAdmissions))
        }
    };

    let mut settings = webhook::ServeSettings::new(
        config.webhook_addr,
        config.tls_cert_file.clone(),
        config.tls_key_file.clone(),
    );
    settings.reload_interval = config.tls_reload_interval;
    // Self-managed mode: the certificate comes from the Secret (created if missing) before
    // the webhook binds, so readiness reports it loaded only once a pair is installed.
    let cert_manager = if let Some(client) = client.filter(|_| !config.cert_secret.is_empty()) {
        let namespace = config.namespace_or(client.default_namespace());
        let cert_settings = webhook::self_managed::SelfManagedSettings::new(
            namespace,
            config.cert_secret.clone(),
            config.webhook_service.clone(),
            config.webhook_configuration.clone(),
            config.cert_validity,
        );
        let (manager, pairs) = webhook::self_managed::CertManager::start(
            client,
            cert_settings,
            webhook_metrics.clone(),
            readiness.clone(),
        )
        .await?;
        settings = settings.with_memory_certs(pairs);
        Some(manager)
    } else {
        None
    };
    let server = webhook::WebhookServer::bind(settings, webhook_metrics.clone(), readiness.clone()).await?;
    let health_listener = webhook::bind_health(config.health_addr).await?;
    // The bound addresses, not the requested ones: with port 0 this is how a caller learns them.
    tracing::info!(addr = %server.local_addr()?, "webhook listening (TLS)");
    tracing::info!(addr = %health_listener.local_addr()?, "health listening");
    let app = webhook::router(webhook::WebhookState::new(handler, webhook_metrics));

    let registry = Arc::new(registry);
    let mut tasks = tokio::task::JoinSet::new();
    let stop = shutdown.clone();
    tasks.spawn(async move { server.run(app, stop.cancelled_owned()).await.map_err(anyhow::Error::from) });
    let stop = shutdown.clone();
    let health_readiness = readiness.clone();
    tasks.spawn(async move {
        webhook::serve_health_on(health_listener, registry, health_readiness, stop.cancelled_owned())
            .await
            .map_err(anyhow::Error::from)
    });
    if let Some(manager) = cert_manager {
        let stop = shutdown.clone();
        tasks.spawn(async move {
            manager.run(stop.cancelled_owned()).await;
            Ok(())
        });
    }
    if let (Some((controller, _)), Some((args, path, text))) = (&controller, follow) {
        tokio::spawn(reload::follow(args, path, text, controller.reconfigure_handle()));
    }
    if let Some((controller, admitted)) = controller {
        let stop = shutdown.clone();
        tasks.spawn(async move {
            controller.run(admitted, stop.cancelled_owned()).await.map_err(anyhow::Error::from)
        });
    }

    let stop = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        stop.cancel();
    });

    // The first task to end (error or not) stops the others; the first error is returned.
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        shutdown.cancel();
        let outcome = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if result.is_ok() {
            result = outcome;
        }
    }
    result
}

/// A client from KUBECONFIG / ~/.kube/config / in-cluster, as kube-rs finds it, that names
/// itself and its pod in every request (so audit logs show which replica wrote what).
async fn kube_client() -> anyhow::Result<kube::Client> {
    let pod = std::env::var("POD_NAME").or_else(|_| std::env::var("HOSTNAME")).ok();
    client_as(user_agent(pod.as_deref())).await
}

/// A client like [`kube_client`] sending `agent` as its User-Agent.
async fn client_as(agent: http::HeaderValue) -> anyhow::Result<kube::Client> {
    let mut config = kube::Config::infer()
        .await
        .context("cannot find the cluster (KUBECONFIG, ~/.kube/config or in-cluster config)")?;
    config.headers.push((http::header::USER_AGENT, agent));
    kube::Client::try_from(config).context("cannot build a Kubernetes client")
}

/// The audit's User-Agent: not the product's, so nobody takes its reads for the controller's.
const AUDIT_AGENT: &str = concat!("eviction-autoscaler-audit/", env!("CARGO_PKG_VERSION"));

/// `eviction-autoscaler/<version> (<pod>)`, as kubectl's `kubectl/<version> (<os>/<arch>)`;
/// without the pod part when there is no pod name or it is not a valid header value.
fn user_agent(pod: Option<&str>) -> http::HeaderValue {
    const PRODUCT: &str = concat!("eviction-autoscaler/", env!("CARGO_PKG_VERSION"));
    pod.filter(|p| !p.is_empty())
        .and_then(|p| http::HeaderValue::try_from(format!("{PRODUCT} ({p})")).ok())
        .unwrap_or(http::HeaderValue::from_static(PRODUCT))
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the process");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::user_agent;

    #[test]
    fn the_user_agent_names_the_replica_when_it_can() {
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(user_agent(Some("web-7d4f-x2")), format!("eviction-autoscaler/{version} (web-7d4f-x2)"));
        assert_eq!(user_agent(None), format!("eviction-autoscaler/{version}"));
        assert_eq!(user_agent(Some("")), format!("eviction-autoscaler/{version}"));
        assert_eq!(
            user_agent(Some("bad\nname")),
            format!("eviction-autoscaler/{version}"),
            "no header injection"
        );
    }
}
