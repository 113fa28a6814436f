//! Workloads, PodDisruptionBudgets and HorizontalPodAutoscalers.

use serde_json::{Value, json};

use super::*;
use crate::table::Column;

// --- workloads ---

pub(super) const DEPLOYMENT_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Ready", "string", "Number of the pod with ready state"),
    Column::new("Up-to-date", "string", "Total number of non-terminating pods targeted by this deployment that have the desired template spec."),
    Column::new("Available", "string", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."),
    Column::age(),
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.").wide(),
];

/// `spec.replicas`, defaulted to 1 as the API server does.
pub(super) fn desired_replicas(object: &Value) -> i64 {
    object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

pub(super) fn deployment_cells(d: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let [containers, images] = containers_and_images(d, "/spec/template/spec/containers");
    vec![
        json!(name(d)),
        json!(format!("{}/{}", int(d, "/status/readyReplicas"), desired_replicas(d))),
        json!(int(d, "/status/updatedReplicas")),
        json!(int(d, "/status/availableReplicas")),
        age(d, now),
        containers,
        images,
        json!(selector_string(d, "/spec/selector")),
    ]
}

pub(super) const REPLICA_SET_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Desired", "integer", "Replicas is the number of desired pods."),
    Column::new(
        "Current",
        "integer",
        "Replicas is the most recently observed number of non-terminating pods.",
    ),
    Column::new(
        "Ready",
        "integer",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
    ),
    Column::age(),
    CONTAINERS,
    IMAGES,
    Column::new(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the replica count.",
    )
    .wide(),
];

pub(super) fn replica_set_cells(rs: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let [containers, images] = containers_and_images(rs, "/spec/template/spec/containers");
    vec![
        json!(name(rs)),
        json!(desired_replicas(rs)),
        json!(int(rs, "/status/replicas")),
        json!(int(rs, "/status/readyReplicas")),
        age(rs, now),
        containers,
        images,
        json!(selector_string(rs, "/spec/selector")),
    ]
}

pub(super) const DAEMON_SET_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    Column::new(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    Column::new(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
    ),
    Column::new("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    Column::new(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    Column::new(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    Column::age(),
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", "A label query over pods that are managed by the daemon set.").wide(),
];

pub(super) fn daemon_set_cells(ds: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let [containers, images] = containers_and_images(ds, "/spec/template/spec/containers");
    vec![
        json!(name(ds)),
        json!(int(ds, "/status/desiredNumberScheduled")),
        json!(int(ds, "/status/currentNumberScheduled")),
        json!(int(ds, "/status/numberReady")),
        json!(int(ds, "/status/updatedNumberScheduled")),
        json!(int(ds, "/status/numberAvailable")),
        json!(format_labels(ds.pointer("/spec/template/spec/nodeSelector"))),
        age(ds, now),
        containers,
        images,
        json!(selector_string(ds, "/spec/selector")),
    ]
}

pub(super) const STATEFUL_SET_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Ready", "string", "Number of the pod with ready state"),
    Column::age(),
    CONTAINERS,
    IMAGES,
];

pub(super) fn stateful_set_cells(ss: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let [containers, images] = containers_and_images(ss, "/spec/template/spec/containers");
    vec![
        json!(name(ss)),
        json!(format!("{}/{}", int(ss, "/status/readyReplicas"), desired_replicas(ss))),
        age(ss, now),
        containers,
        images,
    ]
}

pub(super) const PDB_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Min Available", "string", "The minimum number of pods that must be available."),
    Column::new("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    Column::age(),
];

/// An IntOrString as text (`1`, `50%`), `N/A` when unset.
pub(super) fn int_or_string(object: &Value, pointer: &str) -> String {
    match object.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_string(),
    }
}

pub(super) fn pdb_cells(pdb: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        json!(name(pdb)),
        json!(int_or_string(pdb, "/spec/minAvailable")),
        json!(int_or_string(pdb, "/spec/maxUnavailable")),
        json!(int(pdb, "/status/disruptionsAllowed")),
        age(pdb, now),
    ]
}

pub(super) const HPA_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new(
        "Reference",
        "string",
        "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
    ),
    Column::new(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
    ),
    Column::new(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
    ),
    Column::new(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
    ),
    Column::new(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
    ),
    Column::age(),
];

/// upstream `formatHPAMetrics`, for Resource metrics (and autoscaling/v1's CPU target).
pub(super) fn hpa_targets(hpa: &Value) -> String {
    if let Some(target) = hpa.pointer("/spec/targetCPUUtilizationPercentage").and_then(Value::as_i64) {
        let current = hpa
            .pointer("/status/currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map_or_else(|| "<unknown>".to_string(), |c| format!("{c}%"));
        return format!("cpu: {current}/{target}%");
    }
    let specs = items(hpa, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = items(hpa, "/status/currentMetrics");
    let quantity = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let unknown = || "<unknown>".to_string();
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            // Statuses are matched by position, as upstream does.
            let status_of = |key: &str| statuses.get(i).and_then(|s| s.get(key));
            match text(spec, "/type") {
                source @ ("Resource" | "ContainerResource") => {
                    let key = if source == "Resource" { "resource" } else { "containerResource" };
                    let metric = spec.get(key).unwrap_or(&Value::Null);
                    let status = status_of(key);
                    let resource = text(metric, "/name");
                    if let Some(target) = quantity(metric.pointer("/target/averageValue")) {
                        let current = quantity(status.and_then(|s| s.pointer("/current/averageValue")))
                            .unwrap_or_else(unknown);
                        format!("{resource}: {current}/{target}")
                    } else {
                        let current = status
                            .and_then(|s| s.pointer("/current/averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |c| format!("{c}%"));
                        let target = metric
                            .pointer("/target/averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or_else(|| "<auto>".to_string(), |t| format!("{t}%"));
                        format!("{resource}: {current}/{target}")
                    }
                }
                "Pods" => {
                    let current =
                        quantity(status_of("pods").and_then(|s| s.pointer("/current/averageValue")))
                            .unwrap_or_else(unknown);
                    let target = quantity(spec.pointer("/pods/target/averageValue")).unwrap_or_default();
                    format!("{current}/{target}")
                }
                source @ ("Object" | "External") => {
                    let key = if source == "Object" { "object" } else { "external" };
                    let status = status_of(key);
                    if let Some(target) = quantity(spec.pointer(&format!("/{key}/target/averageValue"))) {
                        let current = quantity(status.and_then(|s| s.pointer("/current/averageValue")))
                            .unwrap_or_else(unknown);
                        format!("{current}/{target} (avg)")
                    } else {
                        let current = quantity(status.and_then(|s| s.pointer("/current/value")))
                            .unwrap_or_else(unknown);
                        let target =
                            quantity(spec.pointer(&format!("/{key}/target/value"))).unwrap_or_default();
                        format!("{current}/{target}")
                    }
                }
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    if list.len() > 2 {
        format!("{} + {} more...", list[..2].join(", "), list.len() - 2)
    } else {
        list.join(", ")
    }
}

pub(super) fn hpa_cells(hpa: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let min_pods = hpa
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
    vec![
        json!(name(hpa)),
        json!(format!(
            "{}/{}",
            text(hpa, "/spec/scaleTargetRef/kind"),
            text(hpa, "/spec/scaleTargetRef/name")
        )),
        json!(hpa_targets(hpa)),
        json!(min_pods),
        json!(int(hpa, "/spec/maxReplicas")),
        json!(int(hpa, "/status/currentReplicas")),
        age(hpa, now),
    ]
}
