//! Fake kubelet: bound pods become Running, then Ready after `pod_ready_delay`; the
//! `kube-sim.dev/unready: "true"` annotation holds a pod unready; terminating pods are
//! removed (DELETE with grace 0) once their scaled grace period is over.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{DeleteOptions, Gvr, WriteOptions};
use crate::cluster_logic::common::{add_seconds, format_time, int_at, parse_time};
use crate::cluster_logic::kubelet::{KubeletAction, kubelet_step};
use crate::store::{EventType, StoredEvent};

pub(crate) struct Kubelet;

fn bound(pod: &Value) -> bool {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty())
}

/// The API layer stamps `deletionTimestamp` with the time of the DELETE; upstream stamps the
/// end of the grace period, which is what the kubelet rule expects.
fn with_upstream_deadline(pod: &Value) -> Value {
    let mut pod = pod.clone();
    let grace = int_at(&pod, "/metadata/deletionGracePeriodSeconds", 0);
    if let Some(at) = pod.pointer("/metadata/deletionTimestamp").and_then(parse_time) {
        pod["metadata"]["deletionTimestamp"] = json!(format_time(add_seconds(at, grace)));
    }
    pod
}

fn until(at: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let millis = (at.as_millisecond() - now.as_millisecond()).max(0);
    Duration::from_millis(u64::try_from(millis).unwrap_or(0) + 20)
}

impl Reconciler for Kubelet {
    /// Reads the store directly; the index is not used.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "", "pods") && event.event_type != EventType::Deleted && bound(&event.object) {
            vec![key_of(&event.object)]
        } else {
            Vec::new()
        }
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("", "pods", None, &bound).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let pod = ctx.get("", "pods", &key.0, &key.1)?;
            let now = jiff::Timestamp::now();
            let delay = i64::try_from(ctx.behaviour.pod_ready_delay.as_millis().div_ceil(1000)).unwrap_or(1);
            let gvr = Gvr::new("", "v1", "pods");
            match kubelet_step(
                &with_upstream_deadline(&pod),
                delay,
                ctx.behaviour.termination_grace_scale,
                now,
            ) {
                KubeletAction::Wait(at) => at.map(|at| until(at, now)),
                KubeletAction::UpdateStatus(status) => {
                    let body = json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": key.1, "namespace": key.0, "resourceVersion": pod["metadata"]["resourceVersion"]},
                        "status": status});
                    let result = ctx
                        .cluster
                        .update(&gvr, Some(&key.0), &key.1, Some("status"), body, &WriteOptions::default())
                        .await;
                    result.err().and_then(|e| retry_delay(&e))
                }
                KubeletAction::Remove => {
                    let opts = DeleteOptions {
                        grace_period_seconds: Some(0),
                        precondition_uid: pod["metadata"]["uid"].as_str().map(String::from),
                        ..DeleteOptions::default()
                    };
                    let result = ctx.cluster.delete(&gvr, Some(&key.0), &key.1, &opts).await;
                    result.err().and_then(|e| retry_delay(&e))
                }
            }
        })
    }
}
