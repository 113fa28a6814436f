//! Every tunable in one place (ARCHITECTURE.md §3, §4.6).
//!
//! Each setting can come from a flag, an environment variable or the `--config` YAML file
//! (shaped like the AKS extension's `controllerConfig`), with precedence
//! flag > env > file > default. Values are collected as text first and parsed in one place, so
//! a bad value is reported the same way whatever its source: the error names the setting, the
//! value and where it came from, and the process stops.

use std::{collections::BTreeMap, fmt, net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The raw settings as clap sees them (flags and their env vars). `None` = not given.
#[derive(Args, Clone, Debug, Default)]
pub struct SettingsArgs {
    /// YAML file shaped like the AKS extension's `controllerConfig` (re-read on change).
    #[arg(long, env = "EVICTION_AUTOSCALER_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run the controller (false: webhook only). Kill switch compatible with the Go project.
    #[arg(long, env = "CONTROLLER_ENABLED", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub controller_enabled: Option<String>,
    /// Create a default PDB for every in-scope Deployment without one (`pdb.create`).
    #[arg(long, env = "PDB_CREATE", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub pdb_create: Option<String>,
    /// The Go project's PDB floor pinning (`pdbFloorMutation.enabled`): accepted, not honoured (a
    /// PDB eviction-autoscaler did not create is never modified); true is logged as such.
    #[arg(long, env = "ENABLE_PDB_FLOOR_MUTATION", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub pdb_floor_mutation: Option<String>,
    /// Namespaces enabled in opt-in mode, comma separated (`namespaces.actionedNamespaces`).
    #[arg(long, env = "ACTIONED_NAMESPACES", value_name = "NS,NS")]
    pub actioned_namespaces: Option<String>,
    /// Enable every namespace unless annotated off (`namespaces.enabledByDefault`).
    #[arg(long, env = "ENABLED_BY_DEFAULT", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub enabled_by_default: Option<String>,
    /// Surge used when a Deployment's maxSurge is 0 or it uses Recreate (int or percent).
    #[arg(long, env = "ZERO_SURGE_OVERRIDE", value_name = "INT|PERCENT")]
    pub zero_surge_override: Option<String>,
    /// Which evictions surge: `drain` (pods on draining nodes only) or `any`.
    #[arg(long, env = "EVICTION_AUTOSCALER_SURGE_TRIGGER", value_name = "drain|any")]
    pub surge_trigger: Option<String>,
    /// How long after the last signal a surge is held before reverting.
    #[arg(long, env = "EVICTION_AUTOSCALER_COOLDOWN", value_name = "DURATION")]
    pub cooldown: Option<String>,
    /// How long an eviction counts as a signal (must exceed kubectl's 5 s retry).
    #[arg(long, env = "EVICTION_AUTOSCALER_SIGNAL_WINDOW", value_name = "DURATION")]
    pub signal_window: Option<String>,
    /// Longest a surge is held after its last signal, even while a node stays cordoned.
    #[arg(long, env = "EVICTION_AUTOSCALER_MAX_HOLD", value_name = "DURATION")]
    pub max_hold: Option<String>,
    /// Longest the webhook holds a PDB-blocked eviction of a draining node's pod while the surge
    /// opens its budget (0s: never hold; the apiserver's webhook timeout less 5s caps it).
    #[arg(long, env = "EVICTION_AUTOSCALER_EVICTION_HOLD", value_name = "DURATION")]
    pub eviction_hold: Option<String>,
    /// Node taint keys that mark a node as draining, comma separated.
    #[arg(long, env = "EVICTION_AUTOSCALER_DRAIN_TAINTS", value_name = "KEY,KEY")]
    pub drain_taints: Option<String>,
    /// `unhealthyPodEvictionPolicy` of default PDBs: `AlwaysAllow` or `IfHealthyBudget`.
    #[arg(long, env = "EVICTION_AUTOSCALER_UNHEALTHY_POD_EVICTION_POLICY", value_name = "POLICY")]
    pub unhealthy_pod_eviction_policy: Option<String>,
    /// Webhook listen address (TLS).
    #[arg(long, env = "EVICTION_AUTOSCALER_WEBHOOK_ADDR", value_name = "ADDR:PORT")]
    pub webhook_addr: Option<String>,
    /// Health and metrics listen address (plain HTTP: /healthz, /readyz, /metrics).
    #[arg(long, env = "EVICTION_AUTOSCALER_HEALTH_ADDR", value_name = "ADDR:PORT")]
    pub health_addr: Option<String>,
    /// Serving certificate (PEM), reloaded when it changes.
    #[arg(long, env = "EVICTION_AUTOSCALER_TLS_CERT_FILE", value_name = "FILE")]
    pub tls_cert_file: Option<String>,
    /// Serving key (PEM), reloaded when it changes.
    #[arg(long, env = "EVICTION_AUTOSCALER_TLS_KEY_FILE", value_name = "FILE")]
    pub tls_key_file: Option<String>,
    /// How often the certificate files are checked for changes.
    #[arg(long, env = "EVICTION_AUTOSCALER_TLS_RELOAD_INTERVAL", value_name = "DURATION")]
    pub tls_reload_interval: Option<String>,
    /// Self-managed webhook certificate: the Secret to keep the CA and serving pair in
    /// (created when missing, renewed before expiry). Empty: read --tls-cert-file/--tls-key-file.
    #[arg(long, env = "EVICTION_AUTOSCALER_CERT_SECRET", value_name = "NAME")]
    pub cert_secret: Option<String>,
    /// ValidatingWebhookConfiguration whose caBundle is kept equal to the Secret's ca.crt.
    #[arg(long, env = "EVICTION_AUTOSCALER_WEBHOOK_CONFIGURATION", value_name = "NAME")]
    pub webhook_configuration: Option<String>,
    /// The webhook's Service; the self-managed certificate is issued for its DNS names.
    #[arg(long, env = "EVICTION_AUTOSCALER_WEBHOOK_SERVICE", value_name = "NAME")]
    pub webhook_service: Option<String>,
    /// Namespace of the certificate Secret and the Service (default: POD_NAMESPACE, else the
    /// client's namespace: the ServiceAccount's in a cluster, the kubeconfig context's locally).
    #[arg(long, env = "EVICTION_AUTOSCALER_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
    /// Lifetime of a self-managed serving certificate (renewed with a third left).
    #[arg(long, env = "EVICTION_AUTOSCALER_CERT_VALIDITY", value_name = "DURATION")]
    pub cert_validity: Option<String>,
    /// Take a Lease before writing workloads (run more than one replica safely).
    #[arg(long, env = "EVICTION_AUTOSCALER_LEADER_ELECT", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub leader_elect: Option<String>,
    /// Namespace of the Lease (default: POD_NAMESPACE, else kube-system).
    #[arg(long, env = "EVICTION_AUTOSCALER_LEASE_NAMESPACE", value_name = "NS")]
    pub lease_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, env = "EVICTION_AUTOSCALER_LEASE_NAME", value_name = "NAME")]
    pub lease_name: Option<String>,
    /// Log format: `plain` or `json`.
    #[arg(long, env = "EVICTION_AUTOSCALER_LOG_FORMAT", value_name = "plain|json")]
    pub log_format: Option<String>,
    /// Sustained API writes per second (client-go's `--kube-api-qps`; scale writes and Lease
    /// renewals are exempt).
    #[arg(long, env = "EVICTION_AUTOSCALER_KUBE_API_QPS", value_name = "QPS")]
    pub kube_api_qps: Option<String>,
    /// API writes allowed at once above the sustained rate (client-go's `--kube-api-burst`).
    #[arg(long, env = "EVICTION_AUTOSCALER_KUBE_API_BURST", value_name = "N")]
    pub kube_api_burst: Option<String>,
    /// The pod's namespace (downward API); default for --lease-namespace.
    #[arg(long, env = "POD_NAMESPACE", hide = true)]
    pub pod_namespace: Option<String>,
}

/// Which evictions may cause a surge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SurgeTrigger {
    /// Only evictions of pods on draining nodes (descheduler and VPA evictions never surge).
    Drain,
    /// Every eviction blocked by a PDB.
    Any,
}

/// PDB `unhealthyPodEvictionPolicy` for the PDBs we create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum UnhealthyPodEvictionPolicy {
    /// Unready pods can always be evicted (what the Kubernetes docs recommend).
    AlwaysAllow,
    /// Unready pods are evicted only while the budget is healthy.
    IfHealthyBudget,
}

impl fmt::Display for UnhealthyPodEvictionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AlwaysAllow => "AlwaysAllow",
            Self::IfHealthyBudget => "IfHealthyBudget",
        })
    }
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Plain,
    /// One JSON object per line.
    Json,
}

/// The validated configuration.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub controller_enabled: bool,
    pub pdb_create: bool,
    /// Asked for, never done: see [`Config::not_honoured`].
    pub pdb_floor_mutation: bool,
    pub actioned_namespaces: Vec<String>,
    pub enabled_by_default: bool,
    /// `None` when off (unset, `""`, `0` or `0%`).
    #[serde(serialize_with = "ser_int_or_string")]
    pub zero_surge_override: Option<IntOrString>,
    pub surge_trigger: SurgeTrigger,
    #[serde(serialize_with = "ser_duration")]
    pub cooldown: Duration,
    #[serde(serialize_with = "ser_duration")]
    pub signal_window: Duration,
    #[serde(serialize_with = "ser_duration")]
    pub max_hold: Duration,
    /// Zero: evictions are never held.
    #[serde(serialize_with = "ser_duration")]
    pub eviction_hold: Duration,
    pub drain_taints: Vec<String>,
    pub unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy,
    pub webhook_addr: SocketAddr,
    pub health_addr: SocketAddr,
    pub tls_cert_file: PathBuf,
    pub tls_key_file: PathBuf,
    #[serde(serialize_with = "ser_duration")]
    pub tls_reload_interval: Duration,
    /// Self-managed certificate Secret; empty = certificate files.
    pub cert_secret: String,
    pub webhook_configuration: String,
    pub webhook_service: String,
    /// Empty = the Kubernetes client's default namespace (see [`Config::namespace_or`]).
    pub namespace: String,
    #[serde(serialize_with = "ser_duration")]
    pub cert_validity: Duration,
    pub leader_elect: bool,
    pub lease_namespace: String,
    pub lease_name: String,
    pub log_format: LogFormat,
    pub kube_api_qps: f64,
    pub kube_api_burst: u32,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

fn ser_int_or_string<S: serde::Serializer>(v: &Option<IntOrString>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(IntOrString::Int(i)) => s.serialize_i32(*i),
        Some(IntOrString::String(p)) => s.serialize_str(p),
    }
}

/// A setting that could not be used. The message names the setting, the value and its source.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("invalid value {value:?} for {setting} (from {origin}): {reason}")]
    Invalid { setting: &'static str, value: String, origin: Source, reason: String },
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
}

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The command line or its environment variable (clap merges them).
    FlagOrEnv { flag: &'static str, env: &'static str },
    /// The `--config` file, at this key.
    File { key: &'static str },
    /// The built-in default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FlagOrEnv { flag, env } => write!(f, "flag --{flag} or env {env}"),
            Self::File { key } => write!(f, "config file key controllerConfig.{key}"),
            Self::Default => f.write_str("default"),
        }
    }
}

/// One row of the settings table: flag name, env var, config-file key (dotted, under
/// `controllerConfig`) and default as text.
struct Setting {
    flag: &'static str,
    env: &'static str,
    key: &'static str,
    default: &'static str,
}

macro_rules! settings {
    ($($field:ident: $flag:literal, $env:literal, $key:literal, $default:expr;)*) => {
        /// Every setting, in the order `--help` lists them.
        const SETTINGS: &[Setting] = &[$(Setting { flag: $flag, env: $env, key: $key, default: $default }),*];

        impl SettingsArgs {
            fn given(&self, flag: &str) -> Option<&str> {
                match flag {
                    $($flag => self.$field.as_deref(),)*
                    _ => None,
                }
            }
        }
    };
}

settings! {
    controller_enabled: "controller-enabled", "CONTROLLER_ENABLED", "enabled", "true";
    pdb_create: "pdb-create", "PDB_CREATE", "pdb.create", "false";
    pdb_floor_mutation: "pdb-floor-mutation", "ENABLE_PDB_FLOOR_MUTATION", "pdbFloorMutation.enabled", "false";
    actioned_namespaces: "actioned-namespaces", "ACTIONED_NAMESPACES", "namespaces.actionedNamespaces", "kube-system";
    enabled_by_default: "enabled-by-default", "ENABLED_BY_DEFAULT", "namespaces.enabledByDefault", "false";
    zero_surge_override: "zero-surge-override", "ZERO_SURGE_OVERRIDE", "zeroSurgeOverride", "";
    surge_trigger: "surge-trigger", "EVICTION_AUTOSCALER_SURGE_TRIGGER", "surge.trigger", "drain";
    cooldown: "cooldown", "EVICTION_AUTOSCALER_COOLDOWN", "surge.cooldown", "60s";
    signal_window: "signal-window", "EVICTION_AUTOSCALER_SIGNAL_WINDOW", "surge.signalWindow", "90s";
    max_hold: "max-hold", "EVICTION_AUTOSCALER_MAX_HOLD", "surge.maxHold", "1h";
    eviction_hold: "eviction-hold", "EVICTION_AUTOSCALER_EVICTION_HOLD", "surge.evictionHold", "10s";
    drain_taints: "drain-taints", "EVICTION_AUTOSCALER_DRAIN_TAINTS", "drainTaints",
        "node.kubernetes.io/unschedulable,karpenter.sh/disrupted,ToBeDeletedByClusterAutoscaler";
    unhealthy_pod_eviction_policy: "unhealthy-pod-eviction-policy", "EVICTION_AUTOSCALER_UNHEALTHY_POD_EVICTION_POLICY", "pdb.unhealthyPodEvictionPolicy", "AlwaysAllow";
    webhook_addr: "webhook-addr", "EVICTION_AUTOSCALER_WEBHOOK_ADDR", "webhook.addr", "0.0.0.0:9443";
    health_addr: "health-addr", "EVICTION_AUTOSCALER_HEALTH_ADDR", "health.addr", "0.0.0.0:8081";
    tls_cert_file: "tls-cert-file", "EVICTION_AUTOSCALER_TLS_CERT_FILE", "webhook.tlsCertFile", "/etc/eviction-autoscaler/tls/tls.crt";
    tls_key_file: "tls-key-file", "EVICTION_AUTOSCALER_TLS_KEY_FILE", "webhook.tlsKeyFile", "/etc/eviction-autoscaler/tls/tls.key";
    tls_reload_interval: "tls-reload-interval", "EVICTION_AUTOSCALER_TLS_RELOAD_INTERVAL", "webhook.tlsReloadInterval", "10s";
    cert_secret: "cert-secret", "EVICTION_AUTOSCALER_CERT_SECRET", "webhook.certSecret", "";
    webhook_configuration: "webhook-configuration", "EVICTION_AUTOSCALER_WEBHOOK_CONFIGURATION", "webhook.configurationName", "eviction-autoscaler";
    webhook_service: "webhook-service", "EVICTION_AUTOSCALER_WEBHOOK_SERVICE", "webhook.serviceName", "eviction-autoscaler";
    namespace: "namespace", "EVICTION_AUTOSCALER_NAMESPACE", "namespace", "";
    cert_validity: "cert-validity", "EVICTION_AUTOSCALER_CERT_VALIDITY", "webhook.certValidity", "8760h";
    leader_elect: "leader-elect", "EVICTION_AUTOSCALER_LEADER_ELECT", "leaderElection.enabled", "true";
    lease_namespace: "lease-namespace", "EVICTION_AUTOSCALER_LEASE_NAMESPACE", "leaderElection.leaseNamespace", "";
    lease_name: "lease-name", "EVICTION_AUTOSCALER_LEASE_NAME", "leaderElection.leaseName", "eviction-autoscaler";
    log_format: "log-format", "EVICTION_AUTOSCALER_LOG_FORMAT", "log.format", "plain";
    kube_api_qps: "kube-api-qps", "EVICTION_AUTOSCALER_KUBE_API_QPS", "kubeApi.qps", "50";
    kube_api_burst: "kube-api-burst", "EVICTION_AUTOSCALER_KUBE_API_BURST", "kubeApi.burst", "100";
}

/// Keys the Go project's chart has under `controllerConfig` that mean nothing here; accepted so
/// its values files keep working, otherwise ignored.
const IGNORED_FILE_KEYS: &[&str] = &["metrics.enabled"];

/// The raw text of each setting and where it came from.
struct Resolved<'a> {
    args: &'a SettingsArgs,
    file: BTreeMap<String, String>,
}

impl Resolved<'_> {
    fn get(&self, flag: &'static str) -> (String, Source) {
        let Some(row) = SETTINGS.iter().find(|s| s.flag == flag) else {
            return (String::new(), Source::Default);
        };
        if let Some(v) = self.args.given(flag) {
            return (v.to_owned(), Source::FlagOrEnv { flag: row.flag, env: row.env });
        }
        if let Some(v) = self.file.get(row.key) {
            return (v.clone(), Source::File { key: row.key });
        }
        (row.default.to_owned(), Source::Default)
    }

    fn parse<T>(
        &self,
        flag: &'static str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        let (value, source) = self.get(flag);
        parse(value.trim()).map_err(|reason| ConfigError::Invalid {
            setting: SETTINGS.iter().find(|s| s.flag == flag).map_or(flag, |s| s.flag),
            value,
            origin: source,
            reason,
        })
    }
}

impl Config {
    /// What was asked for and will not be done, for the log at start and at each reload.
    pub fn not_honoured(&self) -> Option<String> {
        self.pdb_floor_mutation.then(|| {
            "pdbFloorMutation.enabled=true is not honoured: eviction-autoscaler never modifies a PDB \
             it did not create, so a PDB a surge cannot open keeps blocking its drain; \
             `kubectl get evictionautoscalers -A` shows those as DEGRADED (SurgeCannotOpenBudget)"
                .to_owned()
        })
    }

    /// Resolves flags/env (`args`) over the `--config` file (its path and text, if any) over
    /// the defaults, and validates every value.
    pub fn resolve(args: &SettingsArgs, file: Option<(&str, &str)>) -> Result<Self, ConfigError> {
        let file = match file {
            Some((path, text)) => {
                flatten_file(text).map_err(|reason| ConfigError::File { path: path.to_owned(), reason })?
            }
            None => BTreeMap::new(),
        };
        let r = Resolved { args, file };
        let config = Config {
            controller_enabled: r.parse("controller-enabled", parse_bool)?,
            pdb_create: r.parse("pdb-create", parse_bool)?,
            pdb_floor_mutation: r.parse("pdb-floor-mutation", parse_bool)?,
            actioned_namespaces: r.parse("actioned-namespaces", |v| parse_list(v, check_dns_label))?,
            enabled_by_default: r.parse("enabled-by-default", parse_bool)?,
            zero_surge_override: r.parse("zero-surge-override", parse_surge_override)?,
            surge_trigger: r.parse("surge-trigger", |v| match v {
                "drain" => Ok(SurgeTrigger::Drain),
                "any" => Ok(SurgeTrigger::Any),
                _ => Err("expected \"drain\" or \"any\"".into()),
            })?,
            cooldown: r.parse("cooldown", parse_duration)?,
            signal_window: r.parse("signal-window", |v| {
                let d = parse_duration(v)?;
                if d <= Duration::from_secs(5) {
                    return Err("must be longer than kubectl's 5s eviction retry".into());
                }
                Ok(d)
            })?,
            max_hold: r.parse("max-hold", parse_positive_duration)?,
            eviction_hold: r.parse("eviction-hold", |v| {
                let d = parse_duration(v)?;
                if d > MAX_EVICTION_HOLD {
                    return Err(format!(
                        "must be at most {}s: the apiserver waits at most 30s for a webhook, and a hold ends {}s before that",
                        MAX_EVICTION_HOLD.as_secs(),
                        EVICTION_HOLD_MARGIN.as_secs()
                    ));
                }
                Ok(d)
            })?,
            drain_taints: r.parse("drain-taints", |v| parse_list(v, check_qualified_name))?,
            unhealthy_pod_eviction_policy: r.parse("unhealthy-pod-eviction-policy", |v| match v {
                "AlwaysAllow" => Ok(UnhealthyPodEvictionPolicy::AlwaysAllow),
                "IfHealthyBudget" => Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget),
                _ => Err("expected \"AlwaysAllow\" or \"IfHealthyBudget\"".into()),
            })?,
            webhook_addr: r.parse("webhook-addr", parse_addr)?,
            health_addr: r.parse("health-addr", parse_addr)?,
            tls_cert_file: r.parse("tls-cert-file", parse_path)?,
            tls_key_file: r.parse("tls-key-file", parse_path)?,
            tls_reload_interval: r.parse("tls-reload-interval", parse_positive_duration)?,
            cert_secret: r.parse("cert-secret", |v| match v {
                "" => Ok(String::new()),
                v => check_dns_subdomain(v).map(|()| v.to_owned()),
            })?,
            webhook_configuration: r
                .parse("webhook-configuration", |v| check_dns_subdomain(v).map(|()| v.to_owned()))?,
            webhook_service: r.parse("webhook-service", |v| check_dns_label(v).map(|()| v.to_owned()))?,
            namespace: r.parse("namespace", |v| {
                let ns = match v {
                    "" => args.pod_namespace.as_deref().unwrap_or_default(),
                    v => v,
                };
                if ns.is_empty() { Ok(String::new()) } else { check_dns_label(ns).map(|()| ns.to_owned()) }
            })?,
            cert_validity: r.parse("cert-validity", |v| {
                let d = parse_duration(v)?;
                if d < Duration::from_secs(10) {
                    return Err("must be at least 10s".into());
                }
                if d > MAX_CERT_VALIDITY {
                    return Err("must not exceed 87600h, the lifetime of the CA that signs it".into());
                }
                Ok(d)
            })?,
            leader_elect: r.parse("leader-elect", parse_bool)?,
            lease_namespace: r.parse("lease-namespace", |v| {
                let ns = match v {
                    "" => args.pod_namespace.as_deref().filter(|s| !s.is_empty()).unwrap_or("kube-system"),
                    v => v,
                };
                check_dns_label(ns).map(|()| ns.to_owned())
            })?,
            lease_name: r.parse("lease-name", |v| check_dns_subdomain(v).map(|()| v.to_owned()))?,
            log_format: r.parse("log-format", |v| match v {
                "plain" => Ok(LogFormat::Plain),
                "json" => Ok(LogFormat::Json),
                _ => Err("expected \"plain\" or \"json\"".into()),
            })?,
            kube_api_qps: r.parse("kube-api-qps", |v| match v.parse::<f64>() {
                Ok(qps) if qps.is_finite() && qps > 0.0 => Ok(qps),
                _ => Err("expected a number of writes per second above 0".into()),
            })?,
            kube_api_burst: r.parse("kube-api-burst", |v| match v.parse::<u32>() {
                Ok(burst) if burst >= 1 => Ok(burst),
                _ => Err("expected a whole number of writes, at least 1".into()),
            })?,
        };
        if !config.cert_secret.is_empty() {
            for file_setting in ["tls-cert-file", "tls-key-file"] {
                if let (value, origin @ (Source::FlagOrEnv { .. } | Source::File { .. })) =
                    r.get(file_setting)
                {
                    return Err(ConfigError::Invalid {
                        setting: "cert-secret",
                        value: config.cert_secret.clone(),
                        origin: r.get("cert-secret").1,
                        reason: format!(
                            "conflicts with {file_setting} {value:?} (from {origin}): the certificate comes \
                             either from the Secret or from files; give only one"
                        ),
                    });
                }
            }
        }
        // Port 0 asks the system for a free port, separately for each listener.
        if config.webhook_addr == config.health_addr && config.health_addr.port() != 0 {
            return Err(ConfigError::Invalid {
                setting: "health-addr",
                value: config.health_addr.to_string(),
                origin: r.get("health-addr").1,
                reason: "must differ from --webhook-addr".into(),
            });
        }
        Ok(config)
    }
}

/// How long before the apiserver's deadline for a webhook call (its `?timeout=`) a held
/// eviction is answered: the time it leaves to other webhooks and to its own PDB check. The
/// same margin as pod-graceful-drain's, which raised it from 1 s to 5 s for that reason.
pub const EVICTION_HOLD_MARGIN: Duration = Duration::from_secs(5);

/// The longest `--eviction-hold`: the apiserver's largest webhook timeout (30 s) less the margin.
const MAX_EVICTION_HOLD: Duration = Duration::from_secs(30 - EVICTION_HOLD_MARGIN.as_secs());

/// Longest serving-certificate lifetime: the self-managed CA's (10 years).
const MAX_CERT_VALIDITY: Duration = Duration::from_secs(87_600 * 3600);

impl Config {
    /// The namespace of the self-managed certificate Secret and the Service: the configured
    /// one, else `client_default` (the Kubernetes client's default namespace).
    pub fn namespace_or(&self, client_default: &str) -> String {
        if self.namespace.is_empty() { client_default.to_owned() } else { self.namespace.clone() }
    }
}

/// The setting names, for tests and docs: (flag, env var, config-file key, default).
pub fn setting_names() -> impl Iterator<Item = (&'static str, &'static str, &'static str, &'static str)> {
    SETTINGS.iter().map(|s| (s.flag, s.env, s.key, s.default))
}

mod values;
use values::{
    check_dns_label, check_dns_subdomain, check_qualified_name, flatten_file, parse_addr, parse_bool,
    parse_duration, parse_list, parse_path, parse_positive_duration, parse_surge_override,
};

#[cfg(test)]
mod tests;
