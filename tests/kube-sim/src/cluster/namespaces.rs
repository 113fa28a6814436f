//! The Namespace registry (`pkg/registry/core/namespace/storage`) and the NamespaceLifecycle
//! admission rules it meets: a first DELETE only marks the namespace (`deletionTimestamp`,
//! `phase: Terminating`, the GC finalizers its options ask for) and answers it; the namespace
//! goes once `spec.finalizers` is emptied through `PUT .../finalize` (the namespace
//! controller's, after removing the content) and no `metadata.finalizers` remain. Main updates
//! cannot change `spec.finalizers`, `finalize` cannot change the status. `default`,
//! `kube-system` and `kube-public` may not be deleted.
//!
//! Without a namespace controller (a pure API server) kube-sim stands in for it at once: the
//! content is deleted and the namespace finalized right after the DELETE is answered.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::hooks::{AdmissionRequest, Operation};
use super::options::{DeleteOptions, DeleteOutcome, WriteOptions};
use super::write::Target;
use crate::cluster_logic::gc::namespace_deletion_finalizers;
use crate::cluster_logic::namespace_deletion::finalized_spec_finalizers;
use crate::error::ApiError;
use crate::meta::{meta_mut, meta_str, now_rfc3339};
use crate::resources::ResourceInfo;
use crate::store::{Mutation, object_rv};

/// NamespaceLifecycle's immortal namespaces.
pub const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

pub(super) fn is_namespaces(info: &ResourceInfo) -> bool {
    info.storage_group.is_empty() && info.plural == "namespaces"
}

/// The strategies' update rules: a main update keeps `spec.finalizers`, `finalize` keeps the
/// status (the status strategy keeps the spec, as for every kind).
pub(super) fn prepare_update(info: &ResourceInfo, target: Target, new: &mut Value, current: &Value) {
    if !is_namespaces(info) || !new.is_object() {
        return;
    }
    match target {
        Target::Main => {
            if !new["spec"].is_object() {
                new["spec"] = json!({});
            }
            match current["spec"].get("finalizers") {
                Some(f) => new["spec"]["finalizers"] = f.clone(),
                None => {
                    new["spec"].as_object_mut().map(|s| s.remove("finalizers"));
                }
            }
        }
        Target::Finalize => new["status"] = current["status"].clone(),
        Target::Status | Target::Scale => {}
    }
}

/// `ShouldDeleteNamespaceDuringUpdate`: besides the generic rule, `spec.finalizers` is empty.
pub(super) fn may_delete_on_update(info: &ResourceInfo, new: &Value) -> bool {
    !is_namespaces(info) || new["spec"]["finalizers"].as_array().is_none_or(|f| f.is_empty())
}

/// What the namespace DELETE decided.
pub(super) enum NamespaceDelete {
    /// Answered (marked, or still finalizing).
    Done(DeleteOutcome),
    /// The namespace changed meanwhile.
    Retry,
    /// `spec.finalizers` is empty: the generic delete (metadata finalizers) applies.
    Generic,
}

impl Cluster {
    /// The Namespace registry's `Delete` up to the generic store's.
    pub(super) async fn delete_namespace(
        &self,
        info: &Arc<ResourceInfo>,
        current: &Arc<Value>,
        opts: &DeleteOptions,
    ) -> Result<NamespaceDelete, ApiError> {
        let name = meta_str(current, "name").to_string();
        if IMMORTAL_NAMESPACES.contains(&name.as_str()) && !opts.skip_admission {
            return Err(ApiError::forbidden("", "namespaces", &name, "this namespace may not be deleted"));
        }
        let refused = |detail: String| {
            ApiError::conflict("", "namespaces", &name, &format!("Precondition failed: {detail}"))
        };
        let uid = meta_str(current, "uid");
        if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty() && *u != uid) {
            return Err(refused(format!("UID in precondition: {want}, UID in object meta: {uid}")));
        }
        let rv = meta_str(current, "resourceVersion");
        if let Some(want) =
            opts.precondition_resource_version.as_deref().filter(|r| !r.is_empty() && *r != rv)
        {
            return Err(refused(format!(
                "ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
            )));
        }
        if !current["metadata"]["deletionTimestamp"].is_null() {
            let finalizing = current["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
            return Ok(if finalizing {
                NamespaceDelete::Done(DeleteOutcome::Terminating(current.clone()))
            } else {
                NamespaceDelete::Generic
            });
        }
        let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
        if opts.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(p) = &opts.propagation_policy {
            options["propagationPolicy"] = json!(p);
        }
        let request = AdmissionRequest {
            resource: info.clone(),
            subresource: None,
            operation: Operation::Delete,
            namespace: name.clone(),
            name: name.clone(),
            object: None,
            old_object: Some((**current).clone()),
            dry_run: opts.dry_run,
            options,
        };
        self.admit_validate(request, opts.skip_admission).await?;
        let mut marked = (**current).clone();
        let meta = meta_mut(&mut marked);
        meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
        if self.config().deletion_finalizers {
            let had = meta.get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
            let finalizers = namespace_deletion_finalizers(&had, opts.propagation_policy.as_deref());
            if finalizers.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), Value::Array(finalizers));
            }
        }
        if !marked["status"].is_object() {
            marked["status"] = json!({});
        }
        marked["status"]["phase"] = json!("Terminating");
        if opts.dry_run {
            return Ok(NamespaceDelete::Done(DeleteOutcome::Terminating(Arc::new(marked))));
        }
        let mutation =
            Mutation::Update { key: info.storage_key(), object: marked, expected_rv: object_rv(current) };
        let Ok(stored) = self.store().commit(mutation) else { return Ok(NamespaceDelete::Retry) };
        if !self.config().namespace_controller {
            self.stand_in_for_the_namespace_controller(info, &name).await;
        }
        Ok(NamespaceDelete::Done(DeleteOutcome::Terminating(stored)))
    }

    /// A pure API server's namespace deletion: the content goes at once (objects with
    /// finalizers stay marked), then the `kubernetes` finalizer.
    async fn stand_in_for_the_namespace_controller(&self, info: &Arc<ResourceInfo>, ns: &str) {
        let mut seen = std::collections::HashSet::new();
        for resource in self.catalogue().all().into_iter().filter(|r| r.namespaced) {
            if !seen.insert(resource.storage_key()) {
                continue;
            }
            let page = self.store().list(&resource.storage_key(), Some(ns), None, 0, &|_| true);
            for object in page.items {
                let opts = DeleteOptions { skip_admission: true, ..DeleteOptions::default() };
                let _ = Box::pin(self.delete_checked(&resource, ns, meta_str(&object, "name"), &opts)).await;
            }
        }
        let Some(namespace) = self.store().get(&info.storage_key(), "", ns) else { return };
        let mut body = (*namespace).clone();
        if !body["spec"].is_object() {
            body["spec"] = json!({});
        }
        body["spec"]["finalizers"] = Value::Array(finalized_spec_finalizers(&namespace));
        let opts = WriteOptions { skip_admission: true, ..WriteOptions::default() };
        let gvr = super::Gvr::new("", "v1", "namespaces");
        let _ = Box::pin(self.update(&gvr, None, ns, Some("finalize"), body, &opts)).await;
    }
}
