//! Default-PDB helpers: read PDBs, count the product's writes to them, record the order in
//! which objects were first stored (cluster-wide `resourceVersion`s).

use std::time::Duration;

use serde_json::Value;

use super::{Env, PRODUCT_AGENT, Recorder, Request, Resource, wait_for};

/// Suffix of every default PDB name (`<deployment>-eviction-autoscaler`).
pub const SUFFIX: &str = "-eviction-autoscaler";
/// The EvictionAutoScaler CRD, owner of every default PDB.
pub const CRD: &str = "evictionautoscalers.eviction-autoscaler.azure.com";
/// Annotation keys of default PDBs and opt-outs (as the Go project spells them).
pub const OWNED_BY: &str = "ownedBy";
pub const TARGET: &str = "target";
pub const PDB_CREATE: &str = "eviction-autoscaler.azure.com/pdb-create";
pub const ENABLE: &str = "eviction-autoscaler.azure.com/enable";

pub fn pdbs() -> Resource {
    Resource::new("policy", "v1", "poddisruptionbudgets")
}

/// The default PDB name of Deployment `deployment` (short names only).
pub fn ours(deployment: &str) -> String {
    format!("{deployment}{SUFFIX}")
}

/// True when the PDB carries `ownedBy: EvictionAutoScaler`.
pub fn is_owned(pdb: &Value) -> bool {
    pdb["metadata"]["annotations"][OWNED_BY] == "EvictionAutoScaler"
}

impl Env {
    /// Every PDB in `namespace` (all namespaces when empty).
    pub fn pdbs(&self, namespace: &str) -> Vec<Value> {
        self.objects(&pdbs(), namespace)
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
        self.object("policy", "v1", "poddisruptionbudgets", namespace, name)
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
    /// Creates are left out: count them with [`Env::record_added`] or
    /// [`Env::product_pdb_creates`].
    pub fn product_pdb_writes(&self, namespace: &str, name: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.user_agent.starts_with(PRODUCT_AGENT)
                    && r.is_write()
                    && r.verb != "create"
                    && r.resource == "poddisruptionbudgets"
                    && r.namespace == namespace
                    && r.name == name
            })
            .collect()
    }

    /// Successful PDB creates by the product in `namespace` (all namespaces when empty).
    pub fn product_pdb_creates(&self, namespace: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.user_agent.starts_with(PRODUCT_AGENT)
                    && r.verb == "create"
                    && r.resource == "poddisruptionbudgets"
                    && (namespace.is_empty() || r.namespace == namespace)
                    && r.succeeded()
            })
            .collect()
    }

    /// Records every state of the PDBs in `namespace` (name, `spec.minAvailable`).
    pub fn record_pdb_min_available(&self, namespace: &str) -> Recorder<(String, Value)> {
        self.watch(&pdbs(), namespace, None, |_, o| {
            Some((
                o["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                o["spec"]["minAvailable"].clone(),
            ))
        })
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
