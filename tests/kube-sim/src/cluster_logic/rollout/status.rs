//! The Deployment status (`calculateStatus`, `syncRolloutStatus`) and its conditions.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::steps::status_int;
use super::{Sync, has_progress_deadline, max_unavailable, replicas};
use crate::cluster_logic::common::{add_seconds, find_condition, format_time, int_at, name_of, parse_time};

/// upstream `SetDeploymentCondition`: no-op when status and reason are unchanged; keeps
/// `lastTransitionTime` when only the reason changes.
pub(super) fn set_deployment_condition(
    conditions: &mut Vec<Value>,
    condition_type: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) {
    let now = format_time(now);
    let mut condition = json!({"type": condition_type, "status": status, "lastUpdateTime": now,
        "lastTransitionTime": now, "reason": reason, "message": message});
    if let Some(current) = conditions.iter().find(|c| c["type"] == condition_type) {
        if current["status"] == status && current["reason"] == reason {
            return;
        }
        if current["status"] == status {
            condition["lastTransitionTime"] = current["lastTransitionTime"].clone();
        }
    }
    conditions.retain(|c| c["type"] != condition_type);
    conditions.push(condition);
}

/// `calculateStatus` (counters, `Available`) and, when `estimate_progress`,
/// `syncRolloutStatus` (`Progressing`, `ReplicaFailure`).
pub(super) fn rollout_status(sync: &mut Sync, estimate_progress: bool) -> Value {
    let deployment = sync.deployment;
    let all = sync.all();
    let new_rs = sync.new_index.map(|i| &sync.replica_sets[i]);
    let available = sync.total(&all, |rs| status_int(rs, "availableReplicas"));
    let mut status = json!({
        "observedGeneration": int_at(deployment, "/metadata/generation", 0),
        "replicas": sync.total(&all, |rs| status_int(rs, "replicas")),
        "updatedReplicas": new_rs.map_or(0, |rs| status_int(rs, "replicas")),
        "readyReplicas": sync.total(&all, |rs| status_int(rs, "readyReplicas")),
        "availableReplicas": available,
        "unavailableReplicas": (sync.total(&all, replicas) - available).max(0),
    });
    // The counters are `omitempty` in apps/v1: a zero is not written.
    if let Some(map) = status.as_object_mut() {
        map.retain(|k, v| k == "observedGeneration" || *v != json!(0));
    }
    // v1.35 `GetTerminatingReplicaCountForReplicaSets`: the sum over the ReplicaSets, those never
    // synced aside; unknown (left out) when a synced one does not count them.
    let terminating = all.iter().map(|i| &sync.replica_sets[*i]).try_fold(0, |sum, rs| {
        match rs.pointer("/status/terminatingReplicas").and_then(Value::as_i64) {
            Some(n) => Some(sum + n),
            None if status_int(rs, "observedGeneration") == 0 => Some(sum),
            None => None,
        }
    });
    if let Some(terminating) = terminating {
        status["terminatingReplicas"] = json!(terminating);
    }
    if let Some(count) = deployment.pointer("/status/collisionCount") {
        status["collisionCount"] = count.clone();
    }
    let desired = replicas(deployment);
    let new_name = new_rs.map(|rs| name_of(rs).to_string());
    if available >= desired - max_unavailable(deployment) {
        sync.set_condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
        );
    } else {
        sync.set_condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
        );
    }
    let old_status = deployment.get("status").cloned().unwrap_or_else(|| json!({}));
    let old = |f: &str| int_at(&old_status, &format!("/{f}"), 0);
    let new = |f: &str| int_at(&status, &format!("/{f}"), 0);
    let current = sync.conditions.iter().find(|c| c["type"] == "Progressing").cloned();
    let complete_before = new("replicas") == new("updatedReplicas")
        && current.as_ref().is_some_and(|c| c["reason"] == "NewReplicaSetAvailable");
    let subject = |what: &str| match &new_name {
        Some(name) => format!("ReplicaSet \"{name}\" {what}"),
        None => format!("Deployment \"{}\" {what}", name_of(deployment)),
    };
    if !estimate_progress {
        status["conditions"] = Value::Array(sync.conditions.clone());
        return status;
    }
    if !has_progress_deadline(deployment) {
        sync.conditions.retain(|c| c["type"] != "Progressing");
    } else if !complete_before {
        let complete = new("updatedReplicas") == desired
            && new("replicas") == desired
            && available == desired
            && new("observedGeneration") >= int_at(deployment, "/metadata/generation", 0);
        let progressing = new("updatedReplicas") > old("updatedReplicas")
            || new("replicas") - new("updatedReplicas") < old("replicas") - old("updatedReplicas")
            || new("readyReplicas") > old("readyReplicas")
            || available > old("availableReplicas");
        if complete {
            sync.set_condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                subject("has successfully progressed."),
            );
        } else if progressing {
            let now = format_time(sync.now);
            let transition = current
                .as_ref()
                .filter(|c| c["status"] == "True")
                .map_or(json!(now), |c| c["lastTransitionTime"].clone());
            sync.conditions.retain(|c| c["type"] != "Progressing");
            sync.conditions.push(json!({"type": "Progressing", "status": "True", "lastUpdateTime": now,
                "lastTransitionTime": transition, "reason": "ReplicaSetUpdated", "message": subject("is progressing.")}));
        } else if let Some(c) = current
            .as_ref()
            .filter(|c| c["reason"] != "NewReplicaSetAvailable" && c["reason"] != "ProgressDeadlineExceeded")
        {
            let deadline = int_at(deployment, "/spec/progressDeadlineSeconds", 600);
            let updated = c.get("lastUpdateTime").and_then(parse_time).unwrap_or(sync.now);
            if add_seconds(updated, deadline) < sync.now {
                sync.set_condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    subject("has timed out progressing."),
                );
            }
        }
    }
    let failure = sync
        .replica_sets
        .iter()
        .find_map(|rs| find_condition(rs, "ReplicaFailure").filter(|c| c["status"] == "True").cloned());
    sync.conditions.retain(|c| c["type"] != "ReplicaFailure");
    if let Some(failure) = failure {
        let message = failure["message"].as_str().unwrap_or("").to_string();
        let reason = failure["reason"].as_str().unwrap_or("").to_string();
        set_deployment_condition(&mut sync.conditions, "ReplicaFailure", "True", &reason, message, sync.now);
    }
    status["conditions"] = Value::Array(sync.conditions.clone());
    status
}
