//! KEDA operator (once the `keda.sh` ScaledObject CRD is served): each ScaledObject gets the
//! HPA KEDA generates (`keda-hpa-<name>`); direct edits or deletion of that HPA are reverted
//! on the next reconcile, as KEDA does (k8s-semantics §5.4, §5.5).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::replicaset::controller_named;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::{Gvr, WriteOptions};
use crate::cluster_logic::common::is_terminating;
use crate::cluster_logic::hpa::{keda_hpa, keda_hpa_name, keda_hpa_update};
use crate::store::{EventType, StoredEvent};

pub(crate) struct Keda;

impl Reconciler for Keda {
    /// Reads the store directly; the index is not used.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "keda.sh", "scaledobjects") {
            return if event.event_type == EventType::Deleted {
                Vec::new()
            } else {
                vec![key_of(&event.object)]
            };
        }
        if is(&event.key, "autoscaling", "horizontalpodautoscalers") {
            let ns = event.object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
            return controller_named(&event.object, "ScaledObject")
                .map(|so| vec![(ns, so)])
                .unwrap_or_default();
        }
        if is(&event.key, "apiextensions.k8s.io", "customresourcedefinitions")
            && event.object["spec"]["group"] == "keda.sh"
        {
            return self.all_keys(ctx);
        }
        Vec::new()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("keda.sh", "scaledobjects", None, &|_| true).iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            ctx.cluster.catalogue().find_kind("keda.sh/v1alpha1", "ScaledObject")?;
            let so = ctx.get("keda.sh", "scaledobjects", &key.0, &key.1)?;
            if is_terminating(&so) {
                return None;
            }
            let desired = keda_hpa(&so, &ctx.behaviour.keda_version);
            let name = keda_hpa_name(&so);
            let gvr = Gvr::new("autoscaling", "v2", "horizontalpodautoscalers");
            let result = match ctx.get("autoscaling", "horizontalpodautoscalers", &key.0, &name) {
                None => ctx
                    .cluster
                    .create(&gvr, Some(&key.0), desired, &WriteOptions::from_user_agent("keda-operator"))
                    .await
                    .map(drop),
                Some(found) => match keda_hpa_update(&desired, &found) {
                    // KEDA PUTs the freshly generated object: unconditional, wholesale.
                    Some(object) => ctx
                        .cluster
                        .update(
                            &gvr,
                            Some(&key.0),
                            &name,
                            None,
                            object,
                            &WriteOptions::from_user_agent("keda-operator"),
                        )
                        .await
                        .map(drop),
                    None => Ok(()),
                },
            };
            result.err().and_then(|e| retry_delay(&e))
        })
    }
}
