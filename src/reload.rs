//! Re-reads the `--config` file (on a cluster: the mounted ConfigMap) and hands a changed
//! configuration to the controller, so editing the ConfigMap needs no restart.
//!
//! Polling, like the certificate files: the kubelet updates a ConfigMap volume by swapping its
//! `..data` symlink, which a file watch on the old path never sees.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use tokio::sync::watch;

/// How often the file is read. The kubelet itself refreshes ConfigMap volumes only every
/// minute or so, so this adds little to the delay a user sees.
pub const INTERVAL: Duration = Duration::from_secs(3);

/// Settings only read at start: a change is reported, and applies after a restart.
const RESTART_ONLY: &[&str] = &[
    "webhookAddr",
    "healthAddr",
    "tlsCertFile",
    "tlsKeyFile",
    "tlsReloadInterval",
    "leaderElect",
    "leaseNamespace",
    "leaseName",
    "logFormat",
    "certSecret",
    "webhookConfiguration",
    "webhookService",
    "namespace",
    "certValidity",
];

/// The settings (by their `config` output names) that differ but apply only after a restart.
pub fn restart_only_changes(old: &Config, new: &Config) -> Vec<&'static str> {
    let (Ok(old), Ok(new)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        return Vec::new();
    };
    RESTART_ONLY.iter().copied().filter(|key| old.get(key) != new.get(key)).collect()
}

/// Reads `path` every [`INTERVAL`] (`started_from`: the text the running configuration came
/// from); a new valid configuration is sent to `updates`. A file that cannot be read or holds
/// a bad value is reported once per distinct content and the current configuration stays.
pub async fn follow(
    args: SettingsArgs,
    path: PathBuf,
    started_from: String,
    updates: watch::Sender<Arc<Config>>,
) {
    let mut last_text = Some(started_from);
    let mut ticker = tokio::time::interval(INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // immediate; the file was just read at start
    loop {
        ticker.tick().await;
        let text = match tokio::fs::read_to_string(&path).await {
            Ok(text) => text,
            Err(error) => {
                if last_text.take().is_some() {
                    tracing::error!(path = %path.display(), %error, "config file unreadable; keeping the current configuration");
                }
                continue;
            }
        };
        if last_text.as_deref() == Some(text.as_str()) {
            continue;
        }
        last_text = Some(text.clone());
        let source = path.display().to_string();
        match Config::resolve(&args, Some((&source, &text))) {
            Ok(new) => {
                let current = updates.borrow().clone();
                if *current == new {
                    continue;
                }
                let restart = restart_only_changes(&current, &new);
                if !restart.is_empty() {
                    tracing::warn!(settings = ?restart, "config file changed settings that apply only after a restart");
                }
                tracing::info!(config = ?new, "config file changed; applying");
                if let Some(warning) = new.not_honoured() {
                    tracing::warn!("{warning}");
                }
                updates.send_replace(Arc::new(new));
            }
            Err(error) => {
                tracing::error!(path = %path.display(), %error, "config file changed to something invalid; keeping the current configuration");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(flags: &[&str], file: &str) -> Config {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            settings: SettingsArgs,
        }
        let mut argv = vec!["x"];
        argv.extend_from_slice(flags);
        let Cli { settings } = Cli::parse_from(argv);
        Config::resolve(&settings, Some(("config.yaml", file))).expect("valid")
    }

    /// Settings the controller reads on every decision (`Context::config()`) or write
    /// (`runtime::kube::write::RateLimit`), and the one said not to be honoured at each reload.
    const LIVE: &[&str] = &[
        "controllerEnabled",
        "pdbCreate",
        "pdbFloorMutation",
        "actionedNamespaces",
        "enabledByDefault",
        "zeroSurgeOverride",
        "surgeTrigger",
        "cooldown",
        "signalWindow",
        "maxHold",
        "evictionHold",
        "drainTaints",
        "unhealthyPodEvictionPolicy",
        "kubeApiQps",
        "kubeApiBurst",
    ];

    #[test]
    fn every_setting_is_either_live_or_start_only() {
        let json = serde_json::to_value(config(&[], "")).expect("serializes");
        let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
        let unclassified: Vec<&&String> = keys
            .iter()
            .filter(|k| !LIVE.contains(&k.as_str()) && !RESTART_ONLY.contains(&k.as_str()))
            .collect();
        assert!(unclassified.is_empty(), "say whether these apply live or at start: {unclassified:?}");
    }

    #[test]
    fn namespaces_apply_live_but_a_new_address_waits_for_a_restart() {
        let old = config(&[], "pdb:\n  create: false\n");
        let scope = config(&[], "pdb:\n  create: true\nnamespaces:\n  actionedNamespaces: [a]\n");
        assert!(restart_only_changes(&old, &scope).is_empty());
        let moved = config(&[], "webhook:\n  addr: 127.0.0.1:1\nleaderElection:\n  leaseName: other\n");
        assert_eq!(restart_only_changes(&old, &moved), ["webhookAddr", "leaseName"]);
    }
}
