//! The controller runtime: the [`Controller`] and its tasks — caches, leader election, intake
//! — and the loops that drain each reconciler's queue (`surge/`, `pdb/`). See README.md, "The
//! runtime in one picture".

mod admission;
mod affected;
mod cached;
mod caches;
mod context;
mod crds;
mod intake;
pub mod leader;
pub mod metrics;
mod nodes;
mod pdb;
mod queue;
mod recent;
mod recorder;
pub(crate) mod surge;
pub mod write;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use eviction_autoscaler_shared::admission::AdmissionReceiver;
use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::health::Readiness;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tracing::{debug, info, info_span, warn};

use self::cached::CachedDeployment;
use self::caches::{reflect, trim_eas, trim_hpa, trim_namespace, trim_node, trim_pdb};
use self::context::Context;
use self::leader::{LeaseConfig, LeaseTimings};
use self::metrics::Metrics;
use self::queue::{Key, WorkQueue};
use crate::error::Error;

/// Deployments evaluated at once: up to 8 for routine reasons (watch events, next checks, an
/// install's first pass over every Deployment), and up to 128 counting those a drain waits on
/// ([`queue::Lane::Urgent`]), so a drain of a node with a hundred blocked Deployments surges
/// them together rather than eight at a time. Each holds an HTTP/1.1 connection while it reads
/// or writes.
const DEPLOYMENT_EVALUATIONS: Limits = Limits { normal: 8, urgent: 128 };

/// Most default PDBs, and apart from them most PDBs (hand-overs, PDBs of deleted
/// Deployments), evaluated at once.
const PDB_EVALUATIONS: Limits = Limits::of(4);

/// Longest one evaluation of a Deployment may take, API calls included: below the apiserver's
/// longest admission webhook timeout (30 s), so a write held by a webhook that never answers is
/// given up and retried with back-off.
pub const EVALUATION_TIMEOUT: Duration = Duration::from_secs(20);

/// How long after a surge evaluation its Deployment's default PDB is evaluated: during a
/// drain a Deployment's status moves every second or so, and each move is a surge evaluation;
/// they share one default-PDB evaluation, which reads the whole namespace (a namespace of a
/// hundred Deployments being drained otherwise spends most of the product's CPU there).
const DEFAULT_PDB_AFTER: Duration = Duration::from_secs(1);

/// How long writes stay allowed without leader election: the life of the process.
const WITHOUT_LEASE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Longest wait at shutdown for the writes in flight before the Lease is released.
const SHUTDOWN_WRITES: Duration = Duration::from_secs(5);

/// When an evaluation whose write the gate refused is tried again.
const GATE_CLOSED_RETRY: Duration = Duration::from_secs(1);

/// Longest back-off between failed evaluations of one Deployment.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Locks one of the runtime's memories. A panic while holding the lock leaves plain data
/// behind; keep going.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A controller ready to run: metrics registered.
pub struct Controller {
    config: watch::Receiver<Arc<Config>>,
    reconfigure: watch::Sender<Arc<Config>>,
    client: Client,
    readiness: Readiness,
    metrics: Metrics,
    lease_timings: LeaseTimings,
    identity: String,
}

impl Controller {
    /// Prepares the controller and registers its metrics in `registry`.
    pub fn new(config: Arc<Config>, client: Client, readiness: Readiness, registry: &mut Registry) -> Self {
        let metrics = Metrics::new();
        metrics.register(registry);
        let pod = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| "eviction-autoscaler".into());
        let identity = format!("{pod}_{}", uuid::Uuid::new_v4());
        let (reconfigure, config) = watch::channel(config);
        Self {
            config,
            reconfigure,
            client,
            readiness,
            metrics,
            lease_timings: LeaseTimings::default(),
            identity,
        }
    }

    /// Where a changed configuration goes (the `--config` file re-read): every Deployment
    /// and PDB is then evaluated again under it. Settings read only at start (addresses,
    /// leader election) keep their first value.
    pub fn reconfigure_handle(&self) -> watch::Sender<Arc<Config>> {
        self.reconfigure.clone()
    }

    /// The metrics (already registered).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Overrides the Lease timings (tests use short ones).
    pub fn with_lease_timings(mut self, timings: LeaseTimings) -> Self {
        self.lease_timings = timings;
        self
    }

    /// Overrides the Lease holder identity.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// Runs until `shutdown` completes: takes what the webhook hands over (`admitted`), keeps
    /// caches on this replica, writes while holding the Lease; releases the Lease before
    /// returning.
    pub async fn run(
        self,
        admitted: AdmissionReceiver,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let Controller { config, client, readiness, metrics, identity, lease_timings, .. } = self;
        let (caches, writers) = caches::caches();
        let config_changes = config.clone();
        let config = config.borrow().clone();
        let (leader_tx, leader_rx) = watch::channel(!config.leader_elect);
        let recorder = recorder::Recorder::new(identity.clone());
        let ctx = Arc::new(Context::new(
            client.clone(),
            config_changes.clone(),
            recorder,
            metrics,
            caches.clone(),
            leader_rx.clone(),
        ));
        if !config.leader_elect {
            ctx.gate.open_until(tokio::time::Instant::now() + WITHOUT_LEASE);
        }

        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        {
            let c = ctx.clone();
            tasks.spawn(reflect(
                Api::<Deployment>::all(client.clone()),
                writers.deployments,
                CachedDeployment::from,
                move |e| intake::on_deployment(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect(
                Api::<PodDisruptionBudget>::all(client.clone()),
                writers.pdbs,
                trim_pdb,
                move |e| intake::on_pdb(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect(Api::<Node>::all(client.clone()), writers.nodes, trim_node, move |e| {
                intake::on_node(&c, e)
            }));
            let c = ctx.clone();
            tasks.spawn(reflect(
                Api::<Namespace>::all(client.clone()),
                writers.namespaces,
                trim_namespace,
                move |e| intake::on_namespace(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect(
                Api::<HorizontalPodAutoscaler>::all(client.clone()),
                writers.hpas,
                trim_hpa,
                move |e| intake::on_hpa(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect(
                Api::<EvictionAutoScaler>::all(client.clone()),
                writers.eas,
                trim_eas,
                move |e| intake::on_eas(&c, e),
            ));
        }
        tasks.spawn(crds::watch_keda(ctx.clone()));
        tasks.spawn(crds::watch_own_crd(ctx.clone()));
        tasks.spawn(sync_then_work(ctx.clone(), readiness.clone()));
        // Intake ends when the webhook drops its queue; that is not a failure.
        let AdmissionReceiver { signals, objects } = admitted;
        let intake = [
            tokio::spawn(intake::webhook_signals(ctx.clone(), signals)),
            tokio::spawn(admission::consume(ctx.clone(), objects)),
        ];
        let lease_task = config.leader_elect.then(|| {
            let lease = LeaseConfig {
                namespace: config.lease_namespace.clone(),
                name: config.lease_name.clone(),
                identity,
                timings: lease_timings,
            };
            let api: Api<Lease> = Api::namespaced(ctx.any_replica.clone(), &lease.namespace);
            let mut stop = stop_rx.clone();
            tokio::spawn(leader::run(api, lease, leader_tx, ctx.gate.clone(), async move {
                let _ = stop.wait_for(|s| *s).await;
            }))
        });

        tokio::pin!(shutdown);
        let result = tokio::select! {
            () = &mut shutdown => Ok(()),
            Some(ended) = tasks.join_next() => {
                warn!(?ended, "a controller task ended");
                Err(Error::TaskStopped("cache or evaluation loop"))
            }
        };
        // Stop writing, wait for the writes in flight and release the Lease (bounded: a write
        // that will not finish leaves the Lease to run out instead), then end everything else.
        let _ = stop_tx.send(true);
        let stopped = match lease_task {
            Some(lease_task) => tokio::time::timeout(SHUTDOWN_WRITES, lease_task).await.is_ok(),
            None => tokio::time::timeout(SHUTDOWN_WRITES, ctx.gate.close()).await.is_ok(),
        };
        if !stopped {
            warn!("a write was still in flight at shutdown; the Lease is left to expire");
        }
        readiness.set_caches_synced(false);
        tasks.abort_all();
        for task in intake {
            task.abort();
        }
        result
    }
}

/// Waits for the caches, marks readiness, then evaluates Deployments as they come due.
async fn sync_then_work(ctx: Arc<Context>, readiness: Readiness) {
    if !ctx.caches.wait_until_ready().await {
        return;
    }
    ctx.default_pdbs.set_crd_uid(pdb::crd_uid(&ctx).await);
    ctx.synced.store(true, Ordering::Release);
    readiness.set_caches_synced(true);
    info!("caches synced");
    // Every object carrying surge annotations is resumed by evaluating everything once, and
    // again whenever we become the Lease holder. Part of this task, so they end with it.
    ctx.schedule_all();
    ctx.schedule_all_pdbs();
    tokio::join!(
        follow_leadership(&ctx),
        follow_config(&ctx),
        drain(&ctx, &ctx.queues.deployments, DEPLOYMENT_EVALUATIONS, evaluate),
        drain(&ctx, &ctx.queues.default_pdbs, PDB_EVALUATIONS, evaluate_default_pdb),
        drain(&ctx, &ctx.queues.pdbs, PDB_EVALUATIONS, evaluate_pdb),
        drain(&ctx, &ctx.queues.draining_nodes, Limits::of(2), intake::pods_on_draining_node),
        drain(&ctx, &ctx.queues.eas_signals, Limits::of(2), intake::eas_signal),
    );
}

/// Resumes every Deployment and PDB when we become the Lease holder; forgets what we counted
/// when we stop being it.
async fn follow_leadership(ctx: &Arc<Context>) {
    let mut leader = ctx.leader.clone();
    ctx.metrics.leader.set(i64::from(*leader.borrow()));
    while leader.changed().await.is_ok() {
        let leading = *leader.borrow();
        ctx.metrics.leader.set(i64::from(leading));
        if leading {
            info!("became the Lease holder: resuming every Deployment");
            ctx.schedule_all();
            ctx.schedule_all_pdbs();
        } else {
            ctx.forget_surges();
        }
    }
}

/// Evaluates every Deployment and PDB again under a changed configuration.
async fn follow_config(ctx: &Arc<Context>) {
    let mut config_changes = ctx.config_changes();
    while config_changes.changed().await.is_ok() {
        info!("configuration changed: evaluating every Deployment and PDB again");
        ctx.schedule_all();
        ctx.schedule_all_pdbs();
    }
}

/// How many evaluations of one queue run at once: `normal` of any lane, up to `urgent` when
/// the others are urgent.
#[derive(Clone, Copy)]
struct Limits {
    normal: usize,
    urgent: usize,
}

impl Limits {
    /// One limit for every lane.
    const fn of(limit: usize) -> Self {
        Self { normal: limit, urgent: limit }
    }
}

/// Evaluates the keys of `queue` as they come due, on the Lease holder only: side by side,
/// within `limits`, never one key twice at once, each within EVALUATION_TIMEOUT — one slow or
/// hung API call (a webhook that never answers on one Deployment's writes) must not hold back
/// every other surge and revert.
async fn drain<F>(ctx: &Arc<Context>, queue: &WorkQueue, limits: Limits, evaluate: fn(Arc<Context>, Key) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut running = tokio::task::JoinSet::new();
    let mut in_flight = HashMap::new(); // task id -> its key
    let mut again = HashMap::new(); // key -> its lane, for keys due while being evaluated
    loop {
        tokio::select! {
            (lane, key) = queue.next(running.len() >= limits.normal), if running.len() < limits.urgent => {
                if !ctx.may_write() {
                    continue; // followers only keep caches and record signals
                }
                if in_flight.values().any(|k| *k == key) {
                    let wanted = again.entry(key).or_insert(lane);
                    *wanted = lane.min(*wanted); // evaluated again once the current pass ends
                    continue;
                }
                let task = running.spawn(evaluate(ctx.clone(), key.clone()));
                in_flight.insert(task.id(), key);
            }
            Some(done) = running.join_next_with_id() => {
                let id = match &done { Ok((id, ())) => *id, Err(e) => e.id() };
                let Some(key) = in_flight.remove(&id) else { continue };
                if done.is_err() {
                    // A panic (tokio printed it): evaluated again after a pause, not never.
                    warn!(namespace = %key.0, name = %key.1, "evaluation panicked; retrying");
                    queue.schedule(key.clone(), tokio::time::Instant::now() + MAX_BACKOFF);
                }
                if let Some(lane) = again.remove(&key) {
                    queue.schedule_now_in(lane, key);
                }
            }
        }
    }
}

/// One surge evaluation of Deployment `key`, bounded by [`EVALUATION_TIMEOUT`]; schedules the
/// next one, and its default PDB [`DEFAULT_PDB_AFTER`] later.
async fn evaluate(ctx: Arc<Context>, key: Key) {
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let result = timed(&ctx, "surge", deadline, surge::reconcile(&ctx, &key)).await;
    if let Ok(next) = &result {
        if let Some(at) = next {
            ctx.queues.deployments.schedule(key.clone(), instant_at(*at));
        }
        ctx.queues.default_pdbs.schedule(key.clone(), tokio::time::Instant::now() + DEFAULT_PDB_AFTER);
    }
    let _span = info_span!("surge", namespace = %key.0, deployment = %key.1).entered();
    settle(&ctx.queues.deployments, key, result.map(|_| ()));
    if !ctx.may_write() {
        ctx.forget_surges(); // demoted while evaluating: what it counted is not ours
    }
}

/// The default PDB of Deployment `key` (1 s after its surge evaluations), bounded by
/// [`EVALUATION_TIMEOUT`].
async fn evaluate_default_pdb(ctx: Arc<Context>, key: Key) {
    let Some(uid) = ctx.default_pdbs.crd_uid() else { return };
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let reconcile = async { Ok(pdb::reconcile_deployment(&ctx, &key, &uid).await?) };
    let result = timed(&ctx, "pdb", deadline, reconcile).await;
    let _span = info_span!("default_pdb", namespace = %key.0, deployment = %key.1).entered();
    settle(&ctx.queues.default_pdbs, key, result);
}

/// One evaluation of PDB `key`: a default PDB handed over (`ownedBy` removed) or left by its
/// Deployment, bounded by [`EVALUATION_TIMEOUT`].
async fn evaluate_pdb(ctx: Arc<Context>, key: Key) {
    let Some(cached) = ctx.caches.pdbs.get(&ObjectRef::new(&key.1).within(&key.0)) else { return };
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let reconcile = async { Ok(pdb::reconcile_pdb(&ctx, &cached).await?) };
    let result = timed(&ctx, "pdb", deadline, reconcile).await;
    let _span = info_span!("pdb", namespace = %key.0, pdb = %key.1).entered();
    settle(&ctx.queues.pdbs, key, result);
}

/// After an evaluation of `key` from `queue` (logged in the caller's span, which names the
/// object): a success clears its back-off; a write the gate refused is tried again soon
/// (demoted: the loop then drops the key and the new holder evaluates it; a Lease renewal
/// running late may still succeed; nothing was sent); any other failure is retried with
/// back-off.
fn settle(queue: &WorkQueue, key: Key, result: Result<(), Error>) {
    match result {
        Ok(()) => queue.succeeded(&key),
        Err(e) if e.is_not_leader() => {
            debug!("{e}");
            queue.schedule(key, tokio::time::Instant::now() + GATE_CLOSED_RETRY);
        }
        Err(e) => {
            let backoff = queue.retry(key);
            warn!(error = %e, ?backoff, "evaluation failed; retrying");
        }
    }
}

/// Runs one reconciler's part of an evaluation until `deadline`, into its duration histogram
/// and, failed, its failure count.
async fn timed<T>(
    ctx: &Context,
    reconciler: &'static str,
    deadline: tokio::time::Instant,
    work: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let started = tokio::time::Instant::now();
    let result =
        tokio::time::timeout_at(deadline, work).await.unwrap_or(Err(Error::TimedOut(EVALUATION_TIMEOUT)));
    ctx.metrics.reconciled(reconciler, started.elapsed(), result.as_ref().err().map(Error::metric_label));
    result
}

/// The monotonic instant for wall-clock time `at` (now if in the past).
pub(super) fn instant_at(at: Timestamp) -> tokio::time::Instant {
    let ahead = at.duration_since(Timestamp::now());
    tokio::time::Instant::now() + Duration::try_from(ahead).unwrap_or(Duration::ZERO)
}
