//! Default-PDB helpers: read PDBs straight from kube-sim, count the product's writes to them,
//! record the order in which objects were first stored (cluster-wide `resourceVersion`s).

use std::time::Duration;

use kube_sim::{Gvr, RequestRecord};
use serde_json::Value;

use super::{Env, PRODUCT_AGENT, Recorder, wait_for};

/// Suffix of every default PDB name (`<deployment>-eviction-autoscaler`).
pub const SUFFIX: &str = "-eviction-autoscaler";
/// The EvictionAutoScaler CRD, owner of every default PDB.
pub const CRD: &str = "evictionautoscalers.eviction-autoscaler.azure.com";
/// Annotation keys of default PDBs and opt-outs (as the Go project spells them).
pub const OWNED_BY: &str = "ownedBy";
pub const TARGET: &str = "target";
pub const PDB_CREATE: &str = "eviction-autoscaler.azure.com/pdb-create";
pub const ENABLE: &str = "eviction-autoscaler.azure.com/enable";

pub fn pdb_gvr() -> Gvr {
    Gvr::new("policy", "v1", "poddisruptionbudgets")
}

/// The default PDB name of Deployment `deployment` (short names only).
pub fn ours(deployment: &str) -> String {
    format!("{deployment}{SUFFIX}")
}

/// True when the PDB carries `ownedBy: EvictionAutoScaler`.
pub fn is_owned(pdb: &Value) -> bool {
    pdb["metadata"]["annotations"][OWNED_BY] == "EvictionAutoScaler"
}

/// The first time an object was seen in some state (stored, Ready…): its name and the
/// resourceVersion of that event.
#[derive(Clone, Debug)]
pub struct Added {
    pub name: String,
    pub resource_version: u64,
}

impl Env {
    /// Every PDB in `namespace` (all namespaces when empty), from kube-sim's store.
    pub fn pdbs(&self, namespace: &str) -> Vec<Value> {
        let ns = (!namespace.is_empty()).then_some(namespace);
        self.sim()
            .cluster()
            .list(&pdb_gvr(), ns, &kube_sim::ListOptions::default())
            .map(|l| l.items.iter().map(|o| (**o).clone()).collect())
            .unwrap_or_default()
    }

    /// Sorted names of the PDBs in `namespace`.
    pub fn pdb_names(&self, namespace: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .pdbs(namespace)
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
            .collect();
        names.sort();
        names
    }

    /// PDB `namespace/name`, if it exists.
    pub fn pdb_object(&self, namespace: &str, name: &str) -> Option<Value> {
        self.sim().cluster().get(&pdb_gvr(), Some(namespace), name).ok().map(|o| (*o).clone())
    }

    /// Waits until PDB `namespace/name` exists and satisfies `accept`; returns it.
    pub async fn wait_pdb(
        &self,
        namespace: &str,
        name: &str,
        what: &str,
        accept: impl Fn(&Value) -> bool,
    ) -> Value {
        wait_for(&format!("PDB {namespace}/{name}: {what}"), Duration::from_secs(30), || {
            let found = self.pdb_object(namespace, name).filter(|p| accept(p));
            async move { found }
        })
        .await
    }

    /// Waits until PDB `namespace/name` is gone.
    pub async fn wait_pdb_gone(&self, namespace: &str, name: &str) {
        wait_for(&format!("PDB {namespace}/{name} to be deleted"), Duration::from_secs(30), || {
            let gone = self.pdb_object(namespace, name).is_none().then_some(());
            async move { gone }
        })
        .await;
    }

    /// Writes the product made to PDB `namespace/name` (update, patch, delete; any answer).
    /// Creates POST to the collection and carry no name in the log: count them with
    /// [`Env::record_added`] instead.
    pub fn product_pdb_writes(&self, namespace: &str, name: &str) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.user_agent.starts_with(PRODUCT_AGENT)
                    && r.is_write()
                    && r.resource == "poddisruptionbudgets"
                    && r.namespace == namespace
                    && r.name == name
            })
            .collect()
    }

    /// Successful PDB creates by the product in `namespace` (all namespaces when empty).
    pub fn product_pdb_creates(&self, namespace: &str) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.user_agent.starts_with(PRODUCT_AGENT)
                    && r.verb == "create"
                    && r.resource == "poddisruptionbudgets"
                    && (namespace.is_empty() || r.namespace == namespace)
                    && r.code < 300
            })
            .collect()
    }

    /// Records the ADDED events of `gvr` objects in `namespace` from now on.
    pub fn record_added(&self, gvr: &Gvr, namespace: &str) -> Recorder<Added> {
        self.record_first(gvr, namespace, |event| event.event_type == kube_sim::WatchEventType::Added)
    }

    /// Records, per object of `gvr` in `namespace`, the first event from now on for which
    /// `matches` holds (e.g. the pod turned Ready).
    pub fn record_first(
        &self,
        gvr: &Gvr,
        namespace: &str,
        matches: fn(&kube_sim::WatchEvent) -> bool,
    ) -> Recorder<Added> {
        use futures::StreamExt as _;
        let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Added>::new()));
        let opts = kube_sim::WatchOptions { timeout: Some(Duration::from_secs(3600)), ..Default::default() };
        let mut stream = self.sim().cluster().watch(gvr, Some(namespace), &opts).expect("watch");
        let sink = states.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                if !matches(&event) {
                    continue;
                }
                let o = &event.object;
                let added = Added {
                    name: o["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                    resource_version: o["metadata"]["resourceVersion"]
                        .as_str()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                };
                let mut seen = sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if !seen.iter().any(|a| a.name == added.name) {
                    seen.push(added);
                }
            }
        });
        Recorder::of_task(states, task)
    }

    /// Records every state of the PDBs in `namespace` (name, `spec.minAvailable`).
    pub fn record_pdb_min_available(&self, namespace: &str) -> Recorder<(String, Value)> {
        use futures::StreamExt as _;
        let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let opts = kube_sim::WatchOptions { timeout: Some(Duration::from_secs(3600)), ..Default::default() };
        let mut stream = self.sim().cluster().watch(&pdb_gvr(), Some(namespace), &opts).expect("watch PDBs");
        let sink = states.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                let o = &event.object;
                let name = o["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((name, o["spec"]["minAvailable"].clone()));
            }
        });
        Recorder::of_task(states, task)
    }
}

impl Env {
    /// `eviction_autoscaler_pdb_actions{outcome=<outcome>}` summed over reasons.
    pub async fn pdb_actions(&self, outcome: &str) -> u64 {
        let label = format!("outcome=\"{outcome}\"");
        super::metrics::metric_sum(&self.metrics().await, "eviction_autoscaler_pdb_actions_total", &[&label])
            as u64
    }
}
