//! Garbage collector (k8s-semantics §8): dependents of a deleted owner are deleted (or have
//! the dangling reference removed when another owner remains); `orphan` owners release their
//! dependents; `foregroundDeletion` owners go once no blocking dependent remains.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use super::runtime::{Ctx, Key, ObjectRef, Recheck, Reconciler, key_of, retry_delay, storage_key};
use crate::cluster::{DeleteOptions, Gvr, WriteOptions};
use crate::cluster_logic::common::{is_terminating, list_or_removed, uid_of};
use crate::cluster_logic::gc::{
    DependentAction, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, OwnerLookup, classify_dependent,
    foreground_blockers, without_owner,
};
use crate::error::ApiError;
use crate::patch::PatchType;
use crate::resources::ResourceInfo;
use crate::store::{EventType, StoredEvent};

pub(crate) struct GarbageCollector;

/// Queue keys carry the collection: (`group/plural/namespace`, name).
fn encode(r: &ObjectRef) -> Key {
    (format!("{}/{}/{}", r.0.group, r.0.plural, r.1), r.2.clone())
}

fn decode(key: &Key) -> Option<ObjectRef> {
    let mut parts = key.0.splitn(3, '/');
    let (group, plural, ns) = (parts.next()?, parts.next()?, parts.next()?);
    Some((storage_key(group, plural), ns.to_string(), key.1.clone()))
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| x == finalizer))
}

fn owner_uids(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str().map(String::from))
        .collect()
}

struct Lookup<'a>(&'a Ctx);

impl OwnerLookup for Lookup<'_> {
    fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.0.cluster.catalogue().find_kind(api_version, kind).map(|i| i.namespaced)
    }
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let info = self.0.cluster.catalogue().find_kind(api_version, kind)?;
        self.0.cluster.store().get(&info.storage_key(), namespace, name).map(|o| (*o).clone())
    }
}

impl Reconciler for GarbageCollector {
    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        let object = &event.object;
        let (ns, name) = key_of(object);
        let this: ObjectRef = (event.key.clone(), ns, name);
        let mut keys = Vec::new();
        let owners_changed = event
            .previous
            .as_ref()
            .is_none_or(|p| p["metadata"]["ownerReferences"] != object["metadata"]["ownerReferences"]);
        match event.event_type {
            EventType::Deleted => {
                keys.extend(ctx.index(|i| i.dependents(uid_of(object))).iter().map(encode));
                // A foreground owner may be waiting for this dependent.
                let owners: Vec<ObjectRef> =
                    ctx.index(|i| owner_uids(object).iter().filter_map(|u| i.by_uid(u)).collect());
                keys.extend(owners.iter().map(encode));
            }
            _ if is_terminating(object)
                && (has_finalizer(object, ORPHAN_FINALIZER)
                    || has_finalizer(object, FOREGROUND_FINALIZER)) =>
            {
                keys.push(encode(&this));
            }
            _ if owners_changed && !owner_uids(object).is_empty() => keys.push(encode(&this)),
            _ => {}
        }
        keys
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        let mut keys = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for info in ctx.cluster.catalogue().all() {
            if !seen.insert(info.storage_key()) {
                continue;
            }
            let page = ctx.cluster.store().list(&info.storage_key(), None, None, 0, &|o| {
                !owner_uids(o).is_empty() || is_terminating(o)
            });
            for object in page.items {
                let (ns, name) = key_of(&object);
                keys.push(encode(&(info.storage_key(), ns, name)));
            }
        }
        keys
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let r = decode(key)?;
            let info = resource_of(ctx, &r)?;
            let object = ctx.cluster.store().get(&r.0, &r.1, &r.2).map(|o| (*o).clone())?;
            let result = if is_terminating(&object) && has_finalizer(&object, ORPHAN_FINALIZER) {
                orphan_dependents(ctx, &info, &object).await
            } else if is_terminating(&object) && has_finalizer(&object, FOREGROUND_FINALIZER) {
                delete_dependents_first(ctx, &info, &object).await
            } else {
                attempt_to_delete(ctx, &info, &object).await
            };
            result.err().and_then(|e| retry_delay(&e))
        })
    }
}

fn resource_of(ctx: &Ctx, r: &ObjectRef) -> Option<Arc<ResourceInfo>> {
    ctx.cluster.catalogue().all().into_iter().find(|i| i.storage_key() == r.0 && i.group == i.storage_group)
}

fn gvr(info: &ResourceInfo) -> Gvr {
    Gvr::new(&info.group, &info.version, &info.plural)
}

fn ns_of(object: &Value) -> Option<&str> {
    object["metadata"]["namespace"].as_str().filter(|n| !n.is_empty())
}

async fn merge_patch(ctx: &Ctx, info: &ResourceInfo, object: &Value, patch: Value) -> Result<(), ApiError> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    ctx.cluster
        .patch(
            &gvr(info),
            ns_of(object),
            name,
            None,
            PatchType::Merge,
            patch.to_string().as_bytes(),
            &WriteOptions::from_user_agent(KUBE_CONTROLLER_MANAGER),
        )
        .await
        .map(drop)
}

async fn remove_finalizer(
    ctx: &Ctx,
    info: &ResourceInfo,
    object: &Value,
    finalizer: &str,
) -> Result<(), ApiError> {
    let rest: Vec<Value> = object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    let patch =
        json!({"metadata": {"resourceVersion": object["metadata"]["resourceVersion"], "finalizers": rest}});
    merge_patch(ctx, info, object, patch).await
}

/// The dependents of `owner` with their resource.
fn dependents(ctx: &Ctx, owner: &Value) -> Vec<(Arc<ResourceInfo>, Value)> {
    let refs = ctx.index(|i| i.dependents(uid_of(owner)));
    refs.iter()
        .filter_map(|r| Some((resource_of(ctx, r)?, ctx.cluster.store().get(&r.0, &r.1, &r.2)?)))
        .map(|(info, o)| (info, (*o).clone()))
        .collect()
}

async fn orphan_dependents(ctx: &Ctx, info: &ResourceInfo, owner: &Value) -> Result<(), ApiError> {
    for (dep_info, dependent) in dependents(ctx, owner) {
        let refs = without_owner(&dependent, uid_of(owner));
        let patch = json!({"metadata": {"ownerReferences": list_or_removed(refs)}});
        merge_patch(ctx, &dep_info, &dependent, patch).await?;
    }
    remove_finalizer(ctx, info, owner, ORPHAN_FINALIZER).await
}

async fn delete_dependents_first(ctx: &Ctx, info: &ResourceInfo, owner: &Value) -> Result<(), ApiError> {
    let deps = dependents(ctx, owner);
    for (dep_info, dependent) in &deps {
        attempt_to_delete(ctx, dep_info, dependent).await?;
    }
    let remaining: Vec<Value> = dependents(ctx, owner).into_iter().map(|(_, d)| d).collect();
    if foreground_blockers(owner, &remaining).is_empty() {
        let fresh = ctx.cluster.store().get(
            &info.storage_key(),
            ns_of(owner).unwrap_or(""),
            owner["metadata"]["name"].as_str().unwrap_or(""),
        );
        if let Some(fresh) = fresh {
            remove_finalizer(ctx, info, &fresh, FOREGROUND_FINALIZER).await?;
        }
    }
    Ok(())
}

/// upstream `attemptToDeleteItem` for one object with ownerReferences.
async fn attempt_to_delete(ctx: &Ctx, info: &ResourceInfo, object: &Value) -> Result<(), ApiError> {
    let lookup = Lookup(ctx);
    // An owner of a kind this server does not know cannot be resolved: upstream keeps
    // retrying and never deletes; so does kube-sim (it just leaves the object).
    let unknown_kind = object["metadata"]["ownerReferences"].as_array().into_iter().flatten().any(|r| {
        lookup.namespaced(r["apiVersion"].as_str().unwrap_or(""), r["kind"].as_str().unwrap_or("")).is_none()
    });
    if unknown_kind {
        return Ok(());
    }
    let has_dependents = ctx.index(|i| !i.dependents(uid_of(object)).is_empty());
    match classify_dependent(object, has_dependents, &lookup) {
        DependentAction::Keep => Ok(()),
        DependentAction::SetOwnerReferences(refs) => {
            let patch = json!({"metadata": {"resourceVersion": object["metadata"]["resourceVersion"], "ownerReferences": list_or_removed(refs)}});
            merge_patch(ctx, info, object, patch).await
        }
        DependentAction::Delete(propagation) => {
            let opts = DeleteOptions {
                propagation_policy: Some(propagation.as_str().to_string()),
                precondition_uid: Some(uid_of(object).to_string()),
                ..DeleteOptions::default()
            };
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            match ctx.cluster.delete(&gvr(info), ns_of(object), name, &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 404 => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}
