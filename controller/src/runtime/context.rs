//! Shared state of the controller runtime, passed around as `Arc<Context>`: the clients, the
//! configuration, the caches and the queues every reconciler uses, and each one's own memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eviction_autoscaler_shared::admission::{HoldEnd, HoldSwitch};
use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::scope::namespace_scope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;

use super::held_evictions::HeldEvictions;
use super::intake::nodes::DrainingNodes;
use super::intake::recent::Recent;
use super::kube::caches::Caches;
use super::kube::recorder::Recorder;
use super::kube::write::{RateLimit, WriteGate, writer};
use super::metrics::Metrics;
use super::pdb_reconciler::memory::PdbMemory;
use super::queue::{ObjectKey, WorkQueue};
use super::surge_reconciler::memory::{AcceptedEvictions, StatusWrites, SurgeMemory};

/// The work queues, one per reconciler, each drained on the Lease holder by its own bounded
/// loop (`runtime::drain`).
#[derive(Debug, Default)]
pub struct Queues {
    /// Deployments: the surge state machine.
    pub deployments: WorkQueue,
    /// Deployments whose default PDB is due (1 s after their surge evaluations).
    pub default_pdbs: WorkQueue,
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
    /// Draining nodes and the pods on them.
    pub nodes: DrainingNodes,
    /// The surge reconciler's memory of each Deployment.
    pub surges: SurgeMemory,
    /// Pods whose eviction the API accepted, kept a little longer than their PDBs list them.
    pub accepted_evictions: AcceptedEvictions,
    /// EvictionAutoScaler statuses the surge reconciler wrote.
    pub statuses: StatusWrites,
    /// The default-PDB reconciler's memory.
    pub default_pdbs: PdbMemory,
    /// `spec.lastEviction` writes per EvictionAutoScaler (at most one per second).
    pub eas_writes: Recent<(String, String)>,
    /// Owners of signalled pods that are not Deployments, `(namespace, kind, name)`, reported
    /// at most once an hour.
    pub skipped_owners: Recent<(String, String, String)>,
    /// Evictions this replica's webhook holds.
    pub holds: HeldEvictions,
    /// Tells the webhook whether to hold evictions at all ([`Context::update_holding`]).
    holding: HoldSwitch,
    /// Deployments whose expired hold was reported (`EvictionHoldExpired`), at most once a minute.
    pub expired_holds: Recent<ObjectKey>,
}

/// How often a `spec.lastEviction` write to one EAS may go out.
const EAS_WRITE_EVERY: Duration = Duration::from_secs(1);

/// How often evictions of one non-Deployment owner's pods are reported (`SurgeSkipped`).
const SKIP_REPORT_EVERY: Duration = Duration::from_secs(3600);

/// How often an expired hold is reported per Deployment (`EvictionHoldExpired`).
const EXPIRED_HOLD_REPORT_EVERY: Duration = Duration::from_secs(60);

impl Context {
    /// Builds the context.
    pub fn new(
        client: Client,
        config: watch::Receiver<Arc<Config>>,
        recorder: Recorder,
        metrics: Metrics,
        caches: Caches,
        leader: watch::Receiver<bool>,
        holding: HoldSwitch,
    ) -> Self {
        let gate = WriteGate::new();
        // One limit for every write of the process, as client-go has one per client config.
        let limit = RateLimit::new(config.clone(), metrics.writes_rate_limited.clone());
        let holds = HeldEvictions::new(metrics.evictions_holding.clone());
        Self {
            client: writer(client.clone(), limit.clone(), Some(gate.clone()), metrics.writes.clone()),
            any_replica: writer(client, limit, None, metrics.writes.clone()),
            gate,
            config,
            recorder,
            metrics,
            caches,
            queues: Queues::default(),
            leader,
            synced: AtomicBool::new(false),
            nodes: DrainingNodes::default(),
            surges: SurgeMemory::default(),
            accepted_evictions: AcceptedEvictions::default(),
            statuses: StatusWrites::default(),
            default_pdbs: PdbMemory::default(),
            eas_writes: Recent::new(EAS_WRITE_EVERY),
            skipped_owners: Recent::new(SKIP_REPORT_EVERY),
            holds,
            holding,
            expired_holds: Recent::new(EXPIRED_HOLD_REPORT_EVERY),
        }
    }

    /// Turns the webhook's holding on while a hold can be answered (caches synced, the
    /// controller and `--eviction-hold` on, a node draining), else off, answering any held
    /// eviction at once ([`HoldEnd::Stopped`]).
    pub fn update_holding(&self) {
        let config = self.config();
        let on = self.synced.load(Ordering::Acquire)
            && config.controller_enabled
            && !config.eviction_hold.is_zero()
            && self.nodes.any();
        self.holding.set(on);
        if !on {
            self.holds.answer_all(HoldEnd::Stopped);
        }
    }

    /// Stops holding for good (shutdown): every held eviction answered at once, and any a
    /// signal still in intake asks for.
    pub fn stop_holding(&self) {
        self.holding.set(false);
        self.holds.shut();
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

    /// Forgets a deleted Deployment, and what the metrics said about it.
    pub fn forget(&self, key: &ObjectKey) {
        self.surges.forget(key);
        self.default_pdbs.forget(key);
        self.metrics.set_degraded(key, None);
        self.publish_surge_gauges();
    }

    /// This replica stopped writing (lost or released the Lease): the holder reports the
    /// surges now, and two replicas reporting them would double every alert.
    pub fn forget_surges(&self) {
        self.surges.forget_surges();
        self.metrics.clear_degraded();
        self.publish_surge_gauges();
    }

    /// Sets the `active_surges` and `surges_overdue` gauges from the memory.
    pub fn publish_surge_gauges(&self) {
        let (surged, overdue) = self.surges.counts();
        self.metrics.active_surges.set(i64::try_from(surged).unwrap_or(i64::MAX));
        self.metrics.surges_overdue.set(i64::try_from(overdue).unwrap_or(i64::MAX));
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
    pub fn deployment(&self, key: &ObjectKey) -> Option<Deployment> {
        self.caches.deployments.get(&ObjectRef::new(&key.1).within(&key.0)).map(|d| d.to_deployment())
    }

    /// Cached PDBs covering the pods of `deployment`.
    pub fn covering_pdbs(&self, deployment: &Deployment) -> Vec<PodDisruptionBudget> {
        self.caches.pdbs_covering(deployment)
    }

    /// Schedules every cached PDB now (start, new leadership, configuration changes).
    pub fn schedule_all_pdbs(&self) {
        for pdb in self.caches.pdbs.state() {
            if let Some(key) = pdb.meta().key() {
                self.queues.pdbs.schedule_now(key);
            }
        }
    }

    /// Schedules every cached Deployment now (start, new leadership, namespace changes).
    pub fn schedule_all(&self) {
        for d in self.caches.deployments.state() {
            if let Some(key) = d.key() {
                self.queues.deployments.schedule_now(key);
            }
        }
    }
}

/// The queue key of a Deployment.
pub fn key_of(d: &Deployment) -> Option<ObjectKey> {
    Some((d.metadata.namespace.clone()?, d.metadata.name.clone()?))
}
