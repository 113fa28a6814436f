//! Holding an eviction the webhook handed over with its signal: decided from this replica's
//! caches ([`crate::eviction_hold::decide`]), answered by `HeldEvictions` as the PDB's watch
//! shows its budget opening, or when `--eviction-hold` runs out (then an Event says what the
//! budget was waiting for).

use std::sync::Arc;

use eviction_autoscaler_shared::admission::EvictionHold;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tracing::debug;

use crate::displaced::{is_displaceable, is_unschedulable};
use crate::eviction_hold::{Case, decide};
use crate::runtime::context::Context;
use crate::runtime::queue::ObjectKey;
use crate::runtime::surge_reconciler::observe::{cached_eas, read_own_pods};
use crate::surge::Observed;

/// Event reason of a hold that ran out before the budget opened.
pub const HOLD_EXPIRED: &str = "EvictionHoldExpired";

/// What the hold decision needs to know about one signalled pod.
pub struct Eviction<'a> {
    /// The pod, as read for the signal.
    pub pod: &'a Pod,
    /// Its Deployment, cached.
    pub deployment: Deployment,
    /// The Deployment's key.
    pub key: &'a ObjectKey,
    /// The PDBs covering it, cached.
    pub pdbs: &'a [PodDisruptionBudget],
    /// Its node is draining.
    pub on_draining_node: bool,
    /// Its one covering PDB refuses it now.
    pub refused: bool,
}

/// Holds the eviction if the surge can open its budget; otherwise drops `hold`, which the
/// webhook takes as "not held" and allows at once.
pub fn consider(ctx: &Arc<Context>, hold: EvictionHold, eviction: Eviction<'_>) {
    let Eviction { pod, deployment, key, pdbs, on_draining_node, refused } = eviction;
    let namespace = key.0.as_str();
    let pdb_name = pdbs.first().and_then(|p| p.metadata.name.as_deref()).unwrap_or_default();
    let observed = Observed {
        namespace_enabled: ctx.namespace_enabled(namespace),
        pdbs: pdbs.to_vec(),
        hpas: ctx.caches.hpas_in(namespace),
        scaled_objects: ctx.caches.scaled_objects_in(namespace),
        previous: cached_eas(ctx, namespace, pdb_name).and_then(|e| e.status.clone()),
        deployment,
        ..Observed::default()
    };
    let config = ctx.config();
    let case = Case { pod, on_draining_node, refused, observed };
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    if let Err(why) = decide(case, &config, Timestamp::now()) {
        debug!(namespace, pod = pod_name, ?why, "eviction not held");
        return;
    }
    let [pdb] = pdbs else { return };
    let until = hold.answer_by.min(tokio::time::Instant::now() + config.eviction_hold);
    let Some(id) = ctx.holds.hold(pdb, key.clone(), pod_name, hold) else { return };
    let pdb_key = (namespace.to_owned(), pdb_name.to_owned());
    let ctx = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(until).await;
        if let Some((deployment, pod)) = ctx.holds.expire(&pdb_key, id) {
            report_expired(&ctx, &deployment, &pdb_key.1, &pod).await;
        }
    });
}

/// Says on the Deployment (at most once a minute) what the budget was waiting for when a hold
/// ran out: its surge pods Pending, or Running but not Ready.
async fn report_expired(ctx: &Context, key: &ObjectKey, pdb: &str, pod: &str) {
    let Some(deployment) = ctx.deployment(key) else { return };
    if !ctx.expired_holds.first(key.clone()) {
        return;
    }
    let waiting_for = match read_own_pods(ctx, &deployment).await {
        Ok(Some(pods)) => waiting_for(&pods),
        Ok(None) => "its pods could not be listed".to_owned(),
        Err(e) => format!("its pods could not be listed: {e}"),
    };
    let note = format!(
        "the eviction of pod {pod} was held for --eviction-hold and PodDisruptionBudget {pdb} still allowed no \
         disruption: {waiting_for}; the eviction is refused as without a hold, and its retry is held again"
    );
    let object = kube::Resource::object_ref(&deployment, &());
    if let Err(e) = ctx.recorder.publish(&ctx.any_replica, &object, true, HOLD_EXPIRED, &note).await {
        debug!(error = %e, "could not publish Event");
    }
}

/// What a budget waits for, from the Deployment's pods.
fn waiting_for(pods: &[Pod]) -> String {
    let live = pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none());
    let (mut unschedulable, mut pending, mut not_ready) = (0, 0, 0);
    for pod in live {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if is_unschedulable(pod) {
            unschedulable += 1;
        } else if phase == Some("Pending") {
            pending += 1;
        } else if phase == Some("Running") && !is_displaceable(pod) {
            not_ready += 1;
        }
    }
    let mut parts = Vec::new();
    if unschedulable > 0 {
        parts.push(format!("{unschedulable} pod(s) Pending as unschedulable (no node has room)"));
    }
    if pending > 0 {
        parts.push(format!("{pending} pod(s) Pending (not yet started)"));
    }
    if not_ready > 0 {
        parts.push(format!("{not_ready} pod(s) Running but not Ready"));
    }
    if parts.is_empty() {
        "every pod is Ready; the disruption controller had not counted the new ones yet".to_owned()
    } else {
        format!("the surge's pods are not Ready yet: {}", parts.join(", "))
    }
}
