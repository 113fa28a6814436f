//! DELETE and DELETE-collection: preconditions, admission, finalizers, graceful pod
//! termination (opt-in); Namespaces have their registry's rules (`namespaces.rs`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::hooks::{AdmissionRequest, Operation};
use super::namespaces::NamespaceDelete;
use super::options::{DeleteOptions, DeleteOutcome, Gvr};
use crate::cluster_logic::gc::deletion_finalizers;
use crate::error::{ApiError, FieldError};
use crate::meta::{meta_mut, meta_str, now_rfc3339};
use crate::resources::ResourceInfo;
use crate::store::{Mutation, object_rv};

const MAX_RETRIES: usize = 16;

impl Cluster {
    /// DELETE. Objects with finalizers get `deletionTimestamp` and stay until the last
    /// finalizer is removed by an update.
    pub async fn delete(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let info = self.resource(gvr)?;
        let ns = Self::check_namespace_arg(&info, namespace)?;
        let outcome = self.delete_checked(&info, &ns, name, opts).await?;
        Ok(match outcome {
            DeleteOutcome::Deleted(o) => DeleteOutcome::Deleted(Self::served_form(&info, o)),
            DeleteOutcome::Terminating(o) => DeleteOutcome::Terminating(Self::served_form(&info, o)),
        })
    }

    pub(crate) async fn delete_checked(
        &self,
        info: &Arc<ResourceInfo>,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = info.storage_key();
        for _ in 0..MAX_RETRIES {
            let current = self
                .store()
                .get(&key, ns, name)
                .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
            if super::namespaces::is_namespaces(info) {
                match self.delete_namespace(info, &current, opts).await? {
                    NamespaceDelete::Done(outcome) => return Ok(outcome),
                    NamespaceDelete::Retry => continue,
                    NamespaceDelete::Generic => {}
                }
            }
            let uid = meta_str(&current, "uid");
            // Upstream's `BeforeDelete` validates the options once the object is found.
            if let Some(policy) = opts
                .propagation_policy
                .as_deref()
                .filter(|p| !["Foreground", "Background", "Orphan"].contains(p))
            {
                let error = FieldError::not_supported(
                    "propagationPolicy",
                    policy,
                    &["Foreground", "Background", "Orphan", "nil"],
                );
                return Err(ApiError::invalid(
                    "DeleteOptions.meta.k8s.io",
                    "meta.k8s.io",
                    "DeleteOptions",
                    "",
                    &[error],
                ));
            }
            // It checks the preconditions first, naming the kind where a
            // resource would be (`Operation cannot be fulfilled on ConfigMap "c"`).
            let precondition_failed =
                |detail: String| ApiError::conflict(&info.group, &info.kind, name, &detail);
            if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty())
                && want != uid
            {
                return Err(precondition_failed(format!(
                    "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                )));
            }
            let have = meta_str(&current, "resourceVersion");
            if let Some(want) = opts.precondition_resource_version.as_deref().filter(|r| !r.is_empty())
                && want != have
            {
                return Err(precondition_failed(format!(
                    "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({have}). The object might have been modified"
                )));
            }
            let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
            if opts.dry_run {
                options["dryRun"] = json!(["All"]);
            }
            if let Some(p) = &opts.propagation_policy {
                options["propagationPolicy"] = json!(p);
            }
            self.admit_validate(
                AdmissionRequest {
                    resource: info.clone(),
                    subresource: None,
                    operation: Operation::Delete,
                    namespace: ns.to_string(),
                    name: name.to_string(),
                    object: None,
                    old_object: Some((*current).clone()),
                    dry_run: opts.dry_run,
                    options,
                },
                opts.skip_admission,
            )
            .await?;
            let mut finalizers: Vec<Value> =
                current["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
            if self.config().deletion_finalizers && current["metadata"]["deletionTimestamp"].is_null() {
                finalizers = deletion_finalizers(&finalizers, opts.propagation_policy.as_deref());
            }
            let grace = self.pod_grace_period(info, &current, opts);
            if grace > 0 && !current["metadata"]["deletionTimestamp"].is_null() {
                // Already terminating; only a zero grace period (the kubelet) removes it.
                return Ok(DeleteOutcome::Terminating(current));
            }
            if !finalizers.is_empty() || grace > 0 {
                if (!current["metadata"]["deletionTimestamp"].is_null() && !finalizers.is_empty())
                    || opts.dry_run
                {
                    return Ok(DeleteOutcome::Terminating(current));
                }
                let mut marked = (*current).clone();
                let meta = meta_mut(&mut marked);
                meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(grace.max(0)));
                if finalizers.is_empty() {
                    meta.remove("finalizers");
                } else {
                    meta.insert("finalizers".into(), Value::Array(finalizers));
                }
                // Marking is a change controllers must see (`markAsDeleting` and the graceful
                // `BeforeDelete` bump a generation that is set, once).
                if let Some(generation) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
                    meta.insert("generation".into(), json!(generation + 1));
                }
                let expected_rv = object_rv(&current);
                match self.store().commit(Mutation::Update { key: key.clone(), object: marked, expected_rv })
                {
                    Ok(stored) => return Ok(DeleteOutcome::Terminating(stored)),
                    Err(_) => continue,
                }
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Deleted(current));
            }
            let mutation = Mutation::Delete {
                key: key.clone(),
                namespace: ns.to_string(),
                name: name.to_string(),
                expected_rv: object_rv(&current),
            };
            match self.store().commit(mutation) {
                Ok(last) => {
                    self.after_write(info, &last, true);
                    if super::crds::is_crd(info) {
                        // Names the CRD held may now be free for another of its group.
                        self.sync_crd_group(last["spec"]["group"].as_str().unwrap_or_default());
                    }
                    return Ok(DeleteOutcome::Deleted(last));
                }
                Err(_) => continue,
            }
        }
        Err(ApiError::conflict(&info.group, &info.plural, name, crate::error::OPTIMISTIC_LOCK_MSG))
    }

    /// The grace period a Pod delete waits for (0 = remove now). Only with
    /// `graceful_pod_deletion`, for pods bound to a node.
    fn pod_grace_period(&self, info: &ResourceInfo, pod: &Value, opts: &DeleteOptions) -> i64 {
        if !self.config().graceful_pod_deletion || !info.group.is_empty() || info.plural != "pods" {
            return 0;
        }
        if pod["spec"]["nodeName"].as_str().unwrap_or_default().is_empty() {
            return 0;
        }
        opts.grace_period_seconds
            .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(30)
    }

    /// DELETE collection: deletes every object the list options select; returns them.
    pub async fn delete_collection(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        list: &super::ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let info = self.resource(gvr)?;
        let listed = self.list(gvr, namespace, list)?;
        let mut out = Vec::new();
        for object in listed.items {
            let ns = meta_str(&object, "namespace").to_string();
            match self.delete_checked(&info, &ns, meta_str(&object, "name"), opts).await {
                Ok(outcome) => out.push(Self::served_form(&info, outcome.object().clone())),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}
