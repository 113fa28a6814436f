//! Intake: what makes work due. Eviction signals (the webhook's queue, EAS
//! `spec.lastEviction`), node drain edges, watch events mapped to the keys they concern
//! ([`affected`]), and the objects the webhook admitted ([`admitted`]). An eviction the
//! webhook holds comes with its signal ([`eviction_hold`]).

pub mod admitted;
mod affected;
pub mod eviction_hold;
pub mod nodes;
pub mod recent;

use std::sync::Arc;

use eviction_autoscaler_shared::admission::{EvictionHold, SignalReceiver};
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::drain::is_draining;
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::Event;
use tracing::{debug, info, instrument};

use super::context::Context;
use super::kube::cached::{CachedDeployment, CachedEas, CachedPdb};
use super::queue::{Lane, ObjectKey};
use crate::displaced::{SignaledPod, is_displaceable, owning_deployment, refused_eviction};
use crate::eas::last_eviction_patch;
use crate::error;
use crate::keda::ScaledObject;
use crate::surge::status::degraded_reason;
use crate::surge::{events, reasons};

/// Where a signal came from.
#[derive(Debug)]
pub enum Source {
    /// This replica's webhook, which may be holding the eviction for an answer.
    Webhook(Option<EvictionHold>),
    /// An EAS `spec.lastEviction` (possibly written by another replica).
    Eas,
}

/// Signals handled at once: each reads its pod and may record on the EAS, and a drain sends
/// all its evictions together.
const CONCURRENT_SIGNALS: usize = 16;

/// Consumes the webhook's signals (the admission queue's signal lane), a batch at a time,
/// until it closes.
pub async fn webhook_signals(ctx: Arc<Context>, mut signals: SignalReceiver) {
    let mut batch = Vec::new();
    let ctx = &ctx;
    while signals.next_batch(&mut batch).await {
        futures::stream::iter(batch.drain(..))
            .for_each_concurrent(CONCURRENT_SIGNALS, |signal| async move {
                let source = Source::Webhook(signal.hold);
                handle_signal(ctx, &signal.namespace, &signal.pod, signal.at, source).await;
            })
            .await;
    }
}

/// Handles one eviction signal ([`signal_deployment`]) and counts it once handled.
async fn handle_signal(ctx: &Arc<Context>, namespace: &str, pod: &str, at: Timestamp, source: Source) {
    let label = match source {
        Source::Webhook(_) => "webhook",
        Source::Eas => "eas",
    };
    if let Err(e) = signal_deployment(ctx, namespace, pod, at, source).await {
        debug!(pod, error = %e, "eviction signal not processed");
    }
    ctx.metrics.signal(label);
}

/// Gives an eviction signal to the Deployment of the pod: reads the pod, finds its Deployment,
/// holds the eviction if the webhook asks and the surge can open its budget ([`eviction_hold`]),
/// remembers the signal and schedules the Deployment. A webhook signal the budget refused is
/// also recorded on the EAS (any replica), so the Lease holder sees it; one the budget allowed
/// costs no write. Any early return drops the hold: the webhook then allows at once.
#[instrument(skip(ctx, source))]
async fn signal_deployment(
    ctx: &Arc<Context>,
    namespace: &str,
    pod_name: &str,
    at: Timestamp,
    source: Source,
) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let settled = || ctx.metrics.signals_settled.inc(); // nothing for an evaluation to take up
    let Some(pod) = pods.get_opt(pod_name).await? else {
        settled();
        return Ok(());
    };
    let Some(deployment_name) = owning_deployment(&pod) else {
        debug!(
            pod = pod_name,
            "not owned by a Deployment's ReplicaSet; skipped (StatefulSets and others are never surged)"
        );
        report_skipped_owner(ctx, &pod).await;
        settled();
        return Ok(());
    };
    let key = (namespace.to_owned(), deployment_name);
    let Some(deployment) = ctx.deployment(&key) else {
        settled();
        return Ok(());
    };
    let pdbs = ctx.covering_pdbs(&deployment);
    let blocked = refused_eviction(&pdbs, &pod);
    let displaceable = is_displaceable(&pod);
    if blocked {
        ctx.metrics.blocked_evictions.inc();
    }
    let on_draining_node =
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| ctx.nodes.contains(n));
    let from_webhook = matches!(source, Source::Webhook(_));
    if let Source::Webhook(Some(held)) = source {
        let eviction = eviction_hold::Eviction {
            pod: &pod,
            deployment,
            key: &key,
            pdbs: &pdbs,
            on_draining_node,
            refused: blocked,
        };
        eviction_hold::consider(ctx, held, eviction);
    }
    let signal = SignaledPod { pod: pod_name.to_owned(), at, on_draining_node, displaceable };
    if !ctx.surges.record_signal(&key, signal, blocked) {
        settled(); // known already
        return Ok(());
    }
    let lane = if blocked { Lane::Urgent } else { Lane::Normal }; // a drain waits on a refusal
    ctx.queues.deployments.schedule_now_in(lane, key);
    // Out of scope there is no EAS to record on (the PATCH would only answer 404); an eviction
    // the budget allows needs no surge, so the holder need not hear of it.
    if from_webhook
        && blocked
        && ctx.namespace_enabled(namespace)
        && let [pdb] = pdbs.as_slice()
    {
        record_on_eas(ctx, namespace, pdb.metadata.name.as_deref().unwrap_or_default(), pod_name, at).await?;
    }
    Ok(())
}

/// Records, once an hour per owner, why evictions of its pods never surge anything.
async fn report_skipped_owner(ctx: &Context, pod: &Pod) {
    let Some(owner) = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true))
    else {
        return; // a bare pod: nothing to scale, nothing to say
    };
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    if !ctx.may_write() || !ctx.skipped_owners.first((namespace, owner.kind.clone(), owner.name.clone())) {
        return;
    }
    let note = format!(
        "evictions of pods of {} {} are never surged: only Deployments are scaled \
         (a StatefulSet's ordered rollout conflicts with surging)",
        owner.kind, owner.name
    );
    let object = kube::Resource::object_ref(pod, &());
    if let Err(e) = ctx.recorder.publish(&ctx.client, &object, false, events::SKIPPED, &note).await {
        debug!(error = %e, "could not publish Event");
    }
}

/// Writes `spec.lastEviction` on the EAS (any replica; at most once per second per EAS).
async fn record_on_eas(
    ctx: &Context,
    namespace: &str,
    eas: &str,
    pod: &str,
    at: Timestamp,
) -> Result<(), kube::Error> {
    if !ctx.eas_writes.first((namespace.to_owned(), eas.to_owned())) {
        return Ok(());
    }
    let api: Api<EvictionAutoScaler> = Api::namespaced(ctx.any_replica.clone(), namespace);
    match api.patch(eas, &PatchParams::default(), &Patch::Merge(last_eviction_patch(pod, at))).await {
        Ok(_) => Ok(()),
        Err(e) if error::is_not_found(&e) => {
            // The holder creates it once it has seen the PDB; a drain's next retry brings a
            // new signal by then.
            debug!(eas, pod, "no EvictionAutoScaler yet to record the eviction on");
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Deployment events: what they make due ([`affected::by_deployment`]); a deleted one is
/// forgotten.
pub fn on_deployment(ctx: &Arc<Context>, event: &Event<CachedDeployment>) {
    if let Event::Delete(d) = event
        && let Some(key) = d.key()
    {
        ctx.forget(&key);
        ctx.default_pdbs.deployment_deleted(&key);
    }
    schedule(ctx, affected::by_deployment(event, &ctx.caches));
}

/// PDB events: held evictions let through as its budget opens; its evicted pods remembered;
/// what they make due
/// ([`affected::by_pdb`]).
pub fn on_pdb(ctx: &Arc<Context>, event: &Event<CachedPdb>) {
    let event = &as_cached(event, CachedPdb::to_pdb);
    if let Event::Apply(pdb) | Event::InitApply(pdb) = event {
        ctx.holds.pdb_changed(pdb);
        ctx.accepted_evictions.saw(pdb, tokio::time::Instant::now());
    }
    schedule(ctx, affected::by_pdb(event, &ctx.caches));
}

/// HPA events: what they make due ([`affected::by_hpa`]).
pub fn on_hpa(ctx: &Arc<Context>, event: &Event<HorizontalPodAutoscaler>) {
    schedule(ctx, affected::by_hpa(event));
}

/// ScaledObject events: what they make due ([`affected::by_scaled_object`]).
pub fn on_scaled_object(ctx: &Arc<Context>, event: &Event<ScaledObject>) {
    schedule(ctx, affected::by_scaled_object(event));
}

/// Namespace events: what they make due ([`affected::by_namespace`]).
pub fn on_namespace(ctx: &Arc<Context>, event: &Event<Namespace>) {
    schedule(ctx, affected::by_namespace(event, &ctx.caches));
}

/// `event` with its object as decisions take it (from its compact cache entry).
fn as_cached<C, K>(event: &Event<C>, to_object: fn(&C) -> K) -> Event<K> {
    match event {
        Event::Apply(c) => Event::Apply(to_object(c)),
        Event::InitApply(c) => Event::InitApply(to_object(c)),
        Event::Delete(c) => Event::Delete(to_object(c)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

fn schedule(ctx: &Context, due: affected::Due) {
    for key in due.deployments {
        ctx.queues.deployments.schedule_now(key);
    }
    for key in due.pdbs {
        ctx.queues.pdbs.schedule_now(key);
    }
}

/// EAS events: a `spec.lastEviction` within the signal window is a signal (another replica
/// may have seen it); any change re-evaluates the target ([`affected::by_eas`]).
pub fn on_eas(ctx: &Arc<Context>, event: &Event<CachedEas>) {
    let event = &as_cached(event, CachedEas::to_eas);
    let eas = match event {
        Event::Apply(eas) | Event::InitApply(eas) => eas,
        Event::Delete(eas) => {
            if let (Some(namespace), Some(name)) = (&eas.metadata.namespace, &eas.metadata.name) {
                ctx.statuses.forget(namespace, name);
            }
            return;
        }
        Event::Init | Event::InitDone => return,
    };
    let (Some(namespace), Some(name)) = (eas.metadata.namespace.clone(), eas.metadata.name.clone()) else {
        return;
    };
    // Its surge pods cannot be scheduled (the holder's finding): no hold on its PDB can end well.
    if eas.status.as_ref().and_then(degraded_reason).as_deref() == Some(reasons::UNSCHEDULABLE) {
        ctx.holds.stop(&(namespace.clone(), name.clone()));
    }
    schedule(ctx, affected::by_eas(event));
    // Not at a re-list: at start-up every recorded eviction would come back as news.
    if matches!(event, Event::Apply(_)) && eas.spec.last_eviction.is_some() {
        ctx.queues.eas_signals.schedule_now((namespace, name));
    }
}

/// The `spec.lastEviction` of EvictionAutoScaler `key` (as cached now), if it is a signal this
/// replica has not seen: recorded and its Deployment made due, as a webhook signal would be.
/// Only the holder runs it; followers wrote these in the first place.
pub async fn eas_signal(ctx: Arc<Context>, key: ObjectKey) {
    let Some(eas) = ctx.caches.eas(&key.0, &key.1) else { return };
    let namespace = key.0;
    let Some(last) = eas.spec.last_eviction.clone() else { return };
    let Some(at) = last.eviction_time.map(|t| t.0) else { return };
    let key = (namespace.clone(), eas.spec.target_name.clone());
    if ctx.surges.knows_signal(&key, &last.pod_name, at) {
        return; // our own record, or a status write echoing it
    }
    let window =
        jiff::SignedDuration::try_from(ctx.config().signal_window).unwrap_or(jiff::SignedDuration::MAX);
    if Timestamp::now().duration_since(at) > window || last.pod_name.is_empty() {
        return;
    }
    handle_signal(&ctx, &namespace, &last.pod_name, at, Source::Eas).await;
}

/// Node events: track draining nodes; on the drain edge evaluate the Deployments with pods
/// on the node (their PDB-blocked pods count as displaced before any eviction); on any
/// change evaluate surged Deployments (the hold depends on "any node draining").
pub fn on_node(ctx: &Arc<Context>, event: &Event<Node>) {
    let (name, draining) = match event {
        Event::Apply(n) | Event::InitApply(n) => {
            (n.metadata.name.clone(), is_draining(n, &ctx.config().drain_taints))
        }
        Event::Delete(n) => (n.metadata.name.clone(), false),
        Event::Init | Event::InitDone => return,
    };
    let Some(name) = name else { return };
    let was = ctx.nodes.set(&name, draining);
    if was == draining {
        return;
    }
    info!(node = %name, draining, "node drain state changed");
    ctx.update_holding();
    for key in ctx.surges.surged_keys() {
        ctx.queues.deployments.schedule_now(key);
    }
    if draining {
        ctx.queues.draining_nodes.schedule_now((String::new(), name));
    }
}

/// A node started draining (`key` is `("", node)`): the Deployments with pods on it are due,
/// since their PDB-blocked pods count as displaced before any eviction; the drain edge is
/// their trigger (latency metric).
pub async fn pods_on_draining_node(ctx: Arc<Context>, key: ObjectKey) {
    let Some(since) = ctx.nodes.draining_since(&key.1) else { return }; // drained no more
    ctx.nodes.set_edge_listing(&key.1, true);
    match ctx.nodes.pods_on(&ctx.client, &key.1).await {
        Ok(pods) => {
            for pod in pods.iter() {
                if let (Some(ns), Some(deployment)) = (pod.metadata.namespace.clone(), owning_deployment(pod))
                {
                    let deployment = (ns, deployment);
                    ctx.surges.triggered(&deployment, since);
                    ctx.queues.deployments.schedule_now_in(Lane::Urgent, deployment);
                }
            }
        }
        Err(e) => debug!(node = %key.1, error = %e, "could not list pods on the draining node"),
    }
    ctx.nodes.set_edge_listing(&key.1, false);
}
