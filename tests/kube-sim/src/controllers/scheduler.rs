//! Scheduler: binds pending pods to the least-loaded fitting node (filters of
//! `cluster_logic::scheduler`), or marks them `PodScheduled=False/Unschedulable`. Node
//! occupancy comes from the index, so one pass is O(nodes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{Gvr, WriteOptions};
use crate::cluster_logic::common::{is_terminating, name_of};
use crate::cluster_logic::scheduler::{
    Misfit, Scheduling, fit_error_message, node_fit, pod_scheduled_condition,
};
use crate::patch::PatchType;
use crate::store::{EventType, StoredEvent};

/// Binds this scheduler made that the index may not show yet (upstream's "assumed" pods):
/// pod → (node, resourceVersion of the bind).
#[derive(Default)]
pub(crate) struct Scheduler {
    assumed: Mutex<HashMap<Key, (String, u64)>>,
}

fn node_name(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("")
}

/// A pod this scheduler must place.
fn is_pending(pod: &Value) -> bool {
    let scheduler = pod.pointer("/spec/schedulerName").and_then(Value::as_str).unwrap_or("default-scheduler");
    node_name(pod).is_empty() && !is_terminating(pod) && scheduler == "default-scheduler"
}

fn pending_pods(ctx: &Ctx) -> Vec<Key> {
    ctx.cluster
        .store()
        .list(&super::runtime::storage_key("", "pods"), None, None, 0, &is_pending)
        .items
        .iter()
        .map(|p| key_of(p))
        .collect()
}

impl Reconciler for Scheduler {
    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "", "nodes") {
            let spec_changed = event.previous.as_ref().is_none_or(|p| p["spec"] != event.object["spec"]);
            return if spec_changed { pending_pods(ctx) } else { Vec::new() };
        }
        if !is(&event.key, "", "pods") {
            return Vec::new();
        }
        let pod = &event.object;
        let freed = !node_name(pod).is_empty()
            && (event.event_type == EventType::Deleted
                || matches!(
                    pod.pointer("/status/phase").and_then(Value::as_str),
                    Some("Succeeded" | "Failed")
                ));
        if freed {
            return pending_pods(ctx);
        }
        if event.event_type != EventType::Deleted && is_pending(pod) {
            return vec![key_of(pod)];
        }
        Vec::new()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        pending_pods(ctx)
    }

    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let pod = ctx.get("", "pods", &key.0, &key.1)?;
            if !is_pending(&pod) {
                return None;
            }
            let decision = self.decide(ctx, &pod);
            let now = jiff::Timestamp::now();
            let mut conditions =
                pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            let generation = pod.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            let wanted = pod_scheduled_condition(&decision, generation, now);
            let current = conditions.iter().find(|c| c["type"] == "PodScheduled").cloned();
            let same = current.as_ref().is_some_and(|c| {
                c["status"] == wanted["status"]
                    && c["reason"] == wanted["reason"]
                    && c["message"] == wanted["message"]
            });
            let node = match &decision {
                Scheduling::Bind(node) => node.clone(),
                Scheduling::Unschedulable(_) if same => return None,
                Scheduling::Unschedulable(_) => {
                    let mut wanted = wanted;
                    if let Some(old) = current.filter(|c| c["status"] == wanted["status"]) {
                        wanted["lastTransitionTime"] = old["lastTransitionTime"].clone();
                    }
                    conditions.retain(|c| c["type"] != "PodScheduled");
                    conditions.push(wanted);
                    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
                    status["conditions"] = Value::Array(conditions);
                    let patch = json!({"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": status});
                    let result = ctx
                        .cluster
                        .patch(
                            &Gvr::new("", "v1", "pods"),
                            Some(&key.0),
                            &key.1,
                            Some("status"),
                            PatchType::Merge,
                            patch.to_string().as_bytes(),
                            &WriteOptions::from_user_agent("kube-scheduler"),
                        )
                        .await;
                    return result.err().and_then(|e| retry_delay(&e));
                }
            };
            // The binding subresource: spec.nodeName and PodScheduled in one storage write,
            // without pod admission or a generation bump.
            let binding_meta =
                json!({"uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"]});
            let result = ctx.cluster.bind_pod(&key.0, &key.1, &node, &binding_meta, false).await;
            if let Ok(stored) = &result {
                let rv = crate::store::object_rv(stored);
                self.assumed.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone(), (node, rv));
            }
            result.err().and_then(|e| retry_delay(&e))
        })
    }
}

impl Scheduler {
    /// upstream `schedule` with occupancy from the index plus the assumed binds: the fitting
    /// node with the fewest pods, ties broken by name.
    fn decide(&self, ctx: &Ctx, pod: &Value) -> Scheduling {
        let indexed = ctx.indexed_rv();
        let mut extra: HashMap<String, usize> = HashMap::new();
        {
            let mut assumed = self.assumed.lock().unwrap_or_else(PoisonError::into_inner);
            assumed.retain(|_, (_, rv)| *rv > indexed);
            for (node, _) in assumed.values() {
                *extra.entry(node.clone()).or_default() += 1;
            }
        }
        // Shared, not copied: this runs once per pod over every node.
        let nodes = ctx
            .cluster
            .store()
            .list(&super::runtime::storage_key("", "nodes"), None, None, 0, &|_| true)
            .items;
        if nodes.is_empty() {
            return Scheduling::Unschedulable("no nodes available to schedule pods".into());
        }
        let capacity = ctx.behaviour.pods_per_node;
        let mut misfits: Vec<Misfit> = Vec::new();
        let mut best: Option<(usize, String)> = None;
        for node in &nodes {
            let occupied =
                ctx.index(|i| i.pods_on_node(name_of(node))) + extra.get(name_of(node)).copied().unwrap_or(0);
            match node_fit(pod, node, occupied, capacity) {
                Ok(()) => {
                    let candidate = (occupied, name_of(node).to_string());
                    if best.as_ref().is_none_or(|b| candidate < *b) {
                        best = Some(candidate);
                    }
                }
                Err(misfit) => misfits.push(misfit),
            }
        }
        match best {
            Some((_, node)) => Scheduling::Bind(node),
            None => Scheduling::Unschedulable(fit_error_message(nodes.len(), &misfits)),
        }
    }
}
