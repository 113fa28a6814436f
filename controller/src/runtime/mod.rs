//! The controller runtime: the [`Controller`] and its tasks. Its rooms, by job (drawn in
//! controller/README.md, "The runtime in one picture"):
//!
//! * `kube/`: the Kubernetes plumbing — caches fed by watches, the CRDs followed, the writer
//!   and its gate, the Lease, Events;
//! * `intake/`: what makes work due — watch events, the webhook's signals and admitted
//!   objects, draining nodes — turned into keys on the queues;
//! * `queue.rs` and `evaluations.rs`: the keyed timer queues and the loops that drain them;
//! * `surge_reconciler/` and `pdb_reconciler/`: the two reconcilers, each with its memory,
//!   driving the pure planners (`crate::surge`, `crate::pdb`).

mod census;
mod context;
mod evaluations;
mod held_evictions;
mod intake;
pub mod kube;
pub mod metrics;
mod pdb_reconciler;
mod queue;
pub(crate) mod surge_reconciler;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ::kube::Client;
use ::kube::api::Api;
use eviction_autoscaler_shared::admission::AdmissionReceiver;
use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::health::Readiness;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use prometheus_client::registry::Registry;
use std::future::Future;
use tokio::sync::watch;
use tracing::{info, warn};

use self::context::Context;
use self::kube::cached::{CachedDeployment, CachedEas, CachedPdb};
use self::kube::caches::{self, reflect, trim_hpa, trim_namespace, trim_node};
use self::kube::leader::{self, LeaseConfig, LeaseTimings};
use self::kube::{crds, recorder};
use self::metrics::Metrics;
use crate::error::Error;
use crate::pdb::ownership::is_ours;

pub use self::evaluations::EVALUATION_TIMEOUT;

/// How long writes stay allowed without leader election: the life of the process.
const WITHOUT_LEASE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Longest wait at shutdown for the writes in flight before the Lease is released.
const SHUTDOWN_WRITES: Duration = Duration::from_secs(5);

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
            admitted.holding.clone(),
        ));
        if !config.leader_elect {
            ctx.gate.open_until(tokio::time::Instant::now() + WITHOUT_LEASE);
        }

        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        {
            let c = ctx.clone();
            tasks.spawn(reflect::<Deployment, _, _>(
                client.clone(),
                writers.deployments,
                CachedDeployment::from,
                move |e| intake::on_deployment(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect::<PodDisruptionBudget, _, _>(
                client.clone(),
                writers.pdbs,
                CachedPdb::from,
                move |e| intake::on_pdb(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect::<Node, _, _>(client.clone(), writers.nodes, trim_node, move |e| {
                intake::on_node(&c, e)
            }));
            let c = ctx.clone();
            tasks.spawn(reflect::<Namespace, _, _>(
                client.clone(),
                writers.namespaces,
                trim_namespace,
                move |e| intake::on_namespace(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect::<HorizontalPodAutoscaler, _, _>(
                client.clone(),
                writers.hpas,
                trim_hpa,
                move |e| intake::on_hpa(&c, e),
            ));
            let c = ctx.clone();
            tasks.spawn(reflect::<EvictionAutoScaler, _, _>(
                client.clone(),
                writers.eas,
                CachedEas::from,
                move |e| intake::on_eas(&c, e),
            ));
        }
        tasks.spawn(crds::watch_keda(ctx.clone()));
        tasks.spawn(crds::watch_own_crd(ctx.clone()));
        tasks.spawn(sync_then_work(ctx.clone(), readiness.clone()));
        // Intake ends when the webhook drops its queue; that is not a failure.
        let AdmissionReceiver { signals, objects, .. } = admitted;
        let intake = [
            tokio::spawn(intake::webhook_signals(ctx.clone(), signals)),
            tokio::spawn(intake::admitted::consume(ctx.clone(), objects)),
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
        // Held evictions first: the webhook is draining its requests meanwhile.
        ctx.stop_holding();
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
    ctx.default_pdbs.set_crd_uid(crds::own_crd_uid(&ctx).await);
    ctx.synced.store(true, Ordering::Release);
    readiness.set_caches_synced(true);
    info!("caches synced");
    ctx.update_holding();
    note_owned_pdbs_while_creation_is_off(&ctx);
    // Every object carrying surge annotations is resumed by evaluating everything once, and
    // again whenever we become the Lease holder. Part of this task, so they end with it.
    ctx.schedule_all();
    ctx.schedule_all_pdbs();
    tokio::join!(
        follow_leadership(&ctx),
        follow_config(&ctx),
        evaluations::drain_queues(&ctx),
        census::publish(&ctx)
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
        ctx.update_holding();
        note_owned_pdbs_while_creation_is_off(ctx);
        ctx.schedule_all();
        ctx.schedule_all_pdbs();
    }
}

/// Says once per configuration that default PDBs exist while `pdb.create` is off: they are kept
/// and kept in sync, none is made. An operator coming from the Go project, whose chart creates
/// them by default, would otherwise not know why new Deployments get none.
fn note_owned_pdbs_while_creation_is_off(ctx: &Context) {
    if ctx.config().pdb_create {
        return;
    }
    let owned = ctx.caches.pdbs.state().iter().filter(|pdb| is_ours(&pdb.to_pdb().metadata)).count();
    if owned > 0 {
        warn!(
            owned,
            "pdb.create is off: the default PDBs that exist are kept and kept in sync, but no new \
             Deployment gets one; set controllerConfig.pdb.create=true (--pdb-create, PDB_CREATE) \
             to create them again"
        );
    }
}
