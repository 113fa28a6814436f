//! Draining nodes: which nodes are draining (from the Node watch) and the pods on them, listed
//! on demand (there is no Pod cache).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};
use tokio::time::Instant;

/// How long a list of the pods on a draining node is reused (one LIST per node, not per
/// Deployment, when many Deployments are evaluated together).
const NODE_PODS_TTL: Duration = Duration::from_secs(2);

/// Pods listed on a node, and when the LIST was sent.
type ListedPods = (Instant, Arc<Vec<Pod>>);

/// The latest listing of one node's pods; locked while a LIST is on its way, so callers that
/// want the same listing wait for it rather than each sending their own.
type NodePods = Arc<tokio::sync::Mutex<Option<ListedPods>>>;

/// The draining nodes (and since when) and their recently listed pods.
#[derive(Debug, Default)]
pub struct DrainingNodes {
    since: Mutex<BTreeMap<String, Instant>>,
    pods: Mutex<HashMap<String, NodePods>>,
}

impl DrainingNodes {
    /// Records the drain state of `node`; returns the previous state.
    pub fn set(&self, node: &str, draining: bool) -> bool {
        let mut since = self.since.lock();
        let was = since.contains_key(node);
        if draining {
            since.entry(node.to_owned()).or_insert_with(Instant::now);
        } else {
            since.remove(node);
            self.pods.lock().remove(node);
        }
        was
    }

    /// Draining nodes now.
    pub fn names(&self) -> Vec<String> {
        self.since.lock().keys().cloned().collect()
    }

    /// Whether any node is draining.
    pub fn any(&self) -> bool {
        !self.since.lock().is_empty()
    }

    /// Whether `node` is draining.
    pub fn contains(&self, node: &str) -> bool {
        self.since.lock().contains_key(node)
    }

    /// When `node` was first seen draining, if it still is.
    pub fn draining_since(&self, node: &str) -> Option<Instant> {
        self.since.lock().get(node).copied()
    }

    /// Pods on `node` (LIST with a `spec.nodeName` field selector), reused for a moment: one
    /// LIST per node, not per Deployment, when many Deployments are evaluated together (those
    /// that ask while it is on its way wait for it).
    pub async fn pods_on(&self, client: &Client, node: &str) -> Result<Arc<Vec<Pod>>, kube::Error> {
        let slot = self.pods.lock().entry(node.to_owned()).or_default().clone();
        let mut listed = slot.lock().await;
        if let Some((sent, pods)) = listed.as_ref()
            && sent.elapsed() < NODE_PODS_TTL
        {
            return Ok(pods.clone());
        }
        let sent = Instant::now();
        let api: Api<Pod> = Api::all(client.clone());
        let list = api.list(&ListParams::default().fields(&format!("spec.nodeName={node}"))).await?;
        let pods = Arc::new(list.items);
        *listed = Some((sent, pods.clone()));
        Ok(pods)
    }
}
