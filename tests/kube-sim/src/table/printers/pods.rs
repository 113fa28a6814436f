//! Pods and nodes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::table::Column;

// --- pods ---

pub(super) const POD_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column::new("Status", "string", "The aggregate status of the containers in this pod."),
    Column::new("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    Column::age(),
    Column::new("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.").wide(),
    Column::new("Node", "string", "NodeName indicates in which node this pod is scheduled.").wide(),
    Column::new("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.").wide(),
    Column::new("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness.").wide(),
];

pub(super) fn pod_conditions(pod: &Value) -> Option<Value> {
    let (reason, message) = match text(pod, "/status/phase") {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

pub(super) fn condition_is_true(object: &Value, condition_type: &str) -> bool {
    items(object, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == condition_type && text(c, "/status") == "True")
}

pub(super) fn is_restartable_init_container(container: Option<&Value>) -> bool {
    container.is_some_and(|c| text(c, "/restartPolicy") == "Always")
}

/// Restart count and the latest `lastState.terminated.finishedAt` of one container status.
pub(super) fn note_restarts(status: &Value, restarts: &mut i64, last: &mut Option<jiff::Timestamp>) {
    *restarts += int(status, "/restartCount");
    if let Some(finished) = status
        .pointer("/lastState/terminated/finishedAt")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        && last.is_none_or(|l| l < finished)
    {
        *last = Some(finished);
    }
}

pub(super) fn terminated_reason(terminated: &Value, prefix: &str) -> String {
    let reason = text(terminated, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int(terminated, "/signal");
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int(terminated, "/exitCode"))
    }
}

/// upstream `printPod`.
pub(super) fn pod_cells(pod: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let init_specs = items(pod, "/spec/initContainers");
    let init_spec = |name: &str| init_specs.iter().find(|c| text(c, "/name") == name);
    let total = items(pod, "/spec/containers").len()
        + init_specs.iter().filter(|c| is_restartable_init_container(Some(c))).count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart = None;
    let mut sidecar_restarts = 0;
    let mut last_sidecar_restart = None;
    let phase = text(pod, "/status/phase");
    let mut reason = match text(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if items(pod, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let init_statuses = items(pod, "/status/initContainerStatuses");
    let mut initializing = false;
    for (i, status) in init_statuses.iter().enumerate() {
        note_restarts(status, &mut restarts, &mut last_restart);
        let restartable = is_restartable_init_container(init_spec(text(status, "/name")));
        if restartable {
            note_restarts(status, &mut sidecar_restarts, &mut last_sidecar_restart);
        }
        let terminated = status.pointer("/state/terminated");
        let waiting_reason = text(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| int(t, "/exitCode") == 0) {
            continue;
        }
        if restartable && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(terminated) = terminated {
            terminated_reason(terminated, "Init:")
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_is_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for status in items(pod, "/status/containerStatuses").iter().rev() {
            note_restarts(status, &mut restarts, &mut last_restart);
            let waiting_reason = text(status, "/state/waiting/reason");
            let terminated = status.pointer("/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(terminated) = terminated {
                reason = terminated_reason(terminated, "");
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && status.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_is_true(pod, "Ready") { "Running" } else { "NotReady" }.to_string();
        }
    }

    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if deleting && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_cell = match last_restart {
        Some(last) if restarts != 0 => {
            format!("{restarts} ({} ago)", crate::table::human_duration(now.duration_since(last)))
        }
        _ => restarts.to_string(),
    };

    let pod_ip = items(pod, "/status/podIPs")
        .first()
        .map(|ip| text(ip, "/ip"))
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| text(pod, "/status/podIP"));
    let gates = items(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = items(pod, "/status/conditions");
        let true_count = gates
            .iter()
            .filter(|gate| {
                conditions
                    .iter()
                    .find(|c| text(c, "/type") == text(gate, "/conditionType"))
                    .is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    vec![
        json!(name(pod)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        age(pod, now),
        json!(or_none(pod_ip)),
        json!(or_none(text(pod, "/spec/nodeName"))),
        json!(or_none(text(pod, "/status/nominatedNodeName"))),
        json!(readiness_gates),
    ]
}

// --- nodes ---

pub(super) const NODE_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Status", "string", "The status of the node"),
    Column::new("Roles", "string", "The roles of the node"),
    Column::age(),
    Column::new("Version", "string", "Kubelet Version reported by the node."),
    Column::new("Internal-IP", "string", "List of addresses reachable to the node.").wide(),
    Column::new("External-IP", "string", "List of addresses reachable to the node.").wide(),
    Column::new(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    )
    .wide(),
    Column::new(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    )
    .wide(),
    Column::new(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    )
    .wide(),
];

pub(super) fn node_address(node: &Value, kind: &str) -> String {
    items(node, "/status/addresses")
        .iter()
        .find(|a| text(a, "/type") == kind)
        .map_or_else(|| "<none>".to_string(), |a| text(a, "/address").to_string())
}

/// upstream `printNode`.
pub(super) fn node_cells(node: &Value, now: jiff::Timestamp) -> Vec<Value> {
    // The last Ready condition wins, as upstream builds a map by type.
    let mut status: Vec<String> = items(node, "/status/conditions")
        .iter()
        .rfind(|c| text(c, "/type") == "Ready")
        .map(|c| if text(c, "/status") == "True" { "Ready" } else { "NotReady" }.to_string())
        .into_iter()
        .collect();
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or("");
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if key == "kubernetes.io/role" && !value.is_empty() {
                roles.insert(value.to_string());
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let info = |key: &str| match text(node, &format!("/status/nodeInfo/{key}")) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        json!(name(node)),
        json!(status.join(",")),
        json!(or_none(&roles)),
        age(node, now),
        json!(text(node, "/status/nodeInfo/kubeletVersion")),
        json!(node_address(node, "InternalIP")),
        json!(node_address(node, "ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}
