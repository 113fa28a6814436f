//! The ReplicaSet controller's arithmetic (k8s-semantics §4.5): how many pods to create or
//! delete, which pods go first on scale-down (`ActivePodsWithRanks`, with
//! `controller.kubernetes.io/pod-deletion-cost` and LogarithmicScaleDown), the pod built from
//! the template, and the status.

use std::cmp::Ordering;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::common::{
    add_seconds, controller_ref, find_condition, int_at, is_terminating, name_of, namespace_of, parse_time,
    pod_is_ready, pod_phase, uid_of,
};
use crate::selector::LabelSelector;

/// upstream `BurstReplicas`: at most this many creations or deletions per sync.
pub const BURST_REPLICAS: usize = 500;
/// The pod annotation ordering scale-down.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// upstream `IsPodActive`: not Succeeded/Failed and not terminating.
pub fn is_pod_active(pod: &Value) -> bool {
    !matches!(pod_phase(pod), "Succeeded" | "Failed") && !is_terminating(pod)
}

/// True when `pod`'s controller reference points at `owner` (by uid).
pub fn is_controlled_by(pod: &Value, owner: &Value) -> bool {
    controller_ref(pod).is_some_and(|r| r["uid"].as_str() == Some(uid_of(owner)) && !uid_of(owner).is_empty())
}

/// What one sync of a ReplicaSet does with its pods.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplicaSetAction {
    /// Nothing to do.
    InSync,
    /// Create this many pods from [`pod_from_template`] (slow-start batching is the caller's).
    Create(usize),
    /// Delete these pods (plain DELETE, no options, so PDBs are not consulted).
    Delete(Vec<String>),
}

/// `manageReplicas`: compares the active pods controlled by `rs` with `spec.replicas`.
/// `related_pods` are the active pods of every ReplicaSet of the same Deployment (or just
/// this one's), for the co-location rank.
pub fn manage_replicas(
    rs: &Value,
    pods: &[Value],
    related_pods: &[Value],
    now: Timestamp,
) -> ReplicaSetAction {
    let active: Vec<&Value> = pods.iter().filter(|p| is_controlled_by(p, rs) && is_pod_active(p)).collect();
    let desired = usize::try_from(int_at(rs, "/spec/replicas", 1)).unwrap_or(0);
    match active.len().cmp(&desired) {
        Ordering::Equal => ReplicaSetAction::InSync,
        Ordering::Less => ReplicaSetAction::Create((desired - active.len()).min(BURST_REPLICAS)),
        Ordering::Greater => {
            let diff = (active.len() - desired).min(BURST_REPLICAS);
            let names = pods_to_delete(&active, related_pods, diff, now)
                .into_iter()
                .map(|p| name_of(p).to_string())
                .collect();
            ReplicaSetAction::Delete(names)
        }
    }
}

/// upstream `GetDeletionCostFromPodAnnotations`: a decimal int32 without `+` or leading
/// zeros; anything else (or absent) counts as 0.
pub fn deletion_cost(pod: &Value) -> i32 {
    let Some(text) =
        pod.pointer("/metadata/annotations").and_then(|a| a.get(POD_DELETION_COST)).and_then(Value::as_str)
    else {
        return 0;
    };
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if canonical { text.parse().unwrap_or(0) } else { 0 }
}

fn phase_ordinal(pod: &Value) -> u8 {
    match pod_phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn ready_time(pod: &Value) -> Option<Timestamp> {
    find_condition(pod, "Ready")
        .filter(|c| c["status"] == "True")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(parse_time)
}

fn max_restarts(pod: &Value) -> i64 {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|s| s.iter().map(|c| int_at(c, "/restartCount", 0)).max().unwrap_or(0))
        .unwrap_or(0)
}

/// floor(log2(now − t in nanoseconds)), −1 for t ≥ now (upstream `logarithmicRankDiff`).
fn log_bucket(time: Timestamp, now: Timestamp) -> i64 {
    let nanos = now.as_nanosecond() - time.as_nanosecond();
    if nanos <= 0 { -1 } else { i64::from(127 - nanos.leading_zeros() as i32) }
}

/// Upstream's tie-break on two times: zero (None) first, then by log2 age bucket (younger
/// first), then by uid; `Equal` when the times are equal.
fn compare_times(a: (Option<Timestamp>, &str), b: (Option<Timestamp>, &str), now: Timestamp) -> Ordering {
    match (a.0, b.0) {
        (ta, tb) if ta == tb => Ordering::Equal,
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
        (Some(ta), Some(tb)) => match log_bucket(ta, now).cmp(&log_bucket(tb, now)) {
            Ordering::Equal => a.1.cmp(b.1),
            other => other,
        },
    }
}

/// upstream `ActivePodsWithRanks.Less` as an ordering (first = deleted first).
fn deletion_order(a: (&Value, usize), b: (&Value, usize), now: Timestamp) -> Ordering {
    let node = |p: &Value| p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("").to_string();
    let (pa, pb) = (a.0, b.0);
    if node(pa) != node(pb) && (node(pa).is_empty() || node(pb).is_empty()) {
        return if node(pa).is_empty() { Ordering::Less } else { Ordering::Greater };
    }
    phase_ordinal(pa)
        .cmp(&phase_ordinal(pb))
        .then_with(|| pod_is_ready(pa).cmp(&pod_is_ready(pb)))
        .then_with(|| deletion_cost(pa).cmp(&deletion_cost(pb)))
        .then_with(|| b.1.cmp(&a.1))
        .then_with(|| {
            if pod_is_ready(pa) && pod_is_ready(pb) {
                compare_times((ready_time(pa), uid_of(pa)), (ready_time(pb), uid_of(pb)), now)
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_restarts(pb).cmp(&max_restarts(pa)))
        .then_with(|| {
            let created = |p: &Value| p.pointer("/metadata/creationTimestamp").and_then(parse_time);
            compare_times((created(pa), uid_of(pa)), (created(pb), uid_of(pb)), now)
        })
}

/// upstream `getPodsToDelete`: the first `count` of `pods` in deletion order. The rank of a
/// pod is the number of active `related_pods` on its node.
pub fn pods_to_delete<'a>(
    pods: &[&'a Value],
    related_pods: &[Value],
    count: usize,
    now: Timestamp,
) -> Vec<&'a Value> {
    let on_node = |node: &str| {
        related_pods
            .iter()
            .filter(|p| {
                is_pod_active(p) && p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("") == node
            })
            .count()
    };
    let mut ranked: Vec<(&Value, usize)> = pods
        .iter()
        .map(|p| (*p, on_node(p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or(""))))
        .collect();
    ranked.sort_by(|a, b| deletion_order(*a, *b, now));
    ranked.into_iter().take(count).map(|(p, _)| p).collect()
}

/// A pod for `rs` (to POST; the server resolves `generateName`): template labels,
/// annotations and spec, `ownerReferences` to the ReplicaSet.
pub fn pod_from_template(rs: &Value) -> Value {
    let template = rs.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
    let mut metadata =
        template.get("metadata").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.remove("creationTimestamp");
        m.insert("generateName".into(), json!(format!("{}-", name_of(rs))));
        m.insert("namespace".into(), json!(namespace_of(rs)));
        m.insert(
            "ownerReferences".into(),
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name_of(rs), "uid": uid_of(rs),
                "controller": true, "blockOwnerDeletion": true}]),
        );
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

/// upstream `IsPodAvailable`: Ready for at least `minReadySeconds`.
pub fn is_pod_available(pod: &Value, min_ready_seconds: i64, now: Timestamp) -> bool {
    if !pod_is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    ready_time(pod).is_some_and(|t| add_seconds(t, min_ready_seconds) < now)
}

/// The ReplicaSet's status from its pods (`calculateStatus`), keeping its conditions.
pub fn replica_set_status(rs: &Value, pods: &[Value], now: Timestamp) -> Value {
    let active: Vec<&Value> = pods.iter().filter(|p| is_controlled_by(p, rs) && is_pod_active(p)).collect();
    let template_labels = rs.pointer("/spec/template/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    let labelled = LabelSelector::from_api(&json!({"matchLabels": template_labels})).unwrap_or_default();
    let min_ready = int_at(rs, "/spec/minReadySeconds", 0);
    // v1.35 counts the pods still terminating (`terminatingReplicas`, a pointer: 0 is written).
    let terminating = pods
        .iter()
        .filter(|p| {
            is_controlled_by(p, rs) && is_terminating(p) && !matches!(pod_phase(p), "Succeeded" | "Failed")
        })
        .count();
    let mut status = json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": active.iter().filter(|p| labelled.matches_object(p)).count(),
        "readyReplicas": active.iter().filter(|p| pod_is_ready(p)).count(),
        "availableReplicas": active.iter().filter(|p| is_pod_available(p, min_ready, now)).count(),
        "observedGeneration": int_at(rs, "/metadata/generation", 0),
    });
    // The other counters are `omitempty`, `replicas` is not.
    if let Some(map) = status.as_object_mut() {
        map.retain(|k, v| k == "replicas" || *v != json!(0));
    }
    status["terminatingReplicas"] = json!(terminating);
    if let Some(conditions) =
        rs.pointer("/status/conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        status["conditions"] = conditions.clone();
    }
    status
}

#[cfg(test)]
#[path = "replicaset_tests.rs"]
mod tests;
