//! The evaluation loops: each queue of keyed timers drained on the Lease holder, within its
//! limits, every evaluation bounded in time, its result settled into the queue (success clears
//! the back-off, failure retries with it).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info_span, warn};

use super::context::Context;
use super::intake;
use super::queue::{MAX_BACKOFF, ObjectKey, WorkQueue, instant_at};
use super::{pdb_reconciler, surge_reconciler};
use crate::error::Error;

/// Deployments evaluated at once: up to 8 for routine reasons (watch events, next checks, an
/// install's first pass over every Deployment), and up to 128 counting those a drain waits on
/// ([`Lane::Urgent`]), so a drain of a node with a hundred blocked Deployments surges
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

/// When an evaluation whose write the gate refused is tried again.
const GATE_CLOSED_RETRY: Duration = Duration::from_secs(1);

/// Drains every queue until the controller stops.
pub(super) async fn drain_queues(ctx: &Arc<Context>) {
    tokio::join!(
        drain(ctx, &ctx.queues.deployments, DEPLOYMENT_EVALUATIONS, evaluate),
        drain(ctx, &ctx.queues.default_pdbs, PDB_EVALUATIONS, evaluate_default_pdb),
        drain(ctx, &ctx.queues.pdbs, PDB_EVALUATIONS, evaluate_pdb),
        drain(ctx, &ctx.queues.draining_nodes, Limits::of(2), intake::pods_on_draining_node),
        drain(ctx, &ctx.queues.eas_signals, Limits::of(2), intake::eas_signal),
    );
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
async fn drain<F>(
    ctx: &Arc<Context>,
    queue: &WorkQueue,
    limits: Limits,
    evaluate: fn(Arc<Context>, ObjectKey) -> F,
) where
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
async fn evaluate(ctx: Arc<Context>, key: ObjectKey) {
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let result = timed(&ctx, "surge", deadline, surge_reconciler::reconcile(&ctx, &key)).await;
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
async fn evaluate_default_pdb(ctx: Arc<Context>, key: ObjectKey) {
    let Some(uid) = ctx.default_pdbs.crd_uid() else { return };
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let reconcile = async { Ok(pdb_reconciler::reconcile_deployment(&ctx, &key, &uid).await?) };
    let result = timed(&ctx, "pdb", deadline, reconcile).await;
    let _span = info_span!("default_pdb", namespace = %key.0, deployment = %key.1).entered();
    settle(&ctx.queues.default_pdbs, key, result);
}

/// One evaluation of PDB `key`: a default PDB handed over (`ownedBy` removed) or left by its
/// Deployment, bounded by [`EVALUATION_TIMEOUT`].
async fn evaluate_pdb(ctx: Arc<Context>, key: ObjectKey) {
    let Some(cached) = ctx.caches.pdb(&key) else { return };
    let deadline = tokio::time::Instant::now() + EVALUATION_TIMEOUT;
    let reconcile = async { Ok(pdb_reconciler::reconcile_pdb(&ctx, &cached).await?) };
    let result = timed(&ctx, "pdb", deadline, reconcile).await;
    let _span = info_span!("pdb", namespace = %key.0, pdb = %key.1).entered();
    settle(&ctx.queues.pdbs, key, result);
}

/// After an evaluation of `key` from `queue` (logged in the caller's span, which names the
/// object): a success clears its back-off; a write the gate refused is tried again soon
/// (demoted: the loop then drops the key and the new holder evaluates it; a Lease renewal
/// running late may still succeed; nothing was sent); any other failure is retried with
/// back-off.
fn settle(queue: &WorkQueue, key: ObjectKey, result: Result<(), Error>) {
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
