//! Shared state of the controller runtime, passed around as `Arc<Context>`.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::crd::EvictionAutoScalerStatus;
use eviction_autoscaler_shared::scope::namespace_scope;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;
use tokio::time::Instant;

use super::caches::Caches;
use super::metrics::Metrics;
use super::queue::{Key, WorkQueue};
use super::recorder::Recorder;
use super::write::{WriteGate, writer};
use crate::displaced::SignaledPod;
use crate::eas::pdb_covers;

/// How long a list of the pods on a draining node is reused (one LIST per node, not per
/// Deployment, when many Deployments are evaluated together).
const NODE_PODS_TTL: Duration = Duration::from_secs(2);

/// Pods listed on a node, and when.
type ListedPods = (Instant, Arc<Vec<Pod>>);

/// What the runtime remembers about one Deployment between evaluations. Nothing here is
/// needed for correctness after a restart: the surge state is on the scaled object.
#[derive(Debug, Default)]
pub struct Memory {
    /// Recent eviction signals for its pods.
    pub signals: Vec<SignaledPod>,
    /// A signal arrived since the last evaluation.
    pub new_signal: bool,
    /// When the first blocking signal of the current episode arrived (latency metric).
    pub first_blocked_signal: Option<Instant>,
    /// When an active surge was first seen without any known signal (hold anchor).
    pub resumed_at: Option<Timestamp>,
    /// A 403 on our write: its message, and when to try writing again.
    pub forbidden: Option<(String, Timestamp)>,
    /// Consecutive failed evaluations (back-off).
    pub failures: u32,
    /// Whether a surge was active after the last evaluation.
    pub surged: bool,
    /// A surge is up although its last signal is older than max-hold + cooldown.
    pub overdue: bool,
    /// When a surge last ended by `--max-hold`: pods left on a forgotten cordon no longer
    /// count as displaced (only new evictions do), or it would surge and expire forever.
    pub expired_at: Option<Timestamp>,
    /// The default-PDB planner's last skip reason (its Event is emitted on change only).
    pub pdb_skip: Option<&'static str>,
    /// This replica's recent creates of the default PDB: their back-off.
    pub pdb_creates: Option<super::pdbs::Creates>,
}

/// A status we wrote: the cached resourceVersion it was computed from, and the status.
type WrittenStatus = (Option<String>, EvictionAutoScalerStatus);

/// The work queues, one per reconciler, each drained on the Lease holder by its own bounded
/// loop (`runtime::drain`).
#[derive(Debug, Default)]
pub struct Queues {
    /// Deployments: the surge state machine, then their default PDB.
    pub deployments: WorkQueue,
    /// PDBs: hand-over, the PDB of a deleted Deployment.
    pub pdbs: WorkQueue,
    /// Nodes that started draining, as `("", node)`: the Deployments with pods on them.
    pub draining_nodes: WorkQueue,
    /// EvictionAutoScalers whose `spec.lastEviction` may be a signal another replica recorded.
    pub eas_signals: WorkQueue,
}

/// The runtime's shared state.
pub struct Context {
    /// API client of the Lease holder: reads always; writes only through the [`WriteGate`].
    pub client: Client,
    /// API client for the writes any replica makes by design (eviction signals on the
    /// EvictionAutoScaler, default PDBs and their Events at admission).
    pub any_replica: Client,
    /// Open while we surely hold the Lease; guards `client`'s writes.
    pub gate: Arc<WriteGate>,
    /// The current configuration (replaced when the `--config` file changes).
    config: watch::Receiver<Arc<Config>>,
    /// Event recorder (one per process, so repeats aggregate into series).
    pub recorder: Recorder,
    /// Metrics.
    pub metrics: Metrics,
    /// Caches.
    pub caches: Caches,
    /// What is due, one queue per reconciler.
    pub queues: Queues,
    /// Whether we hold the Lease.
    pub leader: watch::Receiver<bool>,
    /// Whether the caches have synced.
    pub synced: AtomicBool,
    /// UID of the EvictionAutoScaler CRD (owner of default PDBs) while it exists: kept by a
    /// watch, so a deleted CRD stops default-PDB creation and a re-created one is the owner.
    crd_uid: Mutex<Option<String>>,
    /// User PDBs seen at CREATE/UPDATE admission, with when: admission runs before the
    /// apiserver stores the object, so for [`ADMITTED_PDB_TTL`] they are planned with as if
    /// stored, and a default PDB retired for one is not re-created before it lands.
    admitted_pdbs: Mutex<Vec<(PodDisruptionBudget, Instant)>>,
    /// Per-Deployment memory.
    memory: Mutex<HashMap<Key, Memory>>,
    /// Names of draining nodes.
    draining: Mutex<BTreeSet<String>>,
    /// Recently listed pods per draining node.
    node_pods: Mutex<HashMap<String, ListedPods>>,
    /// Owners of signalled pods that are not Deployments, and when each was reported.
    skipped_owners: Mutex<HashMap<(String, String, String), Instant>>,
    /// Last `spec.lastEviction` write per EAS (debounce).
    eas_writes: Mutex<HashMap<(String, String), Instant>>,
    /// Last status written per EAS, and the cached resourceVersion it was computed from.
    status_writes: Mutex<HashMap<(String, String), WrittenStatus>>,
}

/// How often a `spec.lastEviction` write to one EAS may go out.
const EAS_WRITE_EVERY: Duration = Duration::from_secs(1);

/// How often evictions of one non-Deployment owner's pods are reported (`SurgeSkipped`).
const SKIP_REPORT_EVERY: Duration = Duration::from_secs(3600);

/// How long a PDB seen at admission counts as stored: the apiserver stores it within moments,
/// and if it never does (refused after the webhooks) the default PDB comes back after this.
pub const ADMITTED_PDB_TTL: Duration = Duration::from_secs(15);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep going.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Context {
    /// Builds the context.
    pub fn new(
        client: Client,
        config: watch::Receiver<Arc<Config>>,
        recorder: Recorder,
        metrics: Metrics,
        caches: Caches,
        leader: watch::Receiver<bool>,
    ) -> Self {
        let gate = WriteGate::new();
        Self {
            client: writer(client.clone(), Some(gate.clone()), metrics.writes.clone()),
            any_replica: writer(client, None, metrics.writes.clone()),
            gate,
            config,
            recorder,
            metrics,
            caches,
            queues: Queues::default(),
            leader,
            synced: AtomicBool::new(false),
            crd_uid: Mutex::new(None),
            admitted_pdbs: Mutex::default(),
            memory: Mutex::default(),
            draining: Mutex::default(),
            node_pods: Mutex::default(),
            eas_writes: Mutex::default(),
            status_writes: Mutex::default(),
            skipped_owners: Mutex::default(),
        }
    }

    /// The configuration now; hold the `Arc` for one decision so it sees one version.
    pub fn config(&self) -> Arc<Config> {
        self.config.borrow().clone()
    }

    /// Follows configuration changes.
    pub fn config_changes(&self) -> watch::Receiver<Arc<Config>> {
        self.config.clone()
    }

    /// Whether this replica may write workloads now.
    pub fn may_write(&self) -> bool {
        // `--controller-enabled=false` is the global kill switch: caches only, no writes.
        self.config().controller_enabled && *self.leader.borrow() && self.synced.load(Ordering::Acquire)
    }

    /// Runs `f` on the memory of `key`.
    pub fn with_memory<R>(&self, key: &Key, f: impl FnOnce(&mut Memory) -> R) -> R {
        f(lock(&self.memory).entry(key.clone()).or_default())
    }

    /// Resets the failure count of `key` after a good evaluation (a forgotten key stays so).
    pub fn reset_failures(&self, key: &Key) {
        if let Some(m) = lock(&self.memory).get_mut(key) {
            m.failures = 0;
        }
    }

    /// Forgets a deleted Deployment, and what the metrics said about it.
    pub fn forget(&self, key: &Key) {
        lock(&self.memory).remove(key);
        self.metrics.set_degraded(key, None);
        self.publish_surge_gauges();
    }

    /// This replica stopped writing (lost or released the Lease): the holder reports the
    /// surges now, and two replicas reporting them would double every alert.
    pub fn forget_surges(&self) {
        for m in lock(&self.memory).values_mut() {
            m.surged = false;
            m.overdue = false;
        }
        self.metrics.clear_degraded();
        self.publish_surge_gauges();
    }

    /// Sets the `active_surges` and `surges_overdue` gauges from the memory.
    pub fn publish_surge_gauges(&self) {
        let (surged, overdue) = {
            let memory = lock(&self.memory);
            let count = |f: fn(&Memory) -> bool| memory.values().filter(|m| f(m)).count();
            (count(|m| m.surged), count(|m| m.overdue))
        };
        self.metrics.active_surges.set(i64::try_from(surged).unwrap_or(i64::MAX));
        self.metrics.surges_overdue.set(i64::try_from(overdue).unwrap_or(i64::MAX));
    }

    /// Keys of Deployments that were surged at their last evaluation.
    pub fn surged_keys(&self) -> Vec<Key> {
        lock(&self.memory).iter().filter(|(_, m)| m.surged).map(|(k, _)| k.clone()).collect()
    }

    /// Records the drain state of `node`; returns the previous state.
    pub fn set_draining(&self, node: &str, draining: bool) -> bool {
        let mut set = lock(&self.draining);
        let was = set.contains(node);
        if draining {
            set.insert(node.to_owned());
        } else {
            set.remove(node);
            lock(&self.node_pods).remove(node);
        }
        was
    }

    /// Draining nodes now.
    pub fn draining_nodes(&self) -> Vec<String> {
        lock(&self.draining).iter().cloned().collect()
    }

    /// Whether `node` is draining.
    pub fn is_draining(&self, node: &str) -> bool {
        lock(&self.draining).contains(node)
    }

    /// Drops every reused node pod list, so the next [`Self::pods_on_node`] reads afresh.
    pub fn forget_node_pods(&self) {
        lock(&self.node_pods).clear();
    }

    /// Pods on `node` (LIST with a `spec.nodeName` field selector, reused for a moment).
    pub async fn pods_on_node(&self, node: &str) -> Result<Arc<Vec<Pod>>, kube::Error> {
        if let Some((at, pods)) = lock(&self.node_pods).get(node)
            && at.elapsed() < NODE_PODS_TTL
        {
            return Ok(pods.clone());
        }
        let api: Api<Pod> = Api::all(self.client.clone());
        let list = api.list(&ListParams::default().fields(&format!("spec.nodeName={node}"))).await?;
        let pods = Arc::new(list.items);
        lock(&self.node_pods).insert(node.to_owned(), (Instant::now(), pods.clone()));
        Ok(pods)
    }

    /// Is `namespace` in scope (annotation, else actioned list, else default)?
    pub fn namespace_enabled(&self, namespace: &str) -> bool {
        let ns = self.caches.namespaces.get(&ObjectRef::<Namespace>::new(namespace));
        let annotations = ns.as_ref().and_then(|n| n.metadata.annotations.as_ref());
        let config = self.config();
        namespace_scope(namespace, annotations, &config.actioned_namespaces, config.enabled_by_default)
            .enabled
    }

    /// The cached Deployment `key`.
    pub fn deployment(&self, key: &Key) -> Option<Arc<Deployment>> {
        self.caches.deployments.get(&ObjectRef::new(&key.1).within(&key.0))
    }

    /// The EvictionAutoScaler CRD's UID, if it exists (see [`Context::set_crd_uid`]).
    pub fn crd_uid(&self) -> Option<String> {
        lock(&self.crd_uid).clone()
    }

    /// Records the CRD's UID as read or watched (`None`: deleted, or not readable).
    pub fn set_crd_uid(&self, uid: Option<String>) {
        *lock(&self.crd_uid) = uid;
    }

    /// Remembers a user PDB just admitted (see the field `admitted_pdbs`).
    pub fn remember_admitted_pdb(&self, pdb: PodDisruptionBudget) {
        let now = Instant::now();
        let mut admitted = lock(&self.admitted_pdbs);
        admitted.retain(|(p, at)| {
            now < *at + ADMITTED_PDB_TTL
                && (p.metadata.namespace != pdb.metadata.namespace || p.metadata.name != pdb.metadata.name)
        });
        admitted.push((pdb, now));
    }

    /// The user PDBs admitted in `namespace` that still count as stored, and when the first of
    /// them stops counting.
    pub fn admitted_pdbs(&self, namespace: &str) -> (Vec<PodDisruptionBudget>, Option<Instant>) {
        let now = Instant::now();
        let mut admitted = lock(&self.admitted_pdbs);
        admitted.retain(|(_, at)| now < *at + ADMITTED_PDB_TTL);
        let here = admitted.iter().filter(|(p, _)| p.metadata.namespace.as_deref() == Some(namespace));
        let until = here.clone().map(|(_, at)| *at + ADMITTED_PDB_TTL).min();
        (here.map(|(p, _)| p.clone()).collect(), until)
    }

    /// Cached PDBs covering the pods of `deployment`.
    pub fn covering_pdbs(&self, deployment: &Deployment) -> Vec<PodDisruptionBudget> {
        let mut pdbs: Vec<PodDisruptionBudget> = self
            .caches
            .pdbs
            .state()
            .iter()
            .filter(|p| pdb_covers(p, deployment))
            .map(|p| (**p).clone())
            .collect();
        pdbs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pdbs
    }

    /// Whether the non-Deployment owner `(namespace, kind, name)` is to be reported: not in
    /// the last [`SKIP_REPORT_EVERY`] (so the set holds only recent owners).
    pub fn first_skip_of(&self, owner: (String, String, String)) -> bool {
        let mut reported = lock(&self.skipped_owners);
        reported.retain(|_, at| at.elapsed() < SKIP_REPORT_EVERY);
        if reported.contains_key(&owner) {
            return false;
        }
        reported.insert(owner, Instant::now());
        true
    }

    /// Whether a `spec.lastEviction` write to this EAS is allowed now (≤ 1 per second).
    pub fn take_eas_write_slot(&self, namespace: &str, name: &str) -> bool {
        let mut writes = lock(&self.eas_writes);
        writes.retain(|_, at| at.elapsed() < EAS_WRITE_EVERY);
        let key = (namespace.to_owned(), name.to_owned());
        if writes.contains_key(&key) {
            return false;
        }
        writes.insert(key, Instant::now());
        true
    }

    /// Whether `status` was already written to EAS `namespace/name` while the cache still
    /// shows the version it was computed from: two evaluations close together would
    /// otherwise both write it before the watch delivers the first write.
    pub fn status_already_written(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<&String>,
        status: &EvictionAutoScalerStatus,
    ) -> bool {
        lock(&self.status_writes)
            .get(&(namespace.to_owned(), name.to_owned()))
            .is_some_and(|(version, written)| version.as_ref() == cached_version && written == status)
    }

    /// Notes a status written to EAS `namespace/name` (see [`Context::status_already_written`]).
    pub fn record_status_write(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<String>,
        status: EvictionAutoScalerStatus,
    ) {
        lock(&self.status_writes).insert((namespace.to_owned(), name.to_owned()), (cached_version, status));
    }

    /// Forgets a deleted EAS's last written status.
    pub fn forget_eas(&self, namespace: &str, name: &str) {
        lock(&self.status_writes).remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Schedules every cached PDB now (start, new leadership, configuration changes).
    pub fn schedule_all_pdbs(&self) {
        for pdb in self.caches.pdbs.state() {
            if let (Some(namespace), Some(name)) = (&pdb.metadata.namespace, &pdb.metadata.name) {
                self.queues.pdbs.schedule_now((namespace.clone(), name.clone()));
            }
        }
    }

    /// Schedules every cached Deployment now (start, new leadership, namespace changes).
    pub fn schedule_all(&self) {
        for d in self.caches.deployments.state() {
            if let Some(key) = key_of(&d) {
                self.queues.deployments.schedule_now(key);
            }
        }
    }
}

/// The queue key of a Deployment.
pub fn key_of(d: &Deployment) -> Option<Key> {
    Some((d.metadata.namespace.clone()?, d.metadata.name.clone()?))
}
