//! Deployment controller: applies one `sync_deployment` pass (ReplicaSet creates, scales,
//! history cleanup), the revision annotation and the status.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use super::replicaset::controller_named;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{DeleteOptions, Gvr, WriteOptions};
use crate::cluster_logic::common::uid_of;
use crate::cluster_logic::rollout::{REVISION, RsChange, sync_deployment};
use crate::patch::PatchType;
use crate::store::StoredEvent;

pub(crate) struct Deployments;

impl Reconciler for Deployments {
    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "apps", "deployments") {
            return vec![key_of(&event.object)];
        }
        let ns = event.object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        if is(&event.key, "apps", "replicasets") {
            return controller_named(&event.object, "Deployment").map(|d| vec![(ns, d)]).unwrap_or_default();
        }
        // Recreate waits for old pods to go: a pod deletion re-syncs its Deployment.
        if is(&event.key, "", "pods") && event.event_type == crate::store::EventType::Deleted {
            let rs = controller_named(&event.object, "ReplicaSet")
                .and_then(|rs| ctx.get("apps", "replicasets", &ns, &rs))
                .and_then(|rs| controller_named(&rs, "Deployment"));
            return rs.map(|d| vec![(ns, d)]).unwrap_or_default();
        }
        Vec::new()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("apps", "deployments", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let deployment = ctx.get("apps", "deployments", &key.0, &key.1)?;
            let replica_sets = ctx.owned(uid_of(&deployment), "apps", "replicasets");
            // Only Recreate looks at pods.
            let pods: Vec<Value> =
                if deployment.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate") {
                    replica_sets.iter().flat_map(|rs| ctx.owned(uid_of(rs), "", "pods")).collect()
                } else {
                    Vec::new()
                };
            let sync = sync_deployment(&deployment, &replica_sets, &pods, jiff::Timestamp::now());
            let rs_gvr = Gvr::new("apps", "v1", "replicasets");
            let ns = Some(key.0.as_str());
            for change in sync.changes {
                let result = match change {
                    RsChange::Create(rs) => ctx
                        .cluster
                        .create(&rs_gvr, ns, rs, &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER))
                        .await
                        .map(drop),
                    RsChange::Update { name, replicas, annotations } => {
                        let patch =
                            json!({"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}});
                        ctx.cluster
                            .patch(
                                &rs_gvr,
                                ns,
                                &name,
                                None,
                                PatchType::Merge,
                                patch.to_string().as_bytes(),
                                &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
                            )
                            .await
                            .map(drop)
                    }
                    RsChange::Delete(name) => {
                        ctx.cluster.delete(&rs_gvr, ns, &name, &DeleteOptions::default()).await.map(drop)
                    }
                };
                if let Err(e) = result {
                    // 409 AlreadyExists on a create: the ReplicaSet appeared meanwhile.
                    return retry_delay(&e).or(Some(Duration::from_millis(200)));
                }
            }
            let gvr = Gvr::new("apps", "v1", "deployments");
            if let Some(revision) = sync.revision_annotation {
                // As upstream (getNewReplicaSet): the revision annotation goes through the status
                // subresource, with the status, so it does not bump the generation.
                let mut body = deployment.clone();
                if !body["metadata"]["annotations"].is_object() {
                    body["metadata"]["annotations"] = json!({});
                }
                body["metadata"]["annotations"][REVISION] = json!(revision);
                body["status"] = sync.status;
                let result = ctx
                    .cluster
                    .update(
                        &gvr,
                        ns,
                        &key.1,
                        Some("status"),
                        body,
                        &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
                    )
                    .await;
                return result.err().and_then(|e| retry_delay(&e));
            }
            if deployment.get("status") != Some(&sync.status) {
                let result = ctx.write_status(&gvr, &deployment, sync.status, KUBE_CONTROLLER_MANAGER).await;
                return result.err().and_then(|e| retry_delay(&e));
            }
            None
        })
    }
}
