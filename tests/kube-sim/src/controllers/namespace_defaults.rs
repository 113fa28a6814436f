//! What the serviceaccount controller and the root-CA publisher put in every active namespace:
//! the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap (the CA that signs the
//! apiserver's certificate), re-created when deleted.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use super::KUBE_CONTROLLER_MANAGER;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, retry_delay};
use crate::cluster::{Gvr, WriteOptions};
use crate::store::StoredEvent;

/// The ConfigMap's name and annotation, as the root-ca-certificate-publisher writes them.
const ROOT_CA: &str = "kube-root-ca.crt";
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when \
using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is \
guaranteed across distributions of Kubernetes clusters.";

pub(crate) struct NamespaceDefaults;

impl Reconciler for NamespaceDefaults {
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        let meta = &event.object["metadata"];
        let text = |f: &str| meta[f].as_str().unwrap_or_default().to_string();
        if is(&event.key, "", "namespaces") {
            vec![(String::new(), text("name"))]
        } else if (is(&event.key, "", "serviceaccounts") && text("name") == "default")
            || (is(&event.key, "", "configmaps") && text("name") == ROOT_CA)
        {
            vec![(String::new(), text("namespace"))]
        } else {
            Vec::new()
        }
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("", "namespaces", None, &|_| true)
            .iter()
            .map(|ns| (String::new(), ns["metadata"]["name"].as_str().unwrap_or_default().to_string()))
            .collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let namespace = ctx.get("", "namespaces", "", &key.1)?;
            if namespace["metadata"]["deletionTimestamp"].is_string() {
                return None;
            }
            let ns = key.1.as_str();
            let mut wanted = vec![(
                "serviceaccounts",
                "default",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
            )];
            if !ctx.behaviour.root_ca_pem.is_empty() {
                wanted.push((
                    "configmaps",
                    ROOT_CA,
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": ROOT_CA, "namespace": ns,
                            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                        "data": {"ca.crt": ctx.behaviour.root_ca_pem}}),
                ));
            }
            for (plural, name, object) in wanted {
                if ctx.get("", plural, ns, name).is_some() {
                    continue;
                }
                let gvr = Gvr::new("", "v1", plural);
                let created = ctx
                    .cluster
                    .create(&gvr, Some(ns), object, &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER))
                    .await;
                if let Some(delay) = created.err().and_then(|e| retry_delay(&e)) {
                    return Some(delay);
                }
            }
            None
        })
    }
}
