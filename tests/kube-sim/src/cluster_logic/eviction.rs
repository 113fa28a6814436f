//! The Eviction subresource's decisions (k8s-semantics §1), in upstream order, as pure steps
//! the handler chains:
//!
//! 1. [`decode_eviction`] (body version, defaults, unknown fields, namespace check), then the
//!    caller's mutating admission on the returned Eviction;
//! 2. [`prepare_eviction`] (name check, `propagateDryRun`), then validating admission;
//! 3. GET the pod (404 [`pod_not_found`]), list the namespace's PDBs, [`decide_eviction`];
//! 4. for [`EvictionPlan::pdb_update`]: PUT the PDB status with its resourceVersion; on a
//!    Conflict re-GET that PDB and call [`check_and_decrement`] again (at most 20 attempts,
//!    then [`pdb_conflicts_exhausted`]);
//! 5. unless dry-run, [`disruption_target_update`] writes the pod's condition through the
//!    status path (no admission), and [`after_condition_write`] moves an RV precondition to
//!    the new resourceVersion;
//! 6. delete the pod (no admission) with [`EvictionPlan::delete_options`]:
//!    [`check_delete_preconditions`], then [`pod_deletion`] for the grace period; on a
//!    Conflict follow [`EvictionPlan::on_conflict`]; on success answer [`evicted`].

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::common::{
    StatusResponse, add_seconds, format_time, int_at, is_terminating, name_of, pod_is_ready, pod_phase,
    set_status_condition,
};
use super::disruption::pdbs_for_pod;

/// upstream `MaxDisruptedPodSize`.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;
/// upstream `EvictionsRetry.Steps`: attempts for pod conflicts and PDB status conflicts.
pub const EVICTION_RETRY_STEPS: usize = 20;

const DELETE_OPTIONS_FIELDS: &[&str] = &[
    "kind",
    "apiVersion",
    "gracePeriodSeconds",
    "preconditions",
    "orphanDependents",
    "propagationPolicy",
    "dryRun",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
];

/// A decoded Eviction, as admission sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedEviction {
    /// `policy/v1` Eviction with `metadata.namespace` filled and `creationTimestamp: null`.
    pub eviction: Value,
    /// `Warning` header texts (dropped unknown fields, e.g. kube-rs' `delete_options`).
    pub warnings: Vec<String>,
}

/// Decodes the POSTed body (`Value::Null` for an empty body) like the generic create
/// handler: `policy/v1` and `policy/v1beta1` are accepted (the result is always `policy/v1`),
/// a missing apiVersion/kind is defaulted, unknown fields are dropped with a warning
/// (`fieldValidation=Warn`), an empty namespace is taken from the URL.
pub fn decode_eviction(body: &Value, url_namespace: &str) -> Result<DecodedEviction, StatusResponse> {
    let empty = Map::new();
    let object = match body {
        Value::Null => &empty,
        Value::Object(object) => object,
        _ => {
            return Err(StatusResponse::failure(
                400,
                "BadRequest",
                "the request body is not a JSON object",
                None,
            ));
        }
    };
    let mut warnings = Vec::new();
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !matches!(api_version, "" | "policy/v1" | "policy/v1beta1") {
        let message = format!(
            "the API version in the data ({api_version}) does not match the expected API version (policy/v1)"
        );
        return Err(StatusResponse::failure(400, "BadRequest", &message, None));
    }
    let mut metadata = object.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    match metadata.get("namespace").and_then(Value::as_str).unwrap_or("") {
        "" => {
            metadata.insert("namespace".into(), json!(url_namespace));
        }
        ns if ns != url_namespace => {
            let message =
                "the namespace of the provided object does not match the namespace sent on the request";
            return Err(StatusResponse::failure(400, "BadRequest", message, None));
        }
        _ => {}
    }
    if metadata.get("creationTimestamp").is_none() {
        metadata.insert("creationTimestamp".into(), Value::Null);
    }
    let mut eviction = json!({"kind": "Eviction", "apiVersion": "policy/v1", "metadata": metadata});
    for (key, value) in object {
        match key.as_str() {
            "apiVersion" | "kind" | "metadata" => {}
            "deleteOptions" if value.is_null() => {}
            "deleteOptions" => {
                let mut options = Map::new();
                for (field, v) in value.as_object().into_iter().flatten() {
                    if DELETE_OPTIONS_FIELDS.contains(&field.as_str()) {
                        options.insert(field.clone(), v.clone());
                    } else {
                        warnings.push(format!("unknown field \"deleteOptions.{field}\""));
                    }
                }
                eviction["deleteOptions"] = Value::Object(options);
            }
            other => warnings.push(format!("unknown field \"{other}\"")),
        }
    }
    Ok(DecodedEviction { eviction, warnings })
}

/// The eviction after the name and dry-run checks.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedEviction {
    /// The pod to evict.
    pub pod_name: String,
    /// upstream `originalDeleteOptions` (a `DeleteOptions` JSON object, dryRun propagated).
    pub delete_options: Value,
    /// Any non-empty dryRun list.
    pub dry_run: bool,
}

impl PreparedEviction {
    fn client_rv_precondition(&self) -> bool {
        self.delete_options.pointer("/preconditions/resourceVersion").is_some_and(|v| v.is_string())
    }
}

fn dry_run_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

/// `EvictionREST.Create` steps 1–2: 400 when the URL name differs from `metadata.name`;
/// `propagateDryRun` (500 without reason when query and body dry-run lists differ).
/// `eviction` is the decoded (and mutated) Eviction; `query_dry_run` is `?dryRun=All`.
pub fn prepare_eviction(
    url_name: &str,
    eviction: &Value,
    query_dry_run: bool,
) -> Result<PreparedEviction, StatusResponse> {
    if name_of(eviction) != url_name || url_name.is_empty() {
        let message = "name in URL does not match name in Eviction object";
        return Err(StatusResponse::failure(400, "BadRequest", message, None));
    }
    let query: Vec<String> = if query_dry_run { vec!["All".into()] } else { Vec::new() };
    let mut options = match eviction.get("deleteOptions") {
        Some(Value::Object(options)) => Value::Object(options.clone()),
        _ => json!({}),
    };
    let body = dry_run_list(options.get("dryRun"));
    if body.is_empty() {
        if !query.is_empty() {
            options["dryRun"] = json!(query);
        }
    } else if !query.is_empty() && query != body {
        let message = format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            query.join(" "),
            body.join(" ")
        );
        return Err(StatusResponse::failure(500, "", &message, None));
    }
    let dry_run = !dry_run_list(options.get("dryRun")).is_empty();
    Ok(PreparedEviction { pod_name: url_name.to_string(), delete_options: options, dry_run })
}

/// R2: `pods "<name>" not found`.
pub fn pod_not_found(name: &str) -> StatusResponse {
    StatusResponse::failure(
        404,
        "NotFound",
        &format!("pods \"{name}\" not found"),
        Some(json!({"name": name, "kind": "pods"})),
    )
}

/// R1: `201` Status Success.
pub fn evicted() -> StatusResponse {
    StatusResponse::success(201)
}

/// R5: more than one PDB.
pub fn multiple_pdbs() -> StatusResponse {
    StatusResponse::failure(
        500,
        "",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        None,
    )
}

const BUDGET_MESSAGE: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn too_many_requests(cause: String, retry_after: u64) -> StatusResponse {
    let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
    if retry_after > 0 {
        details["retryAfterSeconds"] = json!(retry_after);
    }
    StatusResponse::failure(429, "TooManyRequests", BUDGET_MESSAGE, Some(details))
}

/// R4: upstream `createTooManyRequestsError` (Retry-After 10).
pub fn still_being_processed(pdb_name: &str) -> StatusResponse {
    too_many_requests(format!("The disruption budget {pdb_name} is still being processed by the server."), 10)
}

/// R7: the PDB status write conflicted on every attempt.
pub fn pdb_conflicts_exhausted(pdb_name: &str) -> StatusResponse {
    StatusResponse::failure(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on poddisruptionbudgets.policy \"{pdb_name}\": the object has been modified; please apply your changes to the latest version and try again"
        ),
        Some(json!({"name": pdb_name, "group": "policy", "kind": "poddisruptionbudgets"})),
    )
}

fn pdb_forbidden(pdb_name: &str, error: &str) -> StatusResponse {
    StatusResponse::failure(
        403,
        "Forbidden",
        &format!("poddisruptionbudget.policy \"{pdb_name}\" is forbidden: {error}"),
        Some(json!({"name": pdb_name, "group": "policy", "kind": "poddisruptionbudget"})),
    )
}

/// A PDB status write the eviction must make (PUT `/status`, optimistic on `resource_version`).
#[derive(Clone, Debug, PartialEq)]
pub struct PdbStatusUpdate {
    /// The PDB's name.
    pub pdb_name: String,
    /// The resourceVersion the status was computed from.
    pub resource_version: String,
    /// The complete new status.
    pub status: Value,
}

/// upstream `checkAndDecrement` (§1.4, v1.35 cause messages): `Ok(None)` on an allowed
/// dry run (nothing written), `Ok(Some(update))` to write, or the 429/403 answer.
pub fn check_and_decrement(
    pdb: &Value,
    pod_name: &str,
    dry_run: bool,
    now: Timestamp,
) -> Result<Option<PdbStatusUpdate>, StatusResponse> {
    let pdb_name = name_of(pdb);
    let mut status = pdb.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let allowed = int_at(&status, "/disruptionsAllowed", 0);
    if int_at(&status, "/observedGeneration", 0) < int_at(pdb, "/metadata/generation", 0) {
        return Err(still_being_processed(pdb_name));
    }
    if allowed < 0 {
        return Err(pdb_forbidden(pdb_name, "pdb disruptions allowed is negative"));
    }
    if status
        .get("disruptedPods")
        .and_then(Value::as_object)
        .is_some_and(|m| m.len() > MAX_DISRUPTED_POD_SIZE)
    {
        return Err(pdb_forbidden(
            pdb_name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(budget_cause(pdb_name, &status), 0));
    }
    status["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        let mut conditions = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut condition = json!({"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": ""});
        let observed = int_at(&status, "/observedGeneration", 0);
        if observed != 0 {
            condition["observedGeneration"] = json!(observed);
        }
        set_status_condition(&mut conditions, condition, now);
        status["conditions"] = Value::Array(conditions);
    }
    if dry_run {
        return Ok(None);
    }
    if !status.get("disruptedPods").is_some_and(Value::is_object) {
        status["disruptedPods"] = json!({});
    }
    status["disruptedPods"][pod_name] = json!(format_time(now));
    let resource_version = pdb.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
    Ok(Some(PdbStatusUpdate {
        pdb_name: pdb_name.to_string(),
        resource_version: resource_version.to_string(),
        status,
    }))
}

/// The `DisruptionBudget` cause of R3 (v1.35, PR #133097).
fn budget_cause(pdb_name: &str, status: &Value) -> String {
    let (desired, current) = (int_at(status, "/desiredHealthy", 0), int_at(status, "/currentHealthy", 0));
    let condition = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"));
    let false_with_message =
        condition.filter(|c| c["status"] == "False" && c["message"].as_str().is_some_and(|m| !m.is_empty()));
    let message = |c: &Value| c["message"].as_str().unwrap_or("").to_string();
    if let Some(c) = false_with_message.filter(|c| c["reason"] == "SyncFailed") {
        return format!(
            "The disruption budget {pdb_name} does not allow evicting pods currently because it failed sync: {}",
            message(c)
        );
    }
    if current <= desired {
        return format!(
            "The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"
        );
    }
    if let Some(c) = false_with_message {
        let reason = c["reason"].as_str().unwrap_or("");
        return format!(
            "The disruption budget {pdb_name} does not allow evicting pods currently ({reason}): {}",
            message(c)
        );
    }
    format!("The disruption budget {pdb_name} does not allow evicting pods currently")
}

/// What to do when the condition write or the pod delete answers 409 Conflict.
#[derive(Clone, Debug, PartialEq)]
pub enum OnConflict {
    /// Re-GET the pod and decide again (at most [`EVICTION_RETRY_STEPS`] attempts in all).
    RetryFromPodGet,
    /// Answer this instead of the conflict (R4 for an unready-pod delete).
    Respond(StatusResponse),
    /// Return the conflict unchanged.
    ReturnConflict,
}

/// The writes of an approved eviction, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct EvictionPlan {
    /// The PDB (if any was consulted and decremented) whose status to write first; None on dry run.
    pub pdb_update: Option<PdbStatusUpdate>,
    /// The delete options for the pod (possibly with an RV precondition added).
    pub delete_options: Value,
    /// Dry run: no condition write, dry-run delete.
    pub dry_run: bool,
    /// Conflict handling for the condition write and the delete.
    pub on_conflict: OnConflict,
}

/// The eviction decision.
#[derive(Clone, Debug, PartialEq)]
pub enum EvictionDecision {
    /// Answer now; nothing is written.
    Respond(StatusResponse),
    /// Go on with these writes.
    Evict(EvictionPlan),
}

fn with_rv_precondition(options: &Value, resource_version: &str) -> Value {
    let mut options = options.clone();
    if !options.get("preconditions").is_some_and(Value::is_object) {
        options["preconditions"] = json!({});
    }
    options["preconditions"]["resourceVersion"] = json!(resource_version);
    options
}

/// `EvictionREST.Create` steps 4–9 for the current `pod` and the PDBs of its namespace.
pub fn decide_eviction(
    prepared: &PreparedEviction,
    pod: &Value,
    pdbs: &[Value],
    now: Timestamp,
) -> EvictionDecision {
    let pod_rv = pod.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
    let client_rv = prepared.client_rv_precondition();
    let phase = pod_phase(pod);
    if matches!(phase, "Succeeded" | "Failed" | "Pending") || is_terminating(pod) {
        let enforce_rv = phase == "Pending" && !is_terminating(pod);
        let delete_options = if enforce_rv && !client_rv {
            with_rv_precondition(&prepared.delete_options, pod_rv)
        } else {
            prepared.delete_options.clone()
        };
        let on_conflict = if client_rv { OnConflict::ReturnConflict } else { OnConflict::RetryFromPodGet };
        return EvictionDecision::Evict(EvictionPlan {
            pdb_update: None,
            delete_options,
            dry_run: prepared.dry_run,
            on_conflict,
        });
    }
    let matching = pdbs_for_pod(pod, pdbs);
    let pdb = match matching.as_slice() {
        [] => {
            return EvictionDecision::Evict(EvictionPlan {
                pdb_update: None,
                delete_options: prepared.delete_options.clone(),
                dry_run: prepared.dry_run,
                on_conflict: OnConflict::ReturnConflict,
            });
        }
        [pdb] => *pdb,
        _ => return EvictionDecision::Respond(multiple_pdbs()),
    };
    if !pod_is_ready(pod) {
        let always_allow =
            pdb.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str) == Some("AlwaysAllow");
        let (current, desired) =
            (int_at(pdb, "/status/currentHealthy", 0), int_at(pdb, "/status/desiredHealthy", 0));
        if always_allow || (current >= desired && desired > 0) {
            let on_conflict = if client_rv {
                OnConflict::ReturnConflict
            } else {
                OnConflict::Respond(still_being_processed(name_of(pdb)))
            };
            return EvictionDecision::Evict(EvictionPlan {
                pdb_update: None,
                delete_options: with_rv_precondition(&prepared.delete_options, pod_rv),
                dry_run: prepared.dry_run,
                on_conflict,
            });
        }
    }
    match check_and_decrement(pdb, &prepared.pod_name, prepared.dry_run, now) {
        Err(response) => EvictionDecision::Respond(response),
        Ok(pdb_update) => EvictionDecision::Evict(EvictionPlan {
            pdb_update,
            delete_options: prepared.delete_options.clone(),
            dry_run: prepared.dry_run,
            on_conflict: OnConflict::ReturnConflict,
        }),
    }
}

fn pod_conflict(name: &str, error: String) -> StatusResponse {
    StatusResponse::failure(
        409,
        "Conflict",
        &format!("Operation cannot be fulfilled on Pod \"{name}\": {error}"),
        Some(json!({"name": name, "kind": "Pod"})),
    )
}

/// `addConditionAndDeletePod`'s status write on the latest stored `pod`: checks the uid/RV
/// preconditions of `delete_options` (409 on `Pod`, capital P) and upserts
/// `DisruptionTarget=True/EvictionByEvictionAPI`. Returns the pod to write via `/status`.
pub fn disruption_target_update(
    pod: &Value,
    delete_options: &Value,
    now: Timestamp,
) -> Result<Value, StatusResponse> {
    let name = name_of(pod);
    let precondition = |field: &str| {
        delete_options
            .pointer(&format!("/preconditions/{field}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let stored =
        |field: &str| pod.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or("");
    if let Some(uid) = precondition("uid").filter(|uid| *uid != stored("uid")) {
        return Err(pod_conflict(
            name,
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                stored("uid")
            ),
        ));
    }
    if let Some(rv) = precondition("resourceVersion").filter(|rv| *rv != stored("resourceVersion")) {
        return Err(pod_conflict(
            name,
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                stored("resourceVersion")
            ),
        ));
    }
    let mut pod = pod.clone();
    let mut conditions =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut condition = json!({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting", "lastTransitionTime": format_time(now)});
    match conditions.iter_mut().find(|c| c["type"] == "DisruptionTarget") {
        Some(existing) => {
            if existing["status"] == "True" {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    pod["status"]["conditions"] = Value::Array(conditions);
    Ok(pod)
}

/// After the condition write: an RV precondition (if any) is replaced by the pod's new
/// resourceVersion so the delete does not conflict with the eviction's own write.
pub fn after_condition_write(delete_options: &Value, new_resource_version: &str) -> Value {
    if delete_options.pointer("/preconditions/resourceVersion").is_some_and(|v| v.is_string()) {
        with_rv_precondition(delete_options, new_resource_version)
    } else {
        delete_options.clone()
    }
}

/// The storage-level precondition check of the pod DELETE (409 `StorageError`).
pub fn check_delete_preconditions(pod: &Value, delete_options: &Value) -> Result<(), StatusResponse> {
    let (name, namespace) =
        (name_of(pod), pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(""));
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        let wanted = delete_options.pointer(&format!("/preconditions/{field}")).and_then(Value::as_str);
        let actual = pod.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or("");
        if let Some(wanted) = wanted.filter(|w| *w != actual) {
            let message = format!(
                "Operation cannot be fulfilled on pods \"{name}\": StorageError: invalid object, Code: 4, Key: /registry/pods/{namespace}/{name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {label} in precondition: {wanted}, {label} in object meta: {actual}"
            );
            return Err(StatusResponse::failure(
                409,
                "Conflict",
                &message,
                Some(json!({"name": name, "kind": "pods"})),
            ));
        }
    }
    Ok(())
}

/// How a pod DELETE proceeds (upstream `CheckGracefulDelete` + `BeforeDelete`).
#[derive(Clone, Debug, PartialEq)]
pub enum PodDeletion {
    /// Remove the pod now.
    Immediate,
    /// Set `metadata.deletionTimestamp` and `metadata.deletionGracePeriodSeconds`; the
    /// kubelet removes the pod at the deadline.
    Graceful {
        /// `deletionGracePeriodSeconds`.
        grace_period_seconds: i64,
        /// `deletionTimestamp` (RFC 3339).
        deletion_timestamp: String,
    },
    /// Already terminating with a grace period no longer than the requested one: no change.
    Pending,
}

/// The grace period of a pod DELETE: the options' `gracePeriodSeconds`, else the pod's
/// `terminationGracePeriodSeconds` (else 0); 0 for unscheduled or finished pods; a negative
/// value becomes 1; a terminating pod's deadline may only be shortened.
pub fn pod_deletion(pod: &Value, delete_options: &Value, now: Timestamp) -> PodDeletion {
    let requested = delete_options.get("gracePeriodSeconds").and_then(Value::as_i64);
    let mut grace = requested.unwrap_or_else(|| int_at(pod, "/spec/terminationGracePeriodSeconds", 0));
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() || matches!(pod_phase(pod), "Succeeded" | "Failed") {
        grace = 0;
    }
    if grace < 0 {
        grace = 1;
    }
    if is_terminating(pod) {
        let current = int_at(pod, "/metadata/deletionGracePeriodSeconds", 0);
        if current == 0 {
            return PodDeletion::Immediate;
        }
        let Some(requested) = requested.filter(|r| *r < current) else { return PodDeletion::Pending };
        if requested <= 0 {
            return PodDeletion::Immediate;
        }
        let old =
            pod.pointer("/metadata/deletionTimestamp").and_then(super::common::parse_time).unwrap_or(now);
        return PodDeletion::Graceful {
            grace_period_seconds: requested,
            deletion_timestamp: format_time(add_seconds(old, requested - current)),
        };
    }
    if grace == 0 {
        return PodDeletion::Immediate;
    }
    PodDeletion::Graceful {
        grace_period_seconds: grace,
        deletion_timestamp: format_time(add_seconds(now, grace)),
    }
}

#[cfg(test)]
#[path = "eviction_tests.rs"]
mod tests;
