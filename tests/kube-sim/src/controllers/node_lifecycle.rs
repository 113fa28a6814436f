//! Node lifecycle controller: `spec.unschedulable` ↔ the `node.kubernetes.io/unschedulable:
//! NoSchedule` taint (k8s-semantics §6.1).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use super::KUBE_CONTROLLER_MANAGER;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{Gvr, WriteOptions};
use crate::cluster_logic::common::list_or_removed;
use crate::cluster_logic::scheduler::reconcile_cordon_taint;
use crate::patch::PatchType;
use crate::store::StoredEvent;

pub(crate) struct NodeLifecycle;

impl Reconciler for NodeLifecycle {
    /// Reads the store directly; the index is not used.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "", "nodes") { vec![key_of(&event.object)] } else { Vec::new() }
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("", "nodes", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let node = ctx.get("", "nodes", "", &key.1)?;
            let taints = reconcile_cordon_taint(&node, jiff::Timestamp::now())?;
            let rv = node["metadata"]["resourceVersion"].clone();
            let patch =
                json!({"metadata": {"resourceVersion": rv}, "spec": {"taints": list_or_removed(taints)}});
            let gvr = Gvr::new("", "v1", "nodes");
            let result = ctx
                .cluster
                .patch(
                    &gvr,
                    None,
                    &key.1,
                    None,
                    PatchType::Merge,
                    patch.to_string().as_bytes(),
                    &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
                )
                .await;
            result.err().and_then(|e| retry_delay(&e))
        })
    }
}
