//! `POST /api/v1/namespaces/{ns}/pods/{name}/eviction` (k8s-semantics §1), chaining the pure
//! steps of `cluster_logic::eviction` in upstream order: decode → NamespaceLifecycle →
//! mutating admission → name/dry-run checks → validating admission → pod GET → PDB decision →
//! PDB status write (loopback, through admission) → `DisruptionTarget` condition (status
//! store, no admission) → pod DELETE (no admission).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::cluster::{
    Cluster, DeleteOptions, Gvr, ListOptions, SubresourceHandler, SubresourceRequest, WriteOptions,
};
use crate::cluster_logic::admission::{AdmissionAttributes, Operation, ResourceRef};
use crate::cluster_logic::common::StatusResponse;
use crate::cluster_logic::eviction::{
    EVICTION_RETRY_STEPS, EvictionDecision, OnConflict, PdbStatusUpdate, after_condition_write,
    check_and_decrement, decide_eviction, decode_eviction, disruption_target_update, evicted,
    pdb_conflicts_exhausted, pod_not_found, prepare_eviction,
};
use crate::error::ApiError;
use crate::resources::ExtraSubresource;
use crate::webhooks::{Webhooks, request_user_info};

type Answer = Result<(u16, Value), ApiError>;

/// Serves `pods/eviction` (listed in discovery as `policy/v1 Eviction`).
pub struct EvictionHandler {
    webhooks: Arc<Webhooks>,
}

/// Registers the handler on `cluster`.
pub(crate) fn register(cluster: &Cluster, webhooks: Arc<Webhooks>) {
    let sub = ExtraSubresource {
        name: "eviction".into(),
        group: "policy".into(),
        version: "v1".into(),
        kind: "Eviction".into(),
        verbs: vec!["create".into()],
    };
    cluster.register_subresource("", "pods", sub, Arc::new(EvictionHandler { webhooks }));
}

fn respond(response: StatusResponse) -> Answer {
    if response.code < 300 { Ok((response.code, response.body)) } else { Err(response.to_api_error()) }
}

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn pdbs() -> Gvr {
    Gvr::new("policy", "v1", "poddisruptionbudgets")
}

/// NamespaceLifecycle (a built-in mutating plugin, before the webhooks).
fn check_namespace(cluster: &Cluster, ns: &str, name: &str) -> Result<(), ApiError> {
    let namespace = cluster.get(&Gvr::new("", "v1", "namespaces"), None, ns)?;
    if namespace["metadata"]["deletionTimestamp"].is_string() {
        let mut err = ApiError::forbidden(
            "",
            "pods",
            name,
            &format!("unable to create new content in namespace {ns} because it is being terminated"),
        );
        err.details =
            Some(json!({"name": name, "kind": "pods", "causes": [{"reason": "NamespaceTerminating",
            "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}));
        return Err(err);
    }
    Ok(())
}

impl SubresourceHandler for EvictionHandler {
    fn handle<'a>(&'a self, cluster: &'a Cluster, request: SubresourceRequest) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            if request.method != "POST" {
                return Err(ApiError::method_not_allowed());
            }
            let ns = request.namespace.clone();
            let decoded = decode_eviction(&request.body, &ns).map_err(|r| r.to_api_error())?;
            check_namespace(cluster, &ns, &request.name)?;
            let mut options = json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"});
            if request.dry_run {
                options["dryRun"] = json!(["All"]);
            }
            let mut attributes = AdmissionAttributes {
                resource: ResourceRef::new("", "v1", "pods", "policy/v1", "Eviction"),
                subresource: "eviction".into(),
                operation: Operation::Create,
                namespace: ns.clone(),
                name: request.name.clone(),
                object: Some(decoded.eviction),
                old_object: None,
                // Only `?dryRun`: a dry run in the body's deleteOptions is not seen here.
                dry_run: request.dry_run,
                options,
                user_info: request_user_info(),
                equivalents: Vec::new(),
            };
            self.webhooks.mutate(cluster, &mut attributes).await?;
            let eviction = attributes.object.clone().unwrap_or(Value::Null);
            let prepared =
                prepare_eviction(&request.name, &eviction, request.dry_run).map_err(|r| r.to_api_error())?;
            self.webhooks.validate(cluster, &attributes).await?;
            evict(cluster, &ns, &prepared).await
        })
    }
}

async fn evict(
    cluster: &Cluster,
    ns: &str,
    prepared: &crate::cluster_logic::eviction::PreparedEviction,
) -> Answer {
    let name = prepared.pod_name.as_str();
    let mut last_conflict = None;
    for _ in 0..EVICTION_RETRY_STEPS {
        let pod = match cluster.get(&pods(), Some(ns), name) {
            Ok(pod) => (*pod).clone(),
            Err(e) if e.code == 404 => return respond(pod_not_found(name)),
            Err(e) => return Err(e),
        };
        let budgets: Vec<Value> = cluster
            .list(&pdbs(), Some(ns), &ListOptions::default())?
            .items
            .iter()
            .map(|p| (**p).clone())
            .collect();
        let plan = match decide_eviction(prepared, &pod, &budgets, jiff::Timestamp::now()) {
            EvictionDecision::Respond(response) => return respond(response),
            EvictionDecision::Evict(plan) => plan,
        };
        if let Some(update) = plan.pdb_update.clone() {
            write_pdb_status(cluster, ns, name, update).await?;
        }
        let conflict = match condition_and_delete(cluster, ns, name, &plan.delete_options, plan.dry_run).await
        {
            Ok(()) => return respond(evicted()),
            Err(e) if e.code == 409 => e,
            Err(e) => return Err(e),
        };
        match plan.on_conflict {
            OnConflict::RetryFromPodGet => {
                last_conflict = Some(conflict);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            OnConflict::Respond(response) => return respond(response),
            OnConflict::ReturnConflict => return Err(conflict),
        }
    }
    Err(last_conflict
        .unwrap_or_else(|| ApiError::conflict("", "pods", name, crate::error::OPTIMISTIC_LOCK_MSG)))
}

/// checkAndDecrement's write: PUT `/status` with the PDB's resourceVersion; on a Conflict
/// re-read the PDB and decide again (20 attempts).
async fn write_pdb_status(
    cluster: &Cluster,
    ns: &str,
    pod_name: &str,
    first: PdbStatusUpdate,
) -> Result<(), ApiError> {
    let mut update = first;
    for _ in 0..EVICTION_RETRY_STEPS {
        let body = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": update.pdb_name, "namespace": ns, "resourceVersion": update.resource_version},
            "status": update.status});
        match cluster
            .update(
                &pdbs(),
                Some(ns),
                &update.pdb_name,
                Some("status"),
                body,
                &WriteOptions::from_user_agent("kube-apiserver"),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
        let pdb = cluster.get(&pdbs(), Some(ns), &update.pdb_name)?;
        match check_and_decrement(&pdb, pod_name, false, jiff::Timestamp::now()) {
            Ok(Some(next)) => update = next,
            Ok(None) => return Ok(()),
            Err(response) => return Err(response.to_api_error()),
        }
    }
    Err(pdb_conflicts_exhausted(&update.pdb_name).to_api_error())
}

/// `addConditionAndDeletePod`.
async fn condition_and_delete(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    options: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let mut options = options.clone();
    if !dry_run {
        let pod = (*cluster.get(&pods(), Some(ns), name)?).clone();
        let updated =
            disruption_target_update(&pod, &options, jiff::Timestamp::now()).map_err(|r| r.to_api_error())?;
        // The eviction's own pod writes are storage updates upstream: no field tracking.
        let internal =
            WriteOptions { skip_admission: true, skip_field_tracking: true, ..WriteOptions::default() };
        let stored = cluster.update(&pods(), Some(ns), name, Some("status"), updated, &internal).await?;
        let rv = stored["metadata"]["resourceVersion"].as_str().unwrap_or_default();
        options = after_condition_write(&options, rv);
    }
    let text = |pointer: &str| options.pointer(pointer).and_then(Value::as_str).map(String::from);
    let delete = DeleteOptions {
        dry_run,
        grace_period_seconds: options.get("gracePeriodSeconds").and_then(Value::as_i64),
        propagation_policy: text("/propagationPolicy"),
        precondition_uid: text("/preconditions/uid"),
        precondition_resource_version: text("/preconditions/resourceVersion"),
        skip_admission: true,
    };
    cluster.delete(&pods(), Some(ns), name, &delete).await.map(drop)
}
