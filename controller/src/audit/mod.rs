//! `eviction-autoscaler audit [-A | --namespace NS] [--node NODE] [-o table|json]`: will a
//! drain stall, on which node, because of which PDB, and will eviction-autoscaler get it
//! through? Read-only: it lists what [`report`] judges (and recent drain-related Events), with
//! the product's settings from its installed ConfigMap, or the defaults when there is none.
//! [`render`] prints it. Each list that is refused stops the audit with the API server's
//! message, which names the verb and resource the caller lacks.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use eviction_autoscaler_shared::config::{Config, SettingsArgs};

use crate::error::{Error, is_not_found};

pub mod census;
pub mod render;
pub mod report;
pub mod room;

/// Where the product's settings live in a shipped install (`deploy/`, the chart).
pub const INSTALLED_CONFIG_MAP: &str = "eviction-autoscaler/eviction-autoscaler-config";
/// The key of the settings file in that ConfigMap.
const CONFIG_KEY: &str = "config.yaml";
/// At most this many recent drain-related Events are shown, newest first.
pub const RECENT_EVENTS: usize = 20;

/// The ConfigMap holding the product's settings, as `--config-map` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigMapName {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for ConfigMapName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (namespace, name) = crate::cleanup::namespaced_name(text, INSTALLED_CONFIG_MAP)?;
        Ok(Self { namespace, name })
    }
}

/// What the audit covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (`-A`).
    All,
    /// One namespace.
    Namespace(String),
}

/// Where the settings came from and what they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `ConfigMap eviction-autoscaler/eviction-autoscaler-config`, or why the defaults are used.
    pub source: String,
    pub config: Config,
}

/// An Event the AKS troubleshooting guide's query for PDB-related drain failures
/// (`disruption|evict|drain`) finds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentEvent {
    /// RFC 3339, the Event's last time.
    pub time: String,
    pub namespace: String,
    /// `Kind/name` of the object it is about.
    pub object: String,
    pub reason: String,
    pub message: String,
}

/// A finished audit.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    pub settings: Settings,
    pub report: report::Report,
    pub events: Vec<RecentEvent>,
}

async fn list<K>(api: Api<K>, what: &str) -> Result<Vec<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default())
        .await
        .map(|list| list.items)
        .map_err(|api_error| Error::Read { what: what.to_owned(), api_error })
}

fn api<K>(client: &Client, scope: &Scope) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match scope {
        Scope::All => Api::all(client.clone()),
        Scope::Namespace(ns) => Api::namespaced(client.clone(), ns),
    }
}

/// The product's settings from `config_map` (`namespace/name`), or the defaults, saying why.
pub async fn settings(
    client: &Client,
    ConfigMapName { namespace, name }: &ConfigMapName,
) -> Result<Settings, Error> {
    let found = Api::<ConfigMap>::namespaced(client.clone(), namespace).get(name).await;
    let config_map = match found {
        Ok(config_map) => config_map,
        Err(e) if is_not_found(&e) => {
            let config = Config::resolve(&SettingsArgs::default(), None)
                .map_err(|e| Error::Settings(e.to_string()))?;
            let source = format!(
                "the defaults, as eviction-autoscaler is not installed (no ConfigMap {namespace}/{name}): {}",
                describe(&config)
            );
            return Ok(Settings { source, config });
        }
        Err(api_error) => {
            return Err(Error::Read { what: format!("get configmap {namespace}/{name}"), api_error });
        }
    };
    let mut source = format!("ConfigMap {namespace}/{name}");
    let text = config_map.data.as_ref().and_then(|d| d.get(CONFIG_KEY)).cloned().unwrap_or_default();
    let config = Config::resolve(&SettingsArgs::default(), Some((&source, &text)))
        .map_err(|e| Error::Settings(format!("{source} key {CONFIG_KEY}: {e}")))?;
    source = format!("{source}: {}", describe(&config));
    Ok(Settings { source, config })
}

/// The settings the audit applies, in a few words.
fn describe(config: &Config) -> String {
    let scope = if config.enabled_by_default {
        "every namespace not annotated out".to_owned()
    } else {
        format!("namespaces {} and those annotated in", config.actioned_namespaces.join(", "))
    };
    let zero_surge = match &config.zero_surge_override {
        None => "off".to_owned(),
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
    };
    format!("in scope: {scope}; zero-surge override: {zero_surge}")
}

/// Lists what the audit needs in `scope` and judges it; `node` limits the node part to one.
pub async fn run(
    client: Client,
    scope: Scope,
    node: Option<&str>,
    config_map: &ConfigMapName,
) -> Result<Audit, Error> {
    let settings = settings(&client, config_map).await?;
    let namespaces = match &scope {
        Scope::All => list(Api::<Namespace>::all(client.clone()), "list namespaces").await?,
        Scope::Namespace(ns) => vec![
            Api::<Namespace>::all(client.clone())
                .get(ns)
                .await
                .map_err(|api_error| Error::Read { what: format!("get namespace {ns}"), api_error })?,
        ],
    };
    let mut nodes = list(Api::<Node>::all(client.clone()), "list nodes").await?;
    if let Some(node) = node {
        nodes.retain(|n| n.metadata.name.as_deref() == Some(node));
        if nodes.is_empty() {
            return Err(Error::Settings(format!("node {node} not found")));
        }
    }
    let pods: Vec<Pod> = list(api(&client, &scope), "list pods").await?;
    let pdbs: Vec<PodDisruptionBudget> = list(api(&client, &scope), "list poddisruptionbudgets").await?;
    let deployments: Vec<Deployment> = list(api(&client, &scope), "list deployments").await?;
    let stateful_sets: Vec<StatefulSet> = list(api(&client, &scope), "list statefulsets").await?;
    let hpas: Vec<HorizontalPodAutoscaler> =
        list(api(&client, &scope), "list horizontalpodautoscalers").await?;
    let events: Vec<Event> = list(api(&client, &scope), "list events").await?;
    let cluster = report::Cluster {
        namespaces: &namespaces,
        nodes: &nodes,
        pods: &pods,
        pdbs: &pdbs,
        deployments: &deployments,
        stateful_sets: &stateful_sets,
        hpas: &hpas,
    };
    let report = report::report(&cluster, &settings.config);
    Ok(Audit { settings, report, events: recent_events(&events) })
}

/// The Events that query finds (`disruption|evict|drain` in reason or message, any
/// case), newest first, at most [`RECENT_EVENTS`].
pub fn recent_events(events: &[Event]) -> Vec<RecentEvent> {
    let mut found: Vec<_> = events
        .iter()
        .filter(|e| {
            let text = format!(
                "{} {}",
                e.reason.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or_default()
            )
            .to_lowercase();
            ["disruption", "evict", "drain"].iter().any(|word| text.contains(word))
        })
        .map(|e| {
            let time = e
                .last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or_else(|| e.event_time.as_ref().map(|t| t.0))
                .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0));
            let event = RecentEvent {
                time: time.map(|t| t.to_string()).unwrap_or_default(),
                namespace: e.metadata.namespace.clone().unwrap_or_default(),
                object: format!(
                    "{}/{}",
                    e.involved_object.kind.as_deref().unwrap_or_default(),
                    e.involved_object.name.as_deref().unwrap_or_default()
                ),
                reason: e.reason.clone().unwrap_or_default(),
                message: e.message.clone().unwrap_or_default(),
            };
            (time, event)
        })
        .collect();
    found.sort_by_key(|(time, _)| std::cmp::Reverse(*time));
    let mut found: Vec<RecentEvent> = found.into_iter().map(|(_, event)| event).collect();
    found.truncate(RECENT_EVENTS);
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(name: &str, reason: &str, message: &str, time: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "apps"},
            "involvedObject": {"kind": "Deployment", "name": "web"},
            "reason": reason, "message": message, "lastTimestamp": time
        }))
        .unwrap()
    }

    #[test]
    fn recent_events_are_the_drain_related_ones_newest_first_at_most_twenty() {
        let mut events = vec![
            event("a", "SurgeStarted", "2 pod(s) displaced by a drain", "2026-12-07T10:00:00Z"),
            event("b", "Scheduled", "Successfully assigned apps/web-1 to node-2", "2026-12-07T11:00:00Z"),
            event("c", "EvictionHoldExpired", "held 10 s", "2026-12-07T12:00:00Z"),
            event("d", "Warning", "PodDisruptionBudget blocks it", "2026-12-07T09:00:00Z"),
        ];
        let found = recent_events(&events);
        let reasons: Vec<&str> = found.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(reasons, ["EvictionHoldExpired", "SurgeStarted", "Warning"]);
        assert_eq!(found[0].object, "Deployment/web");
        assert_eq!(found[0].time, "2026-12-07T12:00:00Z");

        events.extend((0..30).map(|i| event("x", "Evicted", "", &format!("2026-12-08T00:00:{i:02}Z"))));
        let found = recent_events(&events);
        assert_eq!(found.len(), RECENT_EVENTS);
        assert_eq!(found[0].time, "2026-12-08T00:00:29Z");
    }
}
