//! The disruption controller's PDB status computation (k8s-semantics §2), as pure functions:
//! `sync_pdb` is upstream `trySync` + `updatePdbStatus` + `failSafe`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::common::{
    add_seconds, api_group, controller_ref, find_condition, format_time, int_at, is_terminating, name_of,
    namespace_of, parse_time, pod_is_ready, pod_phase, scaled_int_or_percent, set_status_condition, uid_of,
};
use crate::selector::LabelSelector;

/// upstream `DeletionTimeout`: a `disruptedPods` entry older than this is dropped.
pub const DELETION_TIMEOUT_SECONDS: i64 = 120;
/// upstream `stalePodDisruptionTimeout` (§2.8).
pub const STALE_DISRUPTION_TARGET_SECONDS: i64 = 120;

/// True when the PDB's `spec.selector` selects `pod` (same namespace; null selects nothing,
/// `{}` everything; an unparseable selector selects nothing).
pub fn pdb_selects(pdb: &Value, pod: &Value) -> bool {
    if namespace_of(pdb) != namespace_of(pod) {
        return false;
    }
    let selector = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
    LabelSelector::from_api(selector).is_ok_and(|s| s.matches_object(pod))
}

/// The PDBs (from `pdbs`, any namespace) that select `pod`, in input order.
pub fn pdbs_for_pod<'a>(pod: &Value, pdbs: &'a [Value]) -> Vec<&'a Value> {
    pdbs.iter().filter(|pdb| pdb_selects(pdb, pod)).collect()
}

/// The scale of a workload found through upstream's generic `/scale` finder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadScale {
    /// The workload's uid.
    pub uid: String,
    /// `spec.replicas` of its Scale.
    pub replicas: i64,
}

/// Read access to the workloads of the PDB's namespace, for upstream's controller finders.
pub trait Workloads {
    /// The object of `kind` in API group `group` named `name` (ReplicationController,
    /// ReplicaSet, Deployment, StatefulSet).
    fn get(&self, group: &str, kind: &str, name: &str) -> Option<Value>;
    /// The Scale of an object of any other kind: `Ok(None)` when it does not exist,
    /// `Err(message)` when the kind is unknown or has no scale subresource.
    fn scale(&self, api_version: &str, kind: &str, name: &str) -> Result<Option<WorkloadScale>, String>;
}

/// A plain list of workload objects; "other kinds" have a scale iff they have `spec.replicas`.
impl Workloads for [Value] {
    fn get(&self, group: &str, kind: &str, name: &str) -> Option<Value> {
        self.iter()
            .find(|o| {
                o["kind"] == kind
                    && name_of(o) == name
                    && api_group(o["apiVersion"].as_str().unwrap_or("")) == group
            })
            .cloned()
    }
    fn scale(&self, api_version: &str, kind: &str, name: &str) -> Result<Option<WorkloadScale>, String> {
        let Some(object) = Workloads::get(self, api_group(api_version), kind, name) else { return Ok(None) };
        match object.pointer("/spec/replicas").and_then(Value::as_i64) {
            Some(replicas) => Ok(Some(WorkloadScale { uid: uid_of(&object).to_string(), replicas })),
            // Upstream names the group-resource; the plural is guessed as `<kind>s`.
            None => {
                let group = api_group(api_version);
                let resource = format!("{}s", kind.to_lowercase());
                let group_resource = if group.is_empty() { resource } else { format!("{resource}.{group}") };
                Err(format!("{group_resource} does not implement the scale subresource"))
            }
        }
    }
}

/// An event the controller records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerEvent {
    /// `PodDisruptionBudget` or `Pod`.
    pub involved_kind: &'static str,
    /// The involved object's name.
    pub involved_name: String,
    /// `Normal` or `Warning`.
    pub event_type: &'static str,
    /// `NoPods`, `UnmanagedPods`, `NotDeleted`, `CalculateExpectedPodCountFailed`.
    pub reason: &'static str,
    /// The message.
    pub message: String,
}

/// The outcome of one PDB sync.
#[derive(Clone, Debug, PartialEq)]
pub struct PdbSync {
    /// The PDB's complete new `status`.
    pub status: Value,
    /// Whether `status` differs from the stored one (write via `/status` only if true).
    pub needs_write: bool,
    /// When to sync again because a `disruptedPods` entry expires.
    pub recheck_at: Option<Timestamp>,
    /// Events to record.
    pub events: Vec<ControllerEvent>,
    /// True when the sync failed and `status` is upstream's `failSafe` status.
    pub failed: bool,
}

fn pdb_event(
    pdb: &Value,
    event_type: &'static str,
    reason: &'static str,
    message: String,
) -> ControllerEvent {
    ControllerEvent {
        involved_kind: "PodDisruptionBudget",
        involved_name: name_of(pdb).to_string(),
        event_type,
        reason,
        message,
    }
}

/// One disruption-controller sync of `pdb`. `pods` are the pods of the PDB's namespace
/// (those it does not select are ignored); `workloads` answers the controller lookups of §2.3.
pub fn sync_pdb(
    pdb: &Value,
    pods: &[Value],
    workloads: &(impl Workloads + ?Sized),
    now: Timestamp,
) -> PdbSync {
    let pods: Vec<&Value> = pods.iter().filter(|p| pdb_selects(pdb, p)).collect();
    let mut events = Vec::new();
    if pods.is_empty() {
        events.push(pdb_event(pdb, "Normal", "NoPods", "No matching pods found".into()));
    }
    let (expected, desired, unmanaged) = match expected_pod_count(pdb, &pods, workloads) {
        Ok(counts) => counts,
        Err(error) => {
            events.push(pdb_event(
                pdb,
                "Warning",
                "CalculateExpectedPodCountFailed",
                format!("Failed to calculate the number of expected pods: {error}"),
            ));
            let mut sync = fail_safe(pdb, &error, now);
            sync.events = events;
            return sync;
        }
    };
    if !unmanaged.is_empty() {
        let selector = LabelSelector::from_api(pdb.pointer("/spec/selector").unwrap_or(&Value::Null))
            .map(|s| s.to_string())
            .unwrap_or_default();
        events.push(pdb_event(pdb, "Warning", "UnmanagedPods", format!(
            "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."
        )));
    }
    let (disrupted, recheck_at) = disrupted_pod_map(pdb, &pods, now, &mut events);
    let current = count_healthy(&pods, &disrupted, now);
    let allowed = if expected <= 0 || current - desired <= 0 { 0 } else { current - desired };

    let old = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = int_at(pdb, "/metadata/generation", 0);
    let old_disrupted = old.get("disruptedPods").and_then(Value::as_object).cloned().unwrap_or_default();
    let unchanged = int_at(&old, "/currentHealthy", 0) == current
        && int_at(&old, "/desiredHealthy", 0) == desired
        && int_at(&old, "/expectedPods", 0) == expected
        && int_at(&old, "/disruptionsAllowed", 0) == allowed
        && same_times(&old_disrupted, &disrupted)
        && int_at(&old, "/observedGeneration", 0) == generation
        && conditions_up_to_date(pdb);
    if unchanged {
        return PdbSync { status: old, needs_write: false, recheck_at, events, failed: false };
    }
    let mut conditions = old.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let (status, reason) =
        if allowed > 0 { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
    set_status_condition(&mut conditions, disruption_allowed(status, reason, "", generation), now);
    let mut status = json!({
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "conditions": conditions,
    });
    if generation != 0 {
        status["observedGeneration"] = json!(generation);
    }
    if !disrupted.is_empty() {
        let map: Map<String, Value> =
            disrupted.iter().map(|(name, time)| (name.clone(), json!(format_time(*time)))).collect();
        status["disruptedPods"] = Value::Object(map);
    }
    PdbSync { status, needs_write: true, recheck_at, events, failed: false }
}

/// upstream `failSafe`: `disruptionsAllowed = 0` and `DisruptionAllowed=False/SyncFailed`
/// with the error, every other field (including `observedGeneration`) left as it was.
pub fn fail_safe(pdb: &Value, error: &str, now: Timestamp) -> PdbSync {
    let mut status = pdb.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    status["disruptionsAllowed"] = json!(0);
    let observed = int_at(&status, "/observedGeneration", 0);
    let mut conditions = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    set_status_condition(&mut conditions, disruption_allowed("False", "SyncFailed", error, observed), now);
    status["conditions"] = Value::Array(conditions);
    PdbSync { status, needs_write: true, recheck_at: None, events: Vec::new(), failed: true }
}

fn disruption_allowed(status: &str, reason: &str, message: &str, observed_generation: i64) -> Value {
    let mut condition =
        json!({"type": "DisruptionAllowed", "status": status, "reason": reason, "message": message});
    if observed_generation != 0 {
        condition["observedGeneration"] = json!(observed_generation);
    }
    condition
}

/// upstream `ConditionsAreUpToDate`, judged on the stored status.
fn conditions_up_to_date(pdb: &Value) -> bool {
    let Some(condition) = find_condition(pdb, "DisruptionAllowed") else { return false };
    if int_at(pdb, "/status/observedGeneration", 0) != int_at(pdb, "/metadata/generation", 0) {
        return false;
    }
    if int_at(pdb, "/status/disruptionsAllowed", 0) > 0 {
        condition["status"] == "True" && condition["reason"] == "SufficientPods"
    } else {
        condition["status"] == "False" && condition["reason"] == "InsufficientPods"
    }
}

fn same_times(old: &Map<String, Value>, new: &BTreeMap<String, Timestamp>) -> bool {
    old.len() == new.len()
        && new.iter().all(|(name, time)| old.get(name).and_then(parse_time).is_some_and(|t| t == *time))
}

/// upstream `getExpectedPodCount`: (expectedPods, desiredHealthy, unmanaged pod names).
fn expected_pod_count(
    pdb: &Value,
    pods: &[&Value],
    workloads: &(impl Workloads + ?Sized),
) -> Result<(i64, i64, Vec<String>), String> {
    let spec = pdb.get("spec").unwrap_or(&Value::Null);
    if let Some(max_unavailable) = spec.get("maxUnavailable").filter(|v| !v.is_null()) {
        let (expected, unmanaged) = expected_scale(pods, workloads)?;
        let max_unavailable = scaled_int_or_percent(max_unavailable, expected, true)?;
        return Ok((expected, (expected - max_unavailable).max(0), unmanaged));
    }
    match spec.get("minAvailable") {
        Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0), Vec::new())),
        Some(percent @ Value::String(_)) => {
            let (expected, unmanaged) = expected_scale(pods, workloads)?;
            Ok((expected, scaled_int_or_percent(percent, expected, true)?, unmanaged))
        }
        _ => Ok((0, 0, Vec::new())),
    }
}

/// upstream `getExpectedScale`: the sum of the distinct controllers' scales.
fn expected_scale(
    pods: &[&Value],
    workloads: &(impl Workloads + ?Sized),
) -> Result<(i64, Vec<String>), String> {
    let mut scales: BTreeMap<String, i64> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let Some(owner) = controller_ref(pod) else {
            unmanaged.push(name_of(pod).to_string());
            continue;
        };
        match find_controller_scale(owner, workloads)? {
            Some((uid, replicas)) => {
                scales.insert(uid, replicas);
            }
            None => return Err(format!("found no controllers for pod \"{}\"", name_of(pod))),
        }
    }
    Ok((scales.values().sum(), unmanaged))
}

/// upstream's finders, in order: ReplicationController, Deployment (via its ReplicaSet),
/// ReplicaSet not owned by a Deployment, StatefulSet, then any kind's `/scale`.
fn find_controller_scale(
    owner: &Value,
    workloads: &(impl Workloads + ?Sized),
) -> Result<Option<(String, i64)>, String> {
    let api_version = owner["apiVersion"].as_str().unwrap_or("");
    let (group, kind, name, uid) = (
        api_group(api_version),
        owner["kind"].as_str().unwrap_or(""),
        owner["name"].as_str().unwrap_or(""),
        &owner["uid"],
    );
    let lookup = |g: &str, k: &str, n: &str, u: &Value| {
        workloads.get(g, k, n).filter(|o| o.pointer("/metadata/uid") == Some(u))
    };
    let replicas = |o: &Value| int_at(o, "/spec/replicas", 1);
    match (group, kind) {
        ("", "ReplicationController") => {
            Ok(lookup("", kind, name, uid).map(|rc| (uid_of(&rc).into(), replicas(&rc))))
        }
        ("apps" | "extensions", "ReplicaSet") => {
            let Some(rs) = lookup(group, kind, name, uid) else { return Ok(None) };
            match controller_ref(&rs) {
                Some(rs_owner) if rs_owner["kind"] == "Deployment" => {
                    let owner_group = api_group(rs_owner["apiVersion"].as_str().unwrap_or(""));
                    if !matches!(owner_group, "apps" | "extensions") {
                        return Ok(None);
                    }
                    let deployment_name = rs_owner["name"].as_str().unwrap_or("");
                    Ok(lookup(owner_group, "Deployment", deployment_name, &rs_owner["uid"])
                        .map(|d| (uid_of(&d).into(), replicas(&d))))
                }
                _ => Ok(Some((uid_of(&rs).into(), replicas(&rs)))),
            }
        }
        ("apps", "StatefulSet") => {
            Ok(lookup(group, kind, name, uid).map(|s| (uid_of(&s).into(), replicas(&s))))
        }
        _ => Ok(workloads
            .scale(api_version, kind, name)?
            .filter(|scale| uid.as_str() == Some(scale.uid.as_str()))
            .map(|scale| (scale.uid, scale.replicas))),
    }
}

/// upstream `buildDisruptedPodMap`: keeps entries of selected, non-terminating pods that are
/// younger than 2 minutes; returns them and the earliest expiry.
fn disrupted_pod_map(
    pdb: &Value,
    pods: &[&Value],
    now: Timestamp,
    events: &mut Vec<ControllerEvent>,
) -> (BTreeMap<String, Timestamp>, Option<Timestamp>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let Some(entries) = pdb.pointer("/status/disruptedPods").and_then(Value::as_object) else {
        return (kept, recheck);
    };
    for pod in pods {
        if is_terminating(pod) {
            continue;
        }
        let Some(time) = entries.get(name_of(pod)).and_then(parse_time) else { continue };
        let expiry = add_seconds(time, DELETION_TIMEOUT_SECONDS);
        if expiry < now {
            let namespace = namespace_of(pdb);
            events.push(ControllerEvent {
                involved_kind: "Pod",
                involved_name: name_of(pod).to_string(),
                event_type: "Warning",
                reason: "NotDeleted",
                // Upstream prints the namespace twice.
                message: format!(
                    "Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't"
                ),
            });
        } else {
            recheck = Some(recheck.map_or(expiry, |r| r.min(expiry)));
            kept.insert(name_of(pod).to_string(), time);
        }
    }
    (kept, recheck)
}

/// upstream `countHealthyPods`.
fn count_healthy(pods: &[&Value], disrupted: &BTreeMap<String, Timestamp>, now: Timestamp) -> i64 {
    pods.iter()
        .filter(|pod| !is_terminating(pod))
        .filter(|pod| {
            disrupted.get(name_of(pod)).is_none_or(|t| add_seconds(*t, DELETION_TIMEOUT_SECONDS) <= now)
        })
        .filter(|pod| pod_is_ready(pod))
        .count() as i64
}

/// What to do about a pod's `DisruptionTarget` condition (§2.8).
#[derive(Clone, Debug, PartialEq)]
pub enum StaleDisruptionTarget {
    /// Nothing to clean up.
    Nothing,
    /// Check again at this time.
    CleanUpAt(Timestamp),
    /// Write this condition (status False, no reason or message) through `/status` now.
    CleanUpNow(Value),
}

/// upstream stale-DisruptionTarget cleanup: a non-terminal, non-terminating pod holding
/// `DisruptionTarget=True` (not from the kubelet) for 2 minutes gets it flipped to False.
pub fn stale_disruption_target(pod: &Value, now: Timestamp) -> StaleDisruptionTarget {
    let Some(condition) = find_condition(pod, "DisruptionTarget") else {
        return StaleDisruptionTarget::Nothing;
    };
    if is_terminating(pod)
        || condition["status"] != "True"
        || condition["reason"] == "TerminationByKubelet"
        || matches!(pod_phase(pod), "Succeeded" | "Failed")
    {
        return StaleDisruptionTarget::Nothing;
    }
    let since = condition.get("lastTransitionTime").and_then(parse_time).unwrap_or(now);
    let due = add_seconds(since, STALE_DISRUPTION_TARGET_SECONDS);
    if due > now {
        return StaleDisruptionTarget::CleanUpAt(due);
    }
    StaleDisruptionTarget::CleanUpNow(
        json!({"type": "DisruptionTarget", "status": "False", "lastTransitionTime": format_time(now)}),
    )
}

#[cfg(test)]
#[path = "disruption_tests.rs"]
mod tests;
