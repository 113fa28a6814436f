//! Reflector caches: Deployments, PDBs, Nodes, Namespaces, HPAs, EvictionAutoScalers, and
//! KEDA ScaledObjects once their CRD exists. No Pod cache: pods are read on demand.
//!
//! Objects are trimmed before they are stored (fields never read are dropped to bound
//! memory). Cached copies are for deciding only; every write re-reads its object first.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use crate::keda::ScaledObject;

/// Read handles of every cache; cheap to clone.
#[derive(Clone)]
pub struct Caches {
    /// Deployments (pod template spec dropped).
    pub deployments: Store<Deployment>,
    /// PodDisruptionBudgets.
    pub pdbs: Store<PodDisruptionBudget>,
    /// Nodes (spec only).
    pub nodes: Store<Node>,
    /// Namespaces (metadata only).
    pub namespaces: Store<Namespace>,
    /// HorizontalPodAutoscalers (status dropped).
    pub hpas: Store<HorizontalPodAutoscaler>,
    /// EvictionAutoScalers.
    pub eas: Store<EvictionAutoScaler>,
    /// KEDA ScaledObjects, present once the CRD is installed.
    pub scaled_objects: Arc<RwLock<Option<Store<ScaledObject>>>>,
}

/// The write halves, consumed by the watch tasks.
pub struct Writers {
    pub(crate) deployments: Writer<Deployment>,
    pub(crate) pdbs: Writer<PodDisruptionBudget>,
    pub(crate) nodes: Writer<Node>,
    pub(crate) namespaces: Writer<Namespace>,
    pub(crate) hpas: Writer<HorizontalPodAutoscaler>,
    pub(crate) eas: Writer<EvictionAutoScaler>,
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

    /// Cached Deployments in `namespace`.
    pub fn deployments_in(&self, namespace: &str) -> Vec<Arc<Deployment>> {
        self.deployments
            .state()
            .into_iter()
            .filter(|d| d.metadata.namespace.as_deref() == Some(namespace))
            .collect()
    }

    /// Cached HPAs in `namespace` (an HPA scales only a Deployment of its own namespace).
    pub fn hpas_in(&self, namespace: &str) -> Vec<HorizontalPodAutoscaler> {
        in_namespace(&self.hpas.state(), namespace)
    }

    /// Cached PDBs in `namespace`.
    pub fn pdbs_in(&self, namespace: &str) -> Vec<PodDisruptionBudget> {
        in_namespace(&self.pdbs.state(), namespace)
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

/// kubectl's copy of the whole object as last applied: often the largest annotation, and
/// never read.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Every kind: managedFields and kubectl's last-applied copy are never read.
fn trim_metadata(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// Deployments: name, annotations, replicas, selector, strategy, the pod template's labels
/// and the replica counts of the status are read; not its labels, the pod template's spec
/// (containers, volumes…) or annotations, nor the status conditions.
pub fn trim_deployment(d: &mut Deployment) {
    trim_metadata(&mut d.metadata);
    d.metadata.labels = None;
    if let Some(spec) = d.spec.as_mut() {
        spec.template.spec = None;
        if let Some(template) = spec.template.metadata.as_mut() {
            *template = ObjectMeta { labels: template.labels.take(), ..ObjectMeta::default() };
        }
    }
    if let Some(status) = d.status.as_mut() {
        status.conditions = None;
    }
}

/// Nodes: only `spec.unschedulable` and taints are read.
pub fn trim_node(n: &mut Node) {
    trim_metadata(&mut n.metadata);
    n.metadata.annotations = None;
    n.metadata.labels = None;
    n.status = None;
}

/// Namespaces: only name and annotations are read.
pub fn trim_namespace(n: &mut Namespace) {
    trim_metadata(&mut n.metadata);
    n.metadata.labels = None;
    n.spec = None;
    n.status = None;
}

/// PDBs: spec and the status counts are read, not its conditions or disrupted pods.
pub fn trim_pdb(p: &mut PodDisruptionBudget) {
    trim_metadata(&mut p.metadata);
    if let Some(status) = p.status.as_mut() {
        status.conditions = None;
        status.disrupted_pods = None;
    }
}

/// HPAs: spec is read, status is not.
pub fn trim_hpa(h: &mut HorizontalPodAutoscaler) {
    trim_metadata(&mut h.metadata);
    h.status = None;
}

/// EvictionAutoScalers: everything but managedFields is read.
pub fn trim_eas(e: &mut EvictionAutoScaler) {
    trim_metadata(&mut e.metadata);
}

/// ScaledObjects: only the modelled spec is kept by the type itself.
pub fn trim_scaled_object(s: &mut ScaledObject) {
    trim_metadata(&mut s.metadata);
}

/// Runs one reflector until its stream ends, calling `on_event` for every event after the
/// cache has applied it.
pub async fn reflect<K, F>(api: Api<K>, writer: Writer<K>, trim: fn(&mut K), mut on_event: F)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
    F: FnMut(&watcher::Event<K>),
{
    let stream = watcher(api, watcher::Config::default()).default_backoff().modify(trim).reflect(writer);
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => on_event(&event),
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

/// A watch whose resourceVersion the apiserver's watch cache has moved past (410 Gone): routine
/// on a real apiserver, and the watcher lists again by itself, so it is no warning.
fn is_expired(error: &watcher::Error) -> bool {
    matches!(error, watcher::Error::WatchError(status) if status.code == 410)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus, PodSpec, PodTemplateSpec};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ManagedFieldsEntry, Time};

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
        let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
        let annotations: BTreeMap<String, String> =
            [(LAST_APPLIED.to_owned(), "{}".to_owned()), ("ours".to_owned(), "1".to_owned())].into();
        let mut d = Deployment {
            metadata: ObjectMeta {
                managed_fields: Some(vec![ManagedFieldsEntry::default()]),
                annotations: Some(annotations.clone()),
                labels: Some(labels.clone()),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(3),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels.clone()),
                        annotations: Some(annotations.clone()),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec::default()),
                },
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                ready_replicas: Some(2),
                conditions: Some(vec![DeploymentCondition::default()]),
                ..Default::default()
            }),
        };
        trim_deployment(&mut d);
        assert!(d.metadata.managed_fields.is_none());
        let kept: Vec<_> = d.metadata.annotations.iter().flatten().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kept, ["ours"], "only kubectl's last-applied copy goes");
        let spec = d.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(3));
        assert!(spec.template.spec.is_none());
        let template = spec.template.metadata.as_ref().expect("template metadata");
        assert_eq!((template.labels.as_ref(), template.annotations.as_ref()), (Some(&labels), None));
        let status = d.status.as_ref().expect("status");
        assert_eq!((status.ready_replicas, status.conditions.as_ref()), (Some(2), None));

        let mut p = PodDisruptionBudget {
            status: Some(PodDisruptionBudgetStatus {
                disruptions_allowed: 1,
                conditions: Some(vec![Condition {
                    type_: "DisruptionAllowed".into(),
                    status: "True".into(),
                    reason: "SufficientPods".into(),
                    message: String::new(),
                    last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
                    observed_generation: None,
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        trim_pdb(&mut p);
        let status = p.status.expect("status");
        assert_eq!((status.disruptions_allowed, status.conditions), (1, None));

        let mut n = Node {
            spec: Some(NodeSpec { unschedulable: Some(true), ..Default::default() }),
            status: Some(NodeStatus::default()),
            ..Default::default()
        };
        trim_node(&mut n);
        assert!(n.status.is_none());
        assert_eq!(n.spec.and_then(|s| s.unschedulable), Some(true));
    }
}
