//! Namespaces, services, config maps, secrets, events and leases.

use serde_json::{Value, json};

use super::*;
use crate::table::Column;
use crate::table::duration::since;

// --- core objects ---

pub(super) const NAMESPACE_COLUMNS: &[Column] =
    &[Column::name(), Column::new("Status", "string", "The status of the namespace"), Column::age()];

pub(super) fn namespace_cells(ns: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![json!(name(ns)), json!(text(ns, "/status/phase")), age(ns, now)]
}

pub(super) const SERVICE_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Type", "string", "type determines how the Service is exposed."),
    Column::new(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    Column::new(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    Column::new("Port(s)", "string", "The list of ports that are exposed by this service."),
    Column::age(),
    Column::new(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    )
    .wide(),
];

pub(super) fn service_external_ip(svc: &Value) -> String {
    let external: Vec<&str> = items(svc, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    match text(svc, "/spec/type") {
        "ClusterIP" | "NodePort" | "" => {
            if external.is_empty() {
                "<none>".to_string()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let mut all: Vec<&str> = items(svc, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| [text(i, "/ip"), text(i, "/hostname")].into_iter().find(|s| !s.is_empty()))
                .collect();
            all.extend(external);
            if all.is_empty() { "<pending>".to_string() } else { all.join(",") }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

pub(super) fn service_cells(svc: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let cluster_ip = items(svc, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(svc, "/spec/clusterIP"));
    let ports: Vec<String> = items(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, "/port"), text(p, "/protocol"));
            match int(p, "/nodePort") {
                node_port if node_port > 0 => format!("{port}:{node_port}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let service_type = match text(svc, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    vec![
        json!(name(svc)),
        json!(service_type),
        json!(or_none(cluster_ip)),
        json!(service_external_ip(svc)),
        json!(or_none(&ports.join(","))),
        age(svc, now),
        json!(format_labels(svc.pointer("/spec/selector"))),
    ]
}

pub(super) const CONFIG_MAP_COLUMNS: &[Column] =
    &[Column::name(), Column::new("Data", "string", "Data contains the configuration data."), Column::age()];

pub(super) fn map_len(object: &Value, pointer: &str) -> usize {
    object.pointer(pointer).and_then(Value::as_object).map_or(0, serde_json::Map::len)
}

pub(super) fn config_map_cells(cm: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let entries = map_len(cm, "/data") + map_len(cm, "/binaryData");
    vec![json!(name(cm)), json!(entries), age(cm, now)]
}

pub(super) const SECRET_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Type", "string", "Used to facilitate programmatic handling of secret data."),
    Column::new("Data", "string", "Data contains the secret data."),
    Column::age(),
];

pub(super) fn secret_cells(secret: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![json!(name(secret)), json!(text(secret, "/type")), json!(map_len(secret, "/data")), age(secret, now)]
}

pub(super) const EVENT_COLUMNS: &[Column] = &[
    Column::new("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    Column::new("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    Column::new("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    Column::new("Object", "string", "The object that this event is about."),
    Column::new("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.").wide(),
    Column::new("Source", "string", "The component reporting this event. Should be a short machine understandable string.").wide(),
    Column::new("Message", "string", "A human-readable description of the status of this operation."),
    Column::new("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)").wide(),
    Column::new("Count", "string", "The number of times this event has occurred.").wide(),
    Column {
        priority: 1,
        ..Column::name()
    },
];

/// upstream `printEvent`; events.k8s.io objects are read through their core/v1 field names'
/// counterparts (`regarding`, `note`, `deprecated*`).
pub(super) fn event_cells(event: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let first_present = |pointers: &[&str]| {
        pointers.iter().filter_map(|p| event.pointer(p)).find(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    };
    let first_seen = match first_present(&["/firstTimestamp", "/deprecatedFirstTimestamp"]) {
        Some(t) => since(Some(t), now),
        None => since(event.get("eventTime"), now),
    };
    let mut last_seen = match first_present(&["/lastTimestamp", "/deprecatedLastTimestamp"]) {
        Some(t) => since(Some(t), now),
        None => first_seen.clone(),
    };
    let mut count =
        event.get("count").or_else(|| event.get("deprecatedCount")).and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = event.get("series").filter(|s| s.is_object()) {
        last_seen = since(series.get("lastObservedTime"), now);
        count = int(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let involved = event.get("involvedObject").or_else(|| event.get("regarding")).unwrap_or(&Value::Null);
    let kind = text(involved, "/kind").to_lowercase();
    let target = match text(involved, "/name") {
        "" => kind,
        object_name => format!("{kind}/{object_name}"),
    };
    let pick = |a: &str, b: &str| match text(event, a) {
        "" => text(event, b).to_string(),
        v => v.to_string(),
    };
    let component = match pick("/source/component", "/reportingController") {
        c if c.is_empty() => pick("/deprecatedSource/component", "/reportingController"),
        c => c,
    };
    let host = pick("/source/host", "/reportingInstance");
    let source = if host.is_empty() { component } else { format!("{component}, {host}") };
    let message = pick("/message", "/note");
    vec![
        json!(last_seen),
        json!(text(event, "/type")),
        json!(text(event, "/reason")),
        json!(target),
        json!(text(involved, "/fieldPath")),
        json!(source),
        json!(message.trim()),
        json!(first_seen),
        json!(count),
        json!(name(event)),
    ]
}

pub(super) const LEASE_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    Column::age(),
];

pub(super) fn lease_cells(lease: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![json!(name(lease)), json!(text(lease, "/spec/holderIdentity")), age(lease, now)]
}

pub(super) const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    Column::age(),
];

pub(super) fn service_account_cells(sa: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![json!(name(sa)), json!(items(sa, "/secrets").len()), age(sa, now)]
}
