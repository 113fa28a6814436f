//! HPA controller without metrics: keeps the target's `/scale` replicas within
//! `[minReplicas, maxReplicas]` (0 disables scaling) and writes the HPA status. Reacts at once
//! to HPA changes and to changes of the target.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use super::runtime::{Ctx, Key, Recheck, Reconciler, key_of, retry_delay};
use crate::cluster::{Gvr, WriteOptions};
use crate::cluster_logic::hpa::sync_hpa;
use crate::store::{EventType, StoredEvent};

pub(crate) struct Hpa;

fn target(hpa: &Value) -> (&str, &str, &str) {
    let text =
        |f: &str| hpa.pointer(&format!("/spec/scaleTargetRef/{f}")).and_then(Value::as_str).unwrap_or("");
    (text("apiVersion"), text("kind"), text("name"))
}

impl Reconciler for Hpa {
    /// Reads the store directly; the index is not used.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if event.key.group == "autoscaling" && event.key.plural == "horizontalpodautoscalers" {
            return if event.event_type == EventType::Deleted {
                Vec::new()
            } else {
                vec![key_of(&event.object)]
            };
        }
        let object = &event.object;
        let replicas_changed = event
            .previous
            .as_ref()
            .is_none_or(|p| p.pointer("/spec/replicas") != object.pointer("/spec/replicas"));
        if event.event_type == EventType::Deleted
            || !replicas_changed
            || object.pointer("/spec/replicas").is_none()
        {
            return Vec::new();
        }
        let (ns, name) = key_of(object);
        let kind = object["kind"].as_str().unwrap_or_default();
        ctx.list("autoscaling", "horizontalpodautoscalers", Some(&ns), &|hpa| {
            let (_, k, n) = target(hpa);
            k == kind && n == name
        })
        .iter()
        .map(key_of)
        .collect()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("autoscaling", "horizontalpodautoscalers", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let hpa = ctx.get("autoscaling", "horizontalpodautoscalers", &key.0, &key.1)?;
            let (api_version, kind, name) = target(&hpa);
            let info = ctx.cluster.catalogue().find_kind(api_version, kind);
            let scale = match &info {
                Some(info) => ctx
                    .cluster
                    .get_subresource(
                        &Gvr::new(&info.group, &info.version, &info.plural),
                        Some(&key.0),
                        name,
                        "scale",
                    )
                    .map_err(|e| e.message),
                None => Err(format!("no matches for kind \"{kind}\" in version \"{api_version}\"")),
            };
            let current =
                scale.as_ref().map(|s| s["spec"]["replicas"].as_i64().unwrap_or(0)).map_err(Clone::clone);
            let sync = sync_hpa(&hpa, current, None, jiff::Timestamp::now());
            if let (Some((replicas, _reason)), Ok(scale), Some(info)) = (&sync.rescale, &scale, &info) {
                let mut body = (**scale).clone();
                body["spec"]["replicas"] = json!(replicas);
                if let Some(meta) = body["metadata"].as_object_mut() {
                    meta.remove("resourceVersion");
                }
                let gvr = Gvr::new(&info.group, &info.version, &info.plural);
                if let Err(e) = ctx
                    .cluster
                    .update(
                        &gvr,
                        Some(&key.0),
                        name,
                        Some("scale"),
                        body,
                        &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
                    )
                    .await
                {
                    return retry_delay(&e);
                }
            }
            if hpa.get("status") != Some(&sync.status) {
                let gvr = Gvr::new("autoscaling", "v2", "horizontalpodautoscalers");
                let result = ctx.write_status(&gvr, &hpa, sync.status, KUBE_CONTROLLER_MANAGER).await;
                return result.err().and_then(|e| retry_delay(&e));
            }
            None
        })
    }
}
