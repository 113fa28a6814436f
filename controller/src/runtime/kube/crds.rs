//! The CustomResourceDefinitions the controller follows: its own (the owner of every default
//! PDB) and KEDA's (once it exists, ScaledObjects are cached too).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tracing::{info, warn};

use super::caches::reflect;
use crate::keda::ScaledObject;
use crate::pdb::{CRD_NAME, live_crd_uid};
use crate::runtime::context::Context;
use crate::runtime::intake;

/// Name of KEDA's ScaledObject CRD.
const KEDA_CRD: &str = "scaledobjects.keda.sh";

/// Reads the EvictionAutoScaler CRD's UID (needed for the owner reference); `None` if it
/// cannot be read.
pub async fn own_crd_uid(ctx: &Context) -> Option<String> {
    let api: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    match api.get_opt(CRD_NAME).await {
        Ok(crd) => crd.as_ref().and_then(live_crd_uid),
        Err(e) => {
            warn!(error = %e, "cannot read the EvictionAutoScaler CRD: default PDBs are not managed");
            None
        }
    }
}

/// Keeps the EvictionAutoScaler CRD's UID current: deleted or being deleted (an uninstall, or a
/// reinstall that replaces it), no default PDB is created with the vanishing owner, which the
/// garbage collector would delete at once, and no EvictionAutoScaler; created again, its new UID
/// is the owner.
pub async fn watch_own_crd(ctx: Arc<Context>) {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={}", CRD_NAME));
    let mut stream = std::pin::pin!(watcher(crds, config).default_backoff());
    // A re-list reports what exists, not what was deleted meanwhile.
    let mut listed = false;
    while let Some(event) = stream.next().await {
        let uid = match event {
            Ok(watcher::Event::Apply(crd) | watcher::Event::InitApply(crd)) => {
                listed = true;
                live_crd_uid(&crd)
            }
            Ok(watcher::Event::Init) => {
                listed = false;
                continue;
            }
            Ok(watcher::Event::InitDone) if listed => continue,
            Ok(watcher::Event::Delete(_) | watcher::Event::InitDone) => None,
            Err(_) => continue,
        };
        if ctx.default_pdbs.crd_uid() == uid {
            continue;
        }
        match &uid {
            Some(uid) => info!(%uid, "the EvictionAutoScaler CRD is installed: it owns the default PDBs"),
            None => warn!("the EvictionAutoScaler CRD is gone: no default PDB is created until it is back"),
        }
        ctx.default_pdbs.set_crd_uid(uid);
        ctx.schedule_all();
    }
}

/// Watches for KEDA's CRD; once it exists (also when KEDA is installed after we started),
/// keeps the ScaledObject cache too, in this task so it ends with the controller.
pub async fn watch_keda(ctx: Arc<Context>) {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={KEDA_CRD}"));
    let mut events = std::pin::pin!(watcher(crds, config).default_backoff().applied_objects());
    let installed = tokio::sync::Notify::new();
    let crd = async {
        while let Some(event) = events.next().await {
            if event.is_ok() {
                installed.notify_one();
            }
        }
    };
    let cache = async {
        installed.notified().await;
        info!("KEDA is installed: watching ScaledObjects");
        let (store, writer) = reflector::store::<ScaledObject>();
        if let Ok(mut slot) = ctx.caches.scaled_objects.write() {
            *slot = Some(store);
        }
        reflect::<ScaledObject, _, _>(ctx.client.clone(), writer, std::convert::identity, |e| {
            intake::on_scaled_object(&ctx, e)
        })
        .await;
    };
    tokio::join!(crd, cache);
}
