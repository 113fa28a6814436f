//! Fake kubelet: bound pods become Running, then Ready after `pod_ready_delay`; the
//! `kube-sim.dev/unready: "true"` annotation holds a pod unready; terminating pods are
//! removed (DELETE with grace 0) once their scaled grace period is over. Only pods on nodes
//! that exist: no kubelet runs the others (as kwok runs only its own nodes' pods).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{DeleteOptions, Gvr};
use crate::cluster_logic::common::{add_seconds, format_time, int_at, parse_time};
use crate::cluster_logic::kubelet::{KubeletAction, kubelet_step};
use crate::store::{EventType, StoredEvent};

pub(crate) struct Kubelet;

fn node_of(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
}

fn bound(pod: &Value) -> bool {
    node_of(pod).is_some()
}

/// The pod as the kubelet rule expects it. The API layer stamps `deletionTimestamp` with the
/// time of the DELETE; upstream stamps the end of the grace period. A pod written (seeded)
/// as Running and Ready without `startTime` counts as started long ago, so it stays Ready.
fn as_kubelet_sees_it(pod: &Value, ready_delay_seconds: i64, now: jiff::Timestamp) -> Value {
    let mut pod = pod.clone();
    let running = pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running");
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    if running && ready && pod.pointer("/status/startTime").is_none_or(Value::is_null) {
        pod["status"]["startTime"] = json!(format_time(add_seconds(now, -ready_delay_seconds - 1)));
    }
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

    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "", "pods") && event.event_type != EventType::Deleted && bound(&event.object) {
            vec![key_of(&event.object)]
        } else if is(&event.key, "", "nodes") && event.event_type == EventType::Added {
            // A node that joins runs the pods already bound to it.
            let node = event.object["metadata"]["name"].as_str().unwrap_or_default();
            ctx.list("", "pods", None, &|pod| node_of(pod) == Some(node)).iter().map(key_of).collect()
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
            ctx.get("", "nodes", "", node_of(&pod)?)?;
            let now = jiff::Timestamp::now();
            let delay = i64::try_from(ctx.behaviour.pod_ready_delay.as_millis().div_ceil(1000)).unwrap_or(1);
            let gvr = Gvr::new("", "v1", "pods");
            let seen = as_kubelet_sees_it(&pod, delay, now);
            match kubelet_step(&seen, delay, ctx.behaviour.termination_grace_scale, now) {
                KubeletAction::Wait(at) => at.map(|at| until(at, now)),
                KubeletAction::UpdateStatus(status) => {
                    let result = ctx.write_status(&gvr, &pod, status, "kubelet").await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ready_pods_stay_ready_and_deletions_end_after_the_grace_period() {
        let now: jiff::Timestamp = "2026-01-01T12:00:00Z".parse().unwrap_or_default();
        let seeded = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let seen = as_kubelet_sees_it(&seeded, 1, now);
        assert_eq!(seen["status"]["startTime"], "2026-01-01T11:59:58Z");
        assert!(matches!(
            kubelet_step(&seen, 1, 1.0, now),
            KubeletAction::Wait(None) | KubeletAction::UpdateStatus(_)
        ));
        if let KubeletAction::UpdateStatus(status) = kubelet_step(&seen, 1, 1.0, now) {
            let ready = status["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            assert!(ready, "a seeded Ready pod is not flipped to unready");
        }
        let mut deleting = seeded.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T12:00:00Z");
        deleting["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        let seen = as_kubelet_sees_it(&deleting, 1, now);
        assert_eq!(
            seen["metadata"]["deletionTimestamp"], "2026-01-01T12:00:30Z",
            "deadline = delete time + grace"
        );
        let later: jiff::Timestamp = "2026-01-01T12:00:02Z".parse().unwrap_or_default();
        assert_eq!(kubelet_step(&seen, 1, 0.05, later), KubeletAction::Remove, "30 s × 0.05 = 1.5 s");
    }
}
