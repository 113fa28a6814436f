//! Namespace controller (`NamespacedResourcesDeleter.Delete`): a Terminating namespace has its
//! pods deleted first, then, once they are gone, every other namespaced resource (collection
//! DELETEs with `propagationPolicy: Background`, honouring finalizers and grace periods); the
//! five deletion conditions are kept up to date; when nothing is left the `kubernetes`
//! finalizer is removed through `PUT .../finalize` and the namespace goes. The rules are
//! [`crate::cluster_logic::namespace_deletion`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::runtime::{Ctx, Key, Recheck, Reconciler, is, retry_delay};
use crate::cluster::{DeleteOptions, Gvr, ListOptions, WriteOptions};
use crate::cluster_logic::common::is_terminating;
use crate::cluster_logic::namespace_deletion::{
    ConditionUpdater, Remaining, finalized_spec_finalizers, gvr_string, pod_estimate, remaining,
};
use crate::resources::ResourceInfo;
use crate::store::{EventType, StoredEvent};

pub(crate) struct Namespaces;

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

fn gvr(info: &ResourceInfo) -> Gvr {
    Gvr::new(&info.group, &info.version, &info.plural)
}

fn terminating_namespace(ctx: &Ctx, ns: &str) -> bool {
    !ns.is_empty() && ctx.get("", "namespaces", "", ns).is_some_and(|n| is_terminating(&n))
}

/// One resource's collection DELETE and what it left (`deleteAllContentForGroupVersionResource`).
async fn delete_content(
    ctx: &Ctx,
    info: &ResourceInfo,
    ns: &str,
    deleted_at: &Value,
) -> (Remaining, Option<String>) {
    let gvr = gvr(info);
    let now = jiff::Timestamp::now();
    let list = |ctx: &Ctx| ctx.cluster.list(&gvr, Some(ns), &ListOptions::default());
    let estimate = if info.group.is_empty() && info.plural == "pods" {
        match list(ctx) {
            Ok(pods) => {
                let pods: Vec<Value> = pods.items.iter().map(|p| (**p).clone()).collect();
                pod_estimate(&pods, deleted_at, now)
            }
            Err(e) => return (Remaining::default(), Some(e.message)),
        }
    } else {
        0
    };
    let opts = DeleteOptions { propagation_policy: Some("Background".into()), ..DeleteOptions::default() };
    if let Err(e) = ctx.cluster.delete_collection(&gvr, Some(ns), &ListOptions::default(), &opts).await {
        return (Remaining { estimate, ..Remaining::default() }, Some(e.message));
    }
    match list(ctx) {
        Ok(left) => {
            let items: Vec<Value> = left.items.iter().map(|o| (**o).clone()).collect();
            remaining(ns, &gvr_string(&info.group, &info.version, &info.plural), &items, estimate)
        }
        Err(e) => (Remaining { estimate, ..Remaining::default() }, Some(e.message)),
    }
}

/// Writes the conditions when they changed (a failed write is retried by the next sync).
async fn write_conditions(ctx: &Ctx, namespace: &Value, updater: ConditionUpdater) {
    let mut updated = namespace.clone();
    if updater.update(&mut updated["status"], jiff::Timestamp::now()) {
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        let _ = ctx
            .cluster
            .update(&namespaces(), None, name, Some("status"), updated, &WriteOptions::default())
            .await;
    }
}

/// When to look again for an estimate (`estimate/2 + 1` seconds, as upstream requeues).
fn after(estimate: i64) -> Recheck {
    Some(Duration::from_secs(u64::try_from(estimate / 2 + 1).unwrap_or(1)))
}

impl Reconciler for Namespaces {
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        let meta = &event.object["metadata"];
        if is(&event.key, "", "namespaces") {
            return if is_terminating(&event.object) && event.event_type != EventType::Deleted {
                vec![(String::new(), meta["name"].as_str().unwrap_or_default().to_string())]
            } else {
                Vec::new()
            };
        }
        // Content going away (or being marked) may let a terminating namespace move on.
        let ns = meta["namespace"].as_str().unwrap_or_default();
        let relevant = event.event_type == EventType::Deleted || is_terminating(&event.object);
        if relevant && terminating_namespace(ctx, ns) {
            vec![(String::new(), ns.to_string())]
        } else {
            Vec::new()
        }
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("", "namespaces", None, &is_terminating)
            .iter()
            .map(|n| (String::new(), n["metadata"]["name"].as_str().unwrap_or_default().to_string()))
            .collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let name = key.1.as_str();
            let mut namespace = ctx.get("", "namespaces", "", name)?;
            if !is_terminating(&namespace) {
                return None;
            }
            if namespace["status"]["phase"] != "Terminating" {
                let mut updated = namespace.clone();
                if !updated["status"].is_object() {
                    updated["status"] = json!({});
                }
                updated["status"]["phase"] = json!("Terminating");
                match ctx
                    .cluster
                    .update(&namespaces(), None, name, Some("status"), updated, &WriteOptions::default())
                    .await
                {
                    Ok(stored) => namespace = (*stored).clone(),
                    Err(e) => return retry_delay(&e),
                }
            }
            if namespace["spec"]["finalizers"].as_array().is_none_or(|f| f.is_empty()) {
                return None;
            }
            let deleted_at = namespace["metadata"]["deletionTimestamp"].clone();
            let resources: Vec<Arc<ResourceInfo>> =
                ctx.cluster.catalogue().all().into_iter().filter(|r| r.namespaced).collect();
            let mut updater = ConditionUpdater::default();
            let mut failed = false;
            let mut estimate = 0;
            let mut left: BTreeMap<String, usize> = BTreeMap::new();
            let mut held: BTreeMap<String, usize> = BTreeMap::new();
            let mut tally = |info: &ResourceInfo, r: &Remaining| {
                if r.count > 0 {
                    *left.entry(format!("{}.{}", info.plural, info.group)).or_insert(0) += r.count;
                    for (f, n) in &r.finalizers {
                        *held.entry(f.clone()).or_insert(0) += n;
                    }
                }
            };
            // Pods first: nothing else is deleted while any remains (OrderedNamespaceDeletion).
            let is_pods = |r: &ResourceInfo| r.group.is_empty() && r.plural == "pods";
            if let Some(pods) = resources.iter().find(|r| is_pods(r)) {
                let (r, error) = delete_content(ctx, pods, name, &deleted_at).await;
                if let Some(e) = error {
                    updater.delete_content_error(format!(
                        "failed to delete pods for namespace: {name}, err: {e}"
                    ));
                    failed = true;
                }
                estimate = estimate.max(r.estimate);
                if r.count > 0 {
                    write_conditions(ctx, &namespace, updater).await;
                    return after(estimate);
                }
            }
            for info in resources.iter().filter(|r| !is_pods(r)) {
                let (r, error) = delete_content(ctx, info, name, &deleted_at).await;
                if let Some(e) = error {
                    updater.delete_content_error(e);
                    failed = true;
                }
                estimate = estimate.max(r.estimate);
                tally(info, &r);
            }
            updater.content_totals(&left, &held);
            write_conditions(ctx, &namespace, updater).await;
            if failed {
                return Some(Duration::from_secs(1));
            }
            if estimate > 0 {
                return after(estimate);
            }
            // Empty: remove our finalizer (the namespace goes unless others remain).
            let current = ctx.get("", "namespaces", "", name)?;
            let mut body = current.clone();
            body["spec"]["finalizers"] = Value::Array(finalized_spec_finalizers(&current));
            let finalized = ctx
                .cluster
                .update(&namespaces(), None, name, Some("finalize"), body, &WriteOptions::default())
                .await;
            finalized.err().and_then(|e| retry_delay(&e))
        })
    }
}
