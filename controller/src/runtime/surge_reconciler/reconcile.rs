//! Evaluating one Deployment: observe, plan, write once, then publish Events and EAS status. A
//! surge is decided from the caches; a revert (and a surge after a 409) re-reads what it
//! touches and plans again first. Runs on the Lease holder only.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{debug, info, instrument, warn};

use super::eas_sync;
use super::memory::Evaluated;
use super::observe::{observe, read_own_pods, read_pdbs, signal_horizon};
use crate::error::{self, Error};
use crate::keda::ScaledObject;
use crate::runtime::context::Context;
use crate::runtime::queue::{Lane, ObjectKey, instant_at};
use crate::surge::scaler::hpa_targets_deployment;
use crate::surge::{self, Observed, Outcome, Plan, PlannedEvent, ScalerKind, Write};

/// How long a 403 stops further writes for a Deployment (bounded writes, no hot loop).
const FORBIDDEN_PAUSE_SECS: i64 = 300;

/// Evaluates the Deployment `key`; returns when to evaluate it again, if ever.
#[instrument(skip_all, fields(namespace = %key.0, deployment = %key.1))]
pub async fn reconcile(ctx: &Arc<Context>, key: &ObjectKey) -> Result<Option<Timestamp>, Error> {
    let Some(cached) = ctx.deployment(key) else {
        ctx.forget(key);
        release_orphaned_autoscaler(ctx, key).await?;
        return Ok(None);
    };
    let now = Timestamp::now();
    let began = tokio::time::Instant::now();
    let pdbs = ctx.covering_pdbs(&cached);
    let (mut observed, mut recalled) = observe(ctx, key, cached, pdbs.clone(), None, now).await?;
    if let Some(at) = recalled.resumed_at {
        ctx.surges.resumed(key, at);
    }
    let mut plan = surge::plan(&observed, &ctx.config(), now);
    let mut deployment_read = false;
    if scales_up(&plan) && ctx.surges.after_conflict(key) {
        // Our last write lost to another writer: the caches were behind. Decide again from
        // fresh reads: the PDBs (with the Deployment the write touches), then its pods, listed
        // after the PDBs were read, so a pod whose eviction the budget no longer lists is seen gone.
        let (pdbs, deployment) = tokio::try_join!(read_pdbs(ctx, &key.0, &pdbs), read_deployment(ctx, key))?;
        let own_pods = read_own_pods(ctx, &deployment).await?;
        (observed, recalled) = observe(ctx, key, deployment, pdbs, own_pods.as_deref(), now).await?;
        plan = surge::plan(&observed, &ctx.config(), now);
        deployment_read = true;
    }
    record_overdue(ctx, key, &observed, &plan, now);
    if plan.write.is_some() {
        // A surge is decided from the caches, where a drain waits on it, and written on the
        // cached resourceVersion: the merge patch carries only the replicas and our
        // annotations, and a Deployment changed since fails it with 409. Other writes are
        // planned again on the Deployment read afresh. An autoscaler's is always read afresh.
        if !deployment_read && !scales_up(&plan) {
            observed.deployment = read_deployment(ctx, key).await?;
        }
        refresh_autoscalers(ctx, key, &mut observed).await?;
        plan = surge::plan(&observed, &ctx.config(), now);
    }
    if let Some(write) = &plan.write {
        match apply(ctx, key, write).await {
            Ok(()) => record_action(ctx, key, &plan),
            Err(e) if error::is_conflict(&e) => {
                debug!("conflict on write; re-reading");
                ctx.surges.conflicted(key);
                ctx.queues.deployments.schedule_now_in(Lane::Urgent, key.clone());
                return Ok(None);
            }
            Err(e) if error::is_forbidden(&e) => {
                let message = format!(
                    "writing {} {} was forbidden: {}",
                    kind_name(write.kind),
                    write.name,
                    error::message(&e)
                );
                warn!(%message, "surge write forbidden; pausing writes for this Deployment");
                // One Warning per refused write (at most one per pause): who to ask and why.
                let refused = PlannedEvent {
                    warning: true,
                    reason: surge::reasons::FORBIDDEN,
                    note: format!("{message}; trying again in {} min", FORBIDDEN_PAUSE_SECS / 60),
                };
                publish(ctx, &observed.deployment, &refused).await;
                let until = now
                    .checked_add(SignedDuration::from_secs(FORBIDDEN_PAUSE_SECS))
                    .unwrap_or(Timestamp::MAX);
                ctx.surges.forbid(key, message, until);
                // Evaluate again now to record SurgeForbidden; no write happens until `until`.
                ctx.queues.deployments.schedule_now(key.clone());
                return Ok(Some(until));
            }
            Err(e) if error::is_not_found(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    publish_events(ctx, &observed.deployment, &plan).await;
    // Events that depend on a new signal were said (or needed no saying): not again.
    let evaluated = ctx.surges.signals_seen(key, &recalled);
    let eas_synced = async {
        eas_sync::eas_status(ctx, key, &observed, &plan, now).await?;
        eas_sync::eas_objects(ctx, key, &observed, plan.surge_value.is_some()).await
    }
    .await;
    // Settled once every write this evaluation makes for them has been made (or has failed).
    ctx.metrics.signals_settled.inc_by(evaluated);
    eas_synced?;
    let result = Evaluated {
        surged: plan.surge_value.is_some(),
        settled: matches!(plan.outcome, Outcome::Idle | Outcome::Skipped),
        expired: matches!(plan.outcome, Outcome::Reverted { expired: true }),
        any_draining: !ctx.nodes.names().is_empty(),
        began,
    };
    ctx.surges.evaluated(key, result, now, signal_horizon(ctx));
    ctx.publish_surge_gauges();
    ctx.metrics.set_degraded(key, plan.degraded.as_ref().map(|d| d.reason));
    // A paused (403) Deployment is looked at again when the pause ends, event or not.
    let pause_end = ctx.surges.pause_end(key, now);
    Ok(match (plan.next_check, pause_end) {
        (Some(next), Some(end)) => Some(next.min(end)),
        (next, end) => next.or(end),
    })
}

/// Whether `plan` raises the replicas: decided from the caches unless the last write lost.
fn scales_up(plan: &Plan) -> bool {
    matches!(plan.outcome, Outcome::Started | Outcome::SteppedUp | Outcome::Resurged)
}

/// A surge up (or being reverted) although its last signal is older than max-hold plus a
/// cooldown means the revert keeps failing; the `surges_overdue` gauge lets an alert say so.
/// A surge not yet overdue is looked at again when it would become so, even while writes are
/// paused after a 403.
fn record_overdue(ctx: &Context, key: &ObjectKey, observed: &Observed, plan: &Plan, now: Timestamp) {
    let surge_up = plan.surge_value.is_some() || matches!(plan.outcome, Outcome::Reverted { .. });
    let limit = SignedDuration::try_from(ctx.config().max_hold.saturating_add(ctx.config().cooldown))
        .unwrap_or(SignedDuration::MAX);
    let overdue_at =
        observed.last_signal.filter(|_| surge_up).and_then(|signal| signal.checked_add(limit).ok());
    let overdue = overdue_at.is_some_and(|at| now > at);
    if let Some(at) = overdue_at.filter(|_| !overdue) {
        ctx.queues
            .deployments
            .schedule(key.clone(), instant_at(at.checked_add(SignedDuration::from_secs(1)).unwrap_or(at)));
    }
    ctx.surges.set_overdue(key, overdue);
    ctx.publish_surge_gauges();
}

/// The Deployment is gone but its HPA or ScaledObject still carries our raised minimum:
/// restore it (the same revert the state machine plans for an out-of-scope Deployment).
async fn release_orphaned_autoscaler(ctx: &Context, key: &ObjectKey) -> Result<(), kube::Error> {
    let (namespace, name) = key;
    let hpas: Vec<_> =
        ctx.caches.hpas_in(namespace).into_iter().filter(|h| hpa_targets_deployment(h, name)).collect();
    let scaled_objects: Vec<_> =
        ctx.caches.scaled_objects_in(namespace).into_iter().filter(|s| s.targets_deployment(name)).collect();
    let mut stub = Deployment::default();
    stub.metadata.name = Some(name.clone());
    stub.metadata.namespace = Some(namespace.clone());
    let mut observed = Observed { deployment: stub, hpas, scaled_objects, ..Default::default() };
    let planned = surge::plan(&observed, &ctx.config(), Timestamp::now());
    let Some(write) = planned.write.filter(|w| w.kind != ScalerKind::Deployment) else { return Ok(()) };
    refresh_autoscalers(ctx, key, &mut observed).await?;
    let planned = surge::plan(&observed, &ctx.config(), Timestamp::now());
    if planned.write.as_ref().is_some_and(|w| w.kind == write.kind) {
        let write = Write { deployment_replicas: None, ..planned.write.unwrap_or(write) };
        match apply(ctx, key, &write).await {
            Ok(()) => info!(object = %write.name, "Deployment deleted: restored its autoscaler's minimum"),
            Err(e) if error::is_conflict(&e) || error::is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn kind_name(kind: ScalerKind) -> &'static str {
    match kind {
        ScalerKind::Deployment => "Deployment",
        ScalerKind::Hpa => "HorizontalPodAutoscaler",
        ScalerKind::ScaledObject => "ScaledObject",
    }
}

/// The Deployment `key` as the API server has it now.
async fn read_deployment(ctx: &Context, key: &ObjectKey) -> Result<Deployment, kube::Error> {
    let (namespace, name) = key;
    Api::<Deployment>::namespaced(ctx.client.clone(), namespace).get(name).await
}

/// Replaces the cached HPAs and ScaledObjects scaling `key` with fresh reads.
async fn refresh_autoscalers(
    ctx: &Context,
    key: &ObjectKey,
    observed: &mut Observed,
) -> Result<(), kube::Error> {
    let (namespace, name) = key;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), namespace);
    for hpa in observed.hpas.iter_mut().filter(|h| hpa_targets_deployment(h, name)) {
        if let Some(fresh) = hpas.get_opt(hpa.metadata.name.as_deref().unwrap_or_default()).await? {
            *hpa = fresh;
        }
    }
    let scaled: Api<ScaledObject> = Api::namespaced(ctx.client.clone(), namespace);
    for so in observed.scaled_objects.iter_mut().filter(|s| s.targets_deployment(name)) {
        if let Some(fresh) = scaled.get_opt(so.metadata.name.as_deref().unwrap_or_default()).await? {
            *so = fresh;
        }
    }
    Ok(())
}

/// The merge patch for `write`: value and annotations together, guarded by resourceVersion
/// (a merge patch carrying metadata.resourceVersion fails with 409 if the object moved on).
pub fn write_patch(write: &Write) -> Value {
    let annotations: serde_json::Map<String, Value> = write
        .annotations
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
        .collect();
    let mut patch =
        json!({"metadata": {"resourceVersion": write.resource_version, "annotations": annotations}});
    if let Some(value) = write.value {
        let field = match write.kind {
            ScalerKind::Deployment => "replicas",
            ScalerKind::Hpa => "minReplicas",
            ScalerKind::ScaledObject => "minReplicaCount",
        };
        patch["spec"] = json!({ field: value });
    }
    patch
}

async fn apply(ctx: &Context, key: &ObjectKey, write: &Write) -> Result<(), kube::Error> {
    let (namespace, name) = key;
    let params = PatchParams::default();
    let patch = Patch::Merge(write_patch(write));
    match write.kind {
        ScalerKind::Deployment => {
            Api::<Deployment>::namespaced(ctx.client.clone(), namespace)
                .patch(&write.name, &params, &patch)
                .await?;
        }
        ScalerKind::Hpa => {
            Api::<HorizontalPodAutoscaler>::namespaced(ctx.client.clone(), namespace)
                .patch(&write.name, &params, &patch)
                .await?;
        }
        ScalerKind::ScaledObject => {
            Api::<ScaledObject>::namespaced(ctx.client.clone(), namespace)
                .patch(&write.name, &params, &patch)
                .await?;
        }
    }
    if let Some(replicas) = write.deployment_replicas {
        // The autoscaler acts on its own schedule; scale now so the budget opens now. Not
        // guarded: it only raises replicas to the floor the autoscaler now enforces anyway.
        let scale = Patch::Merge(json!({"spec": {"replicas": replicas}}));
        Api::<Deployment>::namespaced(ctx.client.clone(), namespace).patch(name, &params, &scale).await?;
    }
    Ok(())
}

fn record_action(ctx: &Context, key: &ObjectKey, plan: &Plan) {
    let action = match plan.outcome {
        Outcome::Started => "surge",
        Outcome::SteppedUp => "step_up",
        Outcome::Resurged => "resurge",
        Outcome::Reverted { expired: false } => "revert",
        Outcome::Reverted { expired: true } => "expire",
        Outcome::OverrideRecorded => "override_recorded",
        _ => "other",
    };
    ctx.metrics.action(action);
    info!(action, surge_value = ?plan.surge_value, baseline = plan.baseline, annotations = ?plan.annotation_summary(), "scale write acknowledged");
    let started = matches!(plan.outcome, Outcome::Started | Outcome::SteppedUp | Outcome::Resurged);
    let ends_episode = started || matches!(plan.outcome, Outcome::Reverted { .. });
    let first = if ends_episode { ctx.surges.take_first_trigger(key) } else { None };
    if let (true, Some(first)) = (started, first) {
        ctx.metrics.signal_to_scale_latency.observe(first.elapsed().as_secs_f64());
    }
}

async fn publish_events(ctx: &Context, deployment: &Deployment, plan: &Plan) {
    for planned in &plan.events {
        publish(ctx, deployment, planned).await;
    }
}

async fn publish(ctx: &Context, deployment: &Deployment, planned: &PlannedEvent) {
    let object = deployment.object_ref(&());
    if let Err(e) =
        ctx.recorder.publish(&ctx.client, &object, planned.warning, planned.reason, &planned.note).await
    {
        warn!(reason = planned.reason, error = %e, "could not publish Event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surge::AnnotationEdits;

    #[test]
    fn write_patch_is_guarded_and_atomic() {
        let write = Write {
            kind: ScalerKind::Deployment,
            name: "web".into(),
            resource_version: Some("42".into()),
            value: Some(2),
            annotations: AnnotationEdits::from([
                ("evictionSurgeReplicas".to_owned(), Some("2".to_owned())),
                ("gone".to_owned(), None),
            ]),
            deployment_replicas: None,
        };
        assert_eq!(
            write_patch(&write),
            json!({"metadata": {"resourceVersion": "42", "annotations": {"evictionSurgeReplicas": "2", "gone": null}},
                   "spec": {"replicas": 2}})
        );
        let hpa = Write { kind: ScalerKind::Hpa, value: None, ..write };
        assert!(write_patch(&hpa).get("spec").is_none(), "annotation-only write leaves the spec alone");
    }
}
