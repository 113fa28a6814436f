//! Gathering the [`Observed`] inputs of one Deployment: caches, the surge memory, plus pods
//! read on demand (one LIST per draining node, shared; a label-selected LIST of Pending pods
//! while surged). Observing only reads: the reconciler records what it decided.

use eviction_autoscaler_shared::config::SurgeTrigger;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::selector;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};

use super::memory::Recalled;
use crate::displaced::{self, SignaledPod, accepted_evictions, displacement, owning_deployment};
use crate::runtime::context::Context;
use crate::runtime::queue::ObjectKey;
use crate::surge::Observed;
use crate::surge::scaler;
use crate::surge::state::SurgeState;

/// `pdbs` read afresh (one GET each; a deleted one is left out). Their status gates a surge
/// and names the pods whose eviction was accepted; the disruption controller and the Eviction
/// API rewrite it as pods come and go, and a cached copy can lag behind.
pub async fn read_pdbs(
    ctx: &Context,
    namespace: &str,
    pdbs: &[PodDisruptionBudget],
) -> Result<Vec<PodDisruptionBudget>, kube::Error> {
    let api: Api<PodDisruptionBudget> = Api::namespaced(ctx.client.clone(), namespace);
    let mut fresh = Vec::with_capacity(pdbs.len());
    for pdb in pdbs {
        fresh.extend(api.get_opt(pdb.metadata.name.as_deref().unwrap_or_default()).await?);
    }
    Ok(fresh)
}

/// The pods `deployment`'s selector selects, read now (a small LIST, where a node's listing
/// holds every pod on it); `None` if its selector cannot be put in a query (the API server
/// refuses such a Deployment, so never in practice: the node listings then stand).
pub async fn read_own_pods(ctx: &Context, deployment: &Deployment) -> Result<Option<Vec<Pod>>, kube::Error> {
    let namespace = deployment.metadata.namespace.as_deref().unwrap_or_default();
    let Some(selector) =
        deployment.spec.as_ref().and_then(|s| selector::query(&s.selector).ok()).filter(|s| !s.is_empty())
    else {
        return Ok(None);
    };
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    Ok(Some(api.list(&ListParams::default().labels(&selector)).await?.items))
}

/// The EAS named like `pdb` in `namespace`, from the cache.
pub fn cached_eas(ctx: &Context, namespace: &str, pdb: &str) -> Option<EvictionAutoScaler> {
    ctx.caches.eas(namespace, pdb)
}

/// How long signals are remembered: the signal window, or max-hold if longer (a surge's hold
/// is anchored on its last signal).
pub fn signal_horizon(ctx: &Context) -> SignedDuration {
    let config = ctx.config();
    SignedDuration::try_from(config.signal_window.max(config.max_hold)).unwrap_or(SignedDuration::MAX)
}

/// Observes the Deployment `deployment` covered by `pdbs` (each cached or freshly read), and
/// what the surge memory recalls of it (`resumed_at`: the hold anchor this observation
/// assumed, for the reconciler to record). `own_pods`, if read afresh ([`read_own_pods`]),
/// replace the node listings as the Deployment's pods; the listings still tell whether a
/// drain is in progress.
pub async fn observe(
    ctx: &Context,
    key: &ObjectKey,
    deployment: Deployment,
    pdbs: Vec<PodDisruptionBudget>,
    own_pods: Option<&[Pod]>,
    now: Timestamp,
) -> Result<(Observed, Recalled), kube::Error> {
    let (namespace, name) = key;
    let hpas = ctx.caches.hpas_in(namespace);
    let scaled_objects = ctx.caches.scaled_objects_in(namespace);
    let surge_active = scaler::detect(&deployment, &hpas, &scaled_objects)
        .is_ok_and(|s| SurgeState::read(s.annotations()).active());
    let blocked = eviction_autoscaler_shared::budget::blocks_eviction(&pdbs);
    let nodes = ctx.nodes.names_and_edge_listing();
    let draining: Vec<&str> = nodes.iter().map(|(node, _)| node.as_str()).collect();

    // Pods matter only while surged or blocked; otherwise no pod is read at all.
    let mut on_draining: Vec<Pod> = Vec::new();
    // A drain is in progress while a draining node still has pods to evict; a cordoned node
    // that kubectl has emptied (only DaemonSet pods left) holds nothing.
    let mut drain_in_progress = !draining.is_empty();
    if (surge_active || blocked) && !draining.is_empty() {
        let owned = |p: &&Pod| {
            p.metadata.namespace.as_deref() == Some(namespace.as_str())
                && owning_deployment(p).as_deref() == Some(name.as_str())
        };
        let on_node = |p: &&Pod| {
            p.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| draining.contains(&n))
        };
        // A node whose drain-edge listing is on its way is not waited for: that listing makes
        // the Deployments with pods there due (urgent) once it lands, and until then its drain
        // counts as in progress. A surge decided meanwhile is decided from the other nodes and
        // the eviction signals.
        drain_in_progress = nodes.iter().any(|(_, edge_listing)| *edge_listing);
        let others = nodes.iter().filter(|(_, edge_listing)| !edge_listing);
        let listings = others.map(|(node, _)| ctx.nodes.pods_on(&ctx.client, node));
        for pods in futures::future::try_join_all(listings).await? {
            drain_in_progress |= pods.iter().any(displaced::drain_pending);
            if own_pods.is_none() {
                on_draining.extend(pods.iter().filter(owned).cloned());
            }
        }
        if let Some(pods) = own_pods {
            on_draining = pods.iter().filter(owned).filter(on_node).cloned().collect();
        }
    }

    let window = ctx.config().signal_window;
    let mut recalled = ctx.surges.recall(key, now, signal_horizon(ctx), !draining.is_empty());
    let current = current_signals(ctx, namespace, &on_draining, &recalled.signals, now).await?;
    // Evictions after the node listings were taken: the budgets list them, or listed them.
    let mut evicted = accepted_evictions(&pdbs);
    evicted.extend(ctx.accepted_evictions.in_namespace(namespace, tokio::time::Instant::now()));
    let trigger = ctx.config().surge_trigger;
    let mut displacement = displacement(&on_draining, &current, &evicted, trigger, window, now);
    if let Some(expired_at) = recalled.expired_at.filter(|_| !surge_active) {
        let newer: Vec<_> = current.iter().filter(|s| s.at > expired_at).cloned().collect();
        displacement = crate::displaced::displacement(&[], &newer, &evicted, trigger, window, now);
    }
    let first_eas =
        pdbs.first().and_then(|p| cached_eas(ctx, namespace, p.metadata.name.as_deref().unwrap_or_default()));
    let eas_last = first_eas
        .as_ref()
        .and_then(|e| e.spec.last_eviction.as_ref())
        .and_then(|e| e.eviction_time.as_ref())
        .map(|t| t.0);
    let memory_last = recalled.signals.iter().map(|s| s.at).max();
    let mut last_signal = [memory_last, eas_last, recalled.resumed_at].into_iter().flatten().max();
    if surge_active && last_signal.is_none() {
        // Resuming a surge (restart, new leader, Go leftovers) with no signal known: hold
        // from now, so max-hold still bounds it.
        recalled.resumed_at = Some(now);
        last_signal = Some(now);
    }

    let unschedulable_pods = if surge_active { unschedulable(ctx, namespace, &deployment).await? } else { 0 };
    let observed = Observed {
        namespace_enabled: ctx.namespace_enabled(namespace),
        displacement,
        any_node_draining: drain_in_progress,
        last_signal,
        new_signal: recalled.new_signal,
        unschedulable_pods,
        forbidden: recalled.forbidden.clone(),
        previous: first_eas.and_then(|e| e.status.clone()),
        pdbs,
        hpas,
        scaled_objects,
        deployment,
    };
    Ok((observed, recalled))
}

/// The signals that still describe a displaced pod. A signal is a past observation: the pod
/// may have been evicted since (then it is no longer displaced, and counting it would surge
/// again after the drain). Pods already listed on a draining node need no read; the others
/// (with `--surge-trigger=any`, or a node that stopped draining) are read by name.
async fn current_signals(
    ctx: &Context,
    namespace: &str,
    on_draining: &[Pod],
    signals: &[SignaledPod],
    now: Timestamp,
) -> Result<Vec<SignaledPod>, kube::Error> {
    let window = SignedDuration::try_from(ctx.config().signal_window).unwrap_or(SignedDuration::MAX);
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let mut current: Vec<SignaledPod> = Vec::new();
    for signal in signals {
        if now.duration_since(signal.at) > window || current.iter().any(|c| c.pod == signal.pod) {
            continue;
        }
        if let Some(pod) =
            on_draining.iter().find(|p| p.metadata.name.as_deref() == Some(signal.pod.as_str()))
        {
            // The listing is newer than the signal: a pod kubectl evicted meanwhile is
            // terminating and no longer displaced.
            current.push(SignaledPod {
                displaceable: displaced::is_displaceable(pod),
                on_draining_node: true,
                ..signal.clone()
            });
            continue;
        }
        let counts_anywhere = ctx.config().surge_trigger == SurgeTrigger::Any;
        if !counts_anywhere || !signal.displaceable {
            continue; // `drain` trigger: only pods still on a draining node (listed above) count
        }
        if let Some(pod) = api.get_opt(&signal.pod).await? {
            let node_draining =
                pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| ctx.nodes.contains(n));
            current.push(SignaledPod {
                displaceable: displaced::is_displaceable(&pod),
                on_draining_node: node_draining,
                ..signal.clone()
            });
        }
    }
    Ok(current)
}

/// Pending-as-unschedulable pods of `deployment`, read only when it lacks Ready replicas.
async fn unschedulable(ctx: &Context, namespace: &str, deployment: &Deployment) -> Result<u32, kube::Error> {
    let status = deployment.status.clone().unwrap_or_default();
    let wanted = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    if status.ready_replicas.unwrap_or(0) >= wanted {
        return Ok(0);
    }
    let Some(selector) =
        deployment.spec.as_ref().and_then(|s| selector::query(&s.selector).ok()).filter(|s| !s.is_empty())
    else {
        return Ok(0);
    };
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let pods = api.list(&ListParams::default().labels(&selector).fields("status.phase=Pending")).await?;
    Ok(u32::try_from(pods.items.iter().filter(|p| displaced::is_unschedulable(p)).count())
        .unwrap_or(u32::MAX))
}
