//! ReplicaSet controller: creates pods from the template (slow-start batches), deletes the
//! surplus in upstream order (plain DELETEs: budgets are not consulted), writes the status.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::KUBE_CONTROLLER_MANAGER;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{DeleteOptions, Gvr, WriteOptions};
use crate::cluster_logic::common::{controller_ref, int_at, uid_of};
use crate::cluster_logic::replicaset::{
    ReplicaSetAction, is_controlled_by, is_pod_active, manage_replicas, pod_from_template, replica_set_status,
};
use crate::store::StoredEvent;

pub(crate) struct ReplicaSets;

/// The name of the object of `kind` controlling `object`, if any.
pub(crate) fn controller_named(object: &Value, kind: &str) -> Option<String> {
    controller_ref(object).filter(|r| r["kind"] == kind).and_then(|r| r["name"].as_str()).map(String::from)
}

impl Reconciler for ReplicaSets {
    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "apps", "replicasets") {
            return vec![key_of(&event.object)];
        }
        if !is(&event.key, "", "pods") {
            return Vec::new();
        }
        let ns = event.object["metadata"]["namespace"].as_str().unwrap_or_default();
        let mut keys: Vec<Key> = [Some(&*event.object), event.previous.as_deref()]
            .into_iter()
            .flatten()
            .filter_map(|p| controller_named(p, "ReplicaSet"))
            .map(|name| (ns.to_string(), name))
            .collect();
        keys.dedup();
        keys
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("apps", "replicasets", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let rs = ctx.get("apps", "replicasets", &key.0, &key.1)?;
            let pods = ctx.owned(uid_of(&rs), "", "pods");
            // Rank context (only needed to choose pods to delete): the pods of every
            // ReplicaSet of the same Deployment.
            let active = pods.iter().filter(|p| is_controlled_by(p, &rs) && is_pod_active(p)).count();
            let surplus = i64::try_from(active).unwrap_or(i64::MAX) > int_at(&rs, "/spec/replicas", 1);
            let related = match controller_ref(&rs).and_then(|r| r["uid"].as_str()).filter(|_| surplus) {
                Some(deployment_uid) => ctx
                    .owned(deployment_uid, "apps", "replicasets")
                    .iter()
                    .flat_map(|sibling| ctx.owned(uid_of(sibling), "", "pods"))
                    .collect(),
                None => pods.clone(),
            };
            let now = jiff::Timestamp::now();
            let gvr = Gvr::new("", "v1", "pods");
            let create_opts = WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER);
            let deleting = rs["metadata"]["deletionTimestamp"].is_string();
            match manage_replicas(&rs, &pods, &related, now) {
                ReplicaSetAction::InSync => {}
                ReplicaSetAction::Create(_) if deleting => {}
                ReplicaSetAction::Create(count) => {
                    // Slow start: batches of 1, 2, 4, ... stop at the first failure.
                    let (mut done, mut batch) = (0, 1);
                    while done < count {
                        let size = batch.min(count - done);
                        let creations = (0..size).map(|_| {
                            ctx.cluster.create(&gvr, Some(&key.0), pod_from_template(&rs), &create_opts)
                        });
                        let results = futures::future::join_all(creations).await;
                        if let Some(e) = results.into_iter().find_map(Result::err) {
                            return retry_delay(&e).or(Some(Duration::from_secs(1)));
                        }
                        done += size;
                        batch *= 2;
                    }
                }
                ReplicaSetAction::Delete(names) => {
                    for name in names {
                        let result =
                            ctx.cluster.delete(&gvr, Some(&key.0), &name, &DeleteOptions::default()).await;
                        match result {
                            Err(e) if e.code != 404 => return retry_delay(&e),
                            _ => {}
                        }
                    }
                }
            }
            let status = replica_set_status(&rs, &pods, now);
            let recheck = min_ready_recheck(&rs, &status);
            if rs.get("status") != Some(&status) {
                let gvr = Gvr::new("apps", "v1", "replicasets");
                if let Err(e) = ctx.write_status(&gvr, &rs, status, KUBE_CONTROLLER_MANAGER).await {
                    return retry_delay(&e);
                }
            }
            recheck
        })
    }
}

/// With `minReadySeconds`, ready pods become available later: look again then.
fn min_ready_recheck(rs: &Value, status: &Value) -> Recheck {
    let min_ready = int_at(rs, "/spec/minReadySeconds", 0);
    (min_ready > 0 && int_at(status, "/availableReplicas", 0) < int_at(status, "/readyReplicas", 0))
        .then(|| Duration::from_secs(u64::try_from(min_ready).unwrap_or(1)))
}
