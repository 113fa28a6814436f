//! DaemonSet controller: one pod per eligible node (created with the node affinity and the
//! default daemon tolerations, then placed by the scheduler), extras and misplaced pods
//! deleted, status written.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::KUBE_CONTROLLER_MANAGER;
use super::replicaset::controller_named;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{DeleteOptions, Gvr, WriteOptions};
use crate::cluster_logic::common::{is_terminating, uid_of};
use crate::cluster_logic::daemonset::{daemon_pod, sync_daemon_set};
use crate::store::StoredEvent;

pub(crate) struct DaemonSets;

impl Reconciler for DaemonSets {
    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "apps", "daemonsets") {
            return vec![key_of(&event.object)];
        }
        if is(&event.key, "", "nodes") {
            let changed = event.previous.as_ref().is_none_or(|p| {
                p["spec"] != event.object["spec"]
                    || p["metadata"]["labels"] != event.object["metadata"]["labels"]
            });
            return if changed { self.all_keys(ctx) } else { Vec::new() };
        }
        if is(&event.key, "", "pods") {
            let ns = event.object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
            return controller_named(&event.object, "DaemonSet").map(|ds| vec![(ns, ds)]).unwrap_or_default();
        }
        Vec::new()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("apps", "daemonsets", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let ds = ctx.get("apps", "daemonsets", &key.0, &key.1)?;
            let nodes = ctx.list("", "nodes", None, &|_| true);
            let pods = ctx.owned(uid_of(&ds), "", "pods");
            let plan = sync_daemon_set(&ds, &nodes, &pods);
            let gvr = Gvr::new("", "v1", "pods");
            if !is_terminating(&ds) {
                for node in &plan.create_on {
                    let result = ctx
                        .cluster
                        .create(
                            &gvr,
                            Some(&key.0),
                            daemon_pod(&ds, node),
                            &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
                        )
                        .await;
                    if let Err(e) = result {
                        return retry_delay(&e);
                    }
                }
            }
            for name in &plan.delete {
                match ctx.cluster.delete(&gvr, Some(&key.0), name, &DeleteOptions::default()).await {
                    Err(e) if e.code != 404 => return retry_delay(&e),
                    _ => {}
                }
            }
            let mut status = plan.status;
            status["observedGeneration"] = ds["metadata"]["generation"].clone();
            if ds.get("status") != Some(&status) {
                let gvr = Gvr::new("apps", "v1", "daemonsets");
                let result = ctx.write_status(&gvr, &ds, status, KUBE_CONTROLLER_MANAGER).await;
                return result.err().and_then(|e| retry_delay(&e));
            }
            None
        })
    }
}
