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

/// A draining node: since when, and whether the drain edge's listing of its pods is on its way.
#[derive(Clone, Copy, Debug)]
struct Draining {
    since: Instant,
    edge_listing: bool,
}

/// The draining nodes and their recently listed pods.
#[derive(Debug, Default)]
pub struct DrainingNodes {
    draining: Mutex<BTreeMap<String, Draining>>,
    pods: Mutex<HashMap<String, NodePods>>,
}

impl DrainingNodes {
    /// Records the drain state of `node`; returns the previous state.
    pub fn set(&self, node: &str, draining: bool) -> bool {
        let mut nodes = self.draining.lock();
        let was = nodes.contains_key(node);
        if draining {
            nodes
                .entry(node.to_owned())
                .or_insert_with(|| Draining { since: Instant::now(), edge_listing: false });
        } else {
            nodes.remove(node);
            self.pods.lock().remove(node);
        }
        was
    }

    /// Draining nodes now.
    pub fn names(&self) -> Vec<String> {
        self.draining.lock().keys().cloned().collect()
    }

    /// Draining nodes now, each with whether the drain edge's listing of its pods is on its
    /// way ([`Self::set_edge_listing`]).
    pub fn names_and_edge_listing(&self) -> Vec<(String, bool)> {
        self.draining.lock().iter().map(|(name, d)| (name.clone(), d.edge_listing)).collect()
    }

    /// The drain edge's listing of `node`'s pods started (`true`), or ended and made the
    /// Deployments with pods there due (`false`).
    pub fn set_edge_listing(&self, node: &str, on_its_way: bool) {
        if let Some(d) = self.draining.lock().get_mut(node) {
            d.edge_listing = on_its_way;
        }
    }

    /// Whether any node is draining.
    pub fn any(&self) -> bool {
        !self.draining.lock().is_empty()
    }

    /// Whether `node` is draining.
    pub fn contains(&self, node: &str) -> bool {
        self.draining.lock().contains_key(node)
    }

    /// When `node` was first seen draining, if it still is.
    pub fn draining_since(&self, node: &str) -> Option<Instant> {
        self.draining.lock().get(node).map(|d| d.since)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_listing_is_on_its_way_only_while_it_runs_and_only_for_its_drain() {
        let nodes = DrainingNodes::default();
        assert!(!nodes.set("a", true), "was not draining");
        nodes.set("b", true);
        let both = |a, b| vec![("a".to_owned(), a), ("b".to_owned(), b)];
        assert_eq!(nodes.names_and_edge_listing(), both(false, false));
        nodes.set_edge_listing("a", true);
        nodes.set_edge_listing("gone", true); // not draining: nothing to mark
        assert!(nodes.set("a", true), "still draining: the same drain");
        assert_eq!(nodes.names_and_edge_listing(), both(true, false));
        nodes.set("a", false);
        nodes.set("a", true);
        assert_eq!(nodes.names_and_edge_listing(), both(false, false), "a new drain, a new edge");
        nodes.set_edge_listing("b", true);
        nodes.set_edge_listing("b", false);
        assert_eq!(nodes.names_and_edge_listing(), both(false, false), "listed: read by evaluations");
    }
}
