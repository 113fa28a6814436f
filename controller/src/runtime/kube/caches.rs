//! Reflector caches: Deployments, PDBs, Nodes, Namespaces, HPAs, EvictionAutoScalers, and
//! KEDA ScaledObjects once their CRD exists. No Pod cache: pods are read on demand.
//!
//! Objects are decoded without managedFields and kubectl's last-applied copy (`decode`), and
//! stored trimmed or compact (`cached`): fields never read are dropped to bound memory.
//! Cached copies are for deciding only; a write carries only what it changes, guarded by the
//! resourceVersion it was decided on.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::runtime::reflector::{self, Lookup, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use super::cached::{CachedDeployment, CachedEas, CachedPdb};
use super::decode::Decoded;
use crate::eas::{pdb_covers, pdb_selects};
use crate::keda::ScaledObject;
use crate::runtime::queue::ObjectKey;

/// Read handles of every cache; cheap to clone.
#[derive(Clone)]
pub struct Caches {
    /// Deployments, the fields decisions read ([`CachedDeployment`]).
    pub deployments: Store<CachedDeployment>,
    /// PodDisruptionBudgets, the fields decisions read ([`CachedPdb`]).
    pub pdbs: Store<CachedPdb>,
    /// Nodes (spec only).
    pub nodes: Store<Node>,
    /// Namespaces (metadata only).
    pub namespaces: Store<Namespace>,
    /// HorizontalPodAutoscalers (status dropped).
    pub hpas: Store<HorizontalPodAutoscaler>,
    /// EvictionAutoScalers ([`CachedEas`]).
    pub eas: Store<CachedEas>,
    /// KEDA ScaledObjects, present once the CRD is installed.
    pub scaled_objects: Arc<RwLock<Option<Store<ScaledObject>>>>,
}

/// The write halves, consumed by the watch tasks.
pub struct Writers {
    pub(crate) deployments: Writer<CachedDeployment>,
    pub(crate) pdbs: Writer<CachedPdb>,
    pub(crate) nodes: Writer<Node>,
    pub(crate) namespaces: Writer<Namespace>,
    pub(crate) hpas: Writer<HorizontalPodAutoscaler>,
    pub(crate) eas: Writer<CachedEas>,
}

/// Creates empty caches and their writers.
pub fn caches() -> (Caches, Writers) {
    let (deployments, deployments_w) = reflector::store();
    let (pdbs, pdbs_w) = reflector::store();
    let (nodes, nodes_w) = reflector::store();
    let (namespaces, namespaces_w) = reflector::store();
    let (hpas, hpas_w) = reflector::store();
    let (eas, eas_w) = reflector::store();
    (
        Caches { deployments, pdbs, nodes, namespaces, hpas, eas, scaled_objects: Arc::default() },
        Writers {
            deployments: deployments_w,
            pdbs: pdbs_w,
            nodes: nodes_w,
            namespaces: namespaces_w,
            hpas: hpas_w,
            eas: eas_w,
        },
    )
}

impl Caches {
    /// Waits until the core caches (not KEDA's) have listed once.
    pub async fn wait_until_ready(&self) -> bool {
        let results = futures::join!(
            self.deployments.wait_until_ready(),
            self.pdbs.wait_until_ready(),
            self.nodes.wait_until_ready(),
            self.namespaces.wait_until_ready(),
            self.hpas.wait_until_ready(),
            self.eas.wait_until_ready(),
        );
        results.0.is_ok()
            && results.1.is_ok()
            && results.2.is_ok()
            && results.3.is_ok()
            && results.4.is_ok()
            && results.5.is_ok()
    }

    /// The keys of the cached Deployments whose pods `pdb` selects, by name (on the compact
    /// cache: a PDB in a namespace of many Deployments rebuilds none of them).
    pub fn deployments_covered_by(&self, pdb: &PodDisruptionBudget) -> Vec<ObjectKey> {
        let namespace = pdb.metadata.namespace.as_deref();
        let mut keys: Vec<ObjectKey> = self
            .deployments
            .state()
            .iter()
            .filter(|d| {
                d.namespace() == namespace && pdb_selects(pdb, namespace, d.template_labels().as_ref())
            })
            .filter_map(|d| d.key())
            .collect();
        keys.sort();
        keys
    }

    /// Cached PDBs covering the pods of `deployment`, by name.
    pub fn pdbs_covering(&self, deployment: &Deployment) -> Vec<PodDisruptionBudget> {
        let namespace = deployment.metadata.namespace.as_deref().unwrap_or_default();
        let mut pdbs = self.pdbs_in(namespace);
        pdbs.retain(|p| pdb_covers(p, deployment));
        pdbs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pdbs
    }

    /// The cached Deployments in `namespace` as the PDB plans take them
    /// ([`CachedDeployment::to_sibling`]: name, namespace and pod template labels).
    pub fn siblings_in(&self, namespace: &str) -> Vec<Deployment> {
        let all = self.deployments.state();
        all.iter().filter(|d| d.namespace() == Some(namespace)).map(|d| d.to_sibling()).collect()
    }

    /// The keys of the cached Deployments in `namespace`.
    pub fn deployment_keys_in(&self, namespace: &str) -> Vec<ObjectKey> {
        let all = self.deployments.state();
        all.iter().filter(|d| d.namespace() == Some(namespace)).filter_map(|d| d.key()).collect()
    }

    /// Cached HPAs in `namespace` (an HPA scales only a Deployment of its own namespace).
    pub fn hpas_in(&self, namespace: &str) -> Vec<HorizontalPodAutoscaler> {
        in_namespace(&self.hpas.state(), namespace)
    }

    /// The cached EvictionAutoScaler `name` in `namespace`.
    pub fn eas(&self, namespace: &str, name: &str) -> Option<EvictionAutoScaler> {
        self.eas.get(&ObjectRef::new(name).within(namespace)).map(|e| e.to_eas())
    }

    /// Cached PDBs in `namespace`.
    pub fn pdbs_in(&self, namespace: &str) -> Vec<PodDisruptionBudget> {
        let all = self.pdbs.state();
        all.iter().filter(|p| p.meta().namespace() == Some(namespace)).map(|p| p.to_pdb()).collect()
    }

    /// The cached PDB `key`.
    pub fn pdb(&self, key: &ObjectKey) -> Option<PodDisruptionBudget> {
        self.pdbs.get(&ObjectRef::new(&key.1).within(&key.0)).map(|p| p.to_pdb())
    }

    /// ScaledObjects in `namespace` (none while KEDA is not installed).
    pub fn scaled_objects_in(&self, namespace: &str) -> Vec<ScaledObject> {
        let Ok(guard) = self.scaled_objects.read() else { return Vec::new() };
        guard.as_ref().map_or_else(Vec::new, |store| in_namespace(&store.state(), namespace))
    }
}

/// Copies of the cached `objects` in `namespace`.
fn in_namespace<K: Resource + Clone>(objects: &[Arc<K>], namespace: &str) -> Vec<K> {
    objects
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .map(|o| (**o).clone())
        .collect()
}

/// Nodes: only `spec.unschedulable` and taints are read.
pub fn trim_node(mut n: Node) -> Node {
    n.metadata.annotations = None;
    n.metadata.labels = None;
    n.status = None;
    n
}

/// Namespaces: only name and annotations are read.
pub fn trim_namespace(mut n: Namespace) -> Namespace {
    n.metadata.labels = None;
    n.spec = None;
    n.status = None;
    n
}

/// HPAs: spec is read, status is not.
pub fn trim_hpa(mut h: HorizontalPodAutoscaler) -> HorizontalPodAutoscaler {
    h.status = None;
    h
}

/// What a cache keeps of a `K` (decoded without managedFields and kubectl's last-applied
/// copy): `K` itself, with fields dropped (the `trim_*` functions), or a compact type
/// ([`CachedDeployment`], [`CachedPdb`], [`CachedEas`]).
pub type Cache<K, C> = fn(K) -> C;

/// Objects per page of the initial list: each page is held as text and decoded whole before
/// the caches take its objects, so a page is transient memory (kube's default is 500).
const LIST_PAGE: u32 = 100;

/// Runs one reflector of every `K` in the cluster until its stream ends: stores what `cache`
/// keeps of every object, then calls `on_event` with the cached form. Objects are decoded
/// without what no cache keeps ([`Decoded`]).
pub async fn reflect<K, C, F>(client: Client, mut writer: Writer<C>, cache: Cache<K, C>, mut on_event: F)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    C: Lookup + Clone + Send + Sync + 'static,
    C::DynamicType: Eq + Hash + Clone,
    F: FnMut(&watcher::Event<C>),
{
    let api = Api::<Decoded<K>>::all(client);
    let stream = watcher(api, watcher::Config::default().page_size(LIST_PAGE)).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                let event = cached(event, cache);
                writer.apply_watcher_event(&event);
                on_event(&event);
            }
            Err(e) => {
                let kind = K::kind(&K::DynamicType::default()).into_owned();
                // A 404 on the list means the resource is not served: for our own CRD that is
                // an install step missed, and the fix is worth naming.
                let not_served =
                    matches!(&e, watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.is_not_found());
                if not_served && kind == "EvictionAutoScaler" {
                    warn!(
                        "the EvictionAutoScaler CRD is not installed (kubectl apply -f deploy/base/crd.yaml); not ready until it is"
                    );
                } else if is_expired(&e) {
                    debug!(%kind, "watch expired (410 Gone); listing again");
                } else {
                    warn!(%kind, error = %e, "watch failed; retrying with back-off")
                }
            }
        }
    }
}

/// `event` with its object as the cache keeps it.
fn cached<K, C>(event: watcher::Event<Decoded<K>>, cache: Cache<K, C>) -> watcher::Event<C> {
    use watcher::Event;
    match event {
        Event::Apply(Decoded(object)) => Event::Apply(cache(object)),
        Event::Delete(Decoded(object)) => Event::Delete(cache(object)),
        Event::InitApply(Decoded(object)) => Event::InitApply(cache(object)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

/// A watch whose resourceVersion the apiserver's watch cache has moved past (410 Gone): routine
/// on a real apiserver, and the watcher lists again by itself, so it is no warning.
fn is_expired(error: &watcher::Error) -> bool {
    matches!(error, watcher::Error::WatchError(status) if status.code == 410)
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    #[test]
    fn an_expired_watch_is_routine_and_other_watch_errors_are_not() {
        let status =
            |code| Box::new(kube::core::Status { code, reason: "Expired".into(), ..Default::default() });
        assert!(is_expired(&watcher::Error::WatchError(status(410))));
        assert!(!is_expired(&watcher::Error::WatchError(status(500))));
        assert!(!is_expired(&watcher::Error::NoResourceVersion));
    }

    #[test]
    fn trims_keep_what_decisions_read() {
        let n = Node {
            spec: Some(NodeSpec { unschedulable: Some(true), ..Default::default() }),
            status: Some(NodeStatus::default()),
            ..Default::default()
        };
        let n = trim_node(n);
        assert!(n.status.is_none());
        assert_eq!(n.spec.and_then(|s| s.unschedulable), Some(true));
    }
}
