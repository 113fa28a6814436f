//! Per-resource columns and cells, after upstream pkg/printers/internalversion/printers.go.
//! Descriptions taken from Go doc comments (`SwaggerDoc()`) are abbreviated; kubectl does not
//! show them.

use serde_json::{Value, json};

use super::Column;
use super::duration::since;

mod apps;
mod core;
mod pods;

use crate::selector::LabelSelector;
use apps::*;
use core::*;
use pods::*;

type Cells = fn(&Value, jiff::Timestamp) -> Vec<Value>;
type Conditions = fn(&Value) -> Option<Value>;

pub(crate) struct Printer {
    pub columns: &'static [Column],
    pub cells: Cells,
    pub conditions: Conditions,
}

fn no_conditions(_: &Value) -> Option<Value> {
    None
}

pub(crate) fn for_resource(group: &str, plural: &str) -> Printer {
    let (columns, cells, conditions): (&'static [Column], Cells, Conditions) = match (group, plural) {
        ("", "pods") => (POD_COLUMNS, pod_cells, pod_conditions),
        ("", "nodes") => (NODE_COLUMNS, node_cells, no_conditions),
        ("", "namespaces") => (NAMESPACE_COLUMNS, namespace_cells, no_conditions),
        ("", "services") => (SERVICE_COLUMNS, service_cells, no_conditions),
        ("", "configmaps") => (CONFIG_MAP_COLUMNS, config_map_cells, no_conditions),
        ("", "secrets") => (SECRET_COLUMNS, secret_cells, no_conditions),
        ("", "serviceaccounts") => (SERVICE_ACCOUNT_COLUMNS, service_account_cells, no_conditions),
        ("" | "events.k8s.io", "events") => (EVENT_COLUMNS, event_cells, no_conditions),
        ("apps", "deployments") => (DEPLOYMENT_COLUMNS, deployment_cells, no_conditions),
        ("apps", "replicasets") => (REPLICA_SET_COLUMNS, replica_set_cells, no_conditions),
        ("apps", "daemonsets") => (DAEMON_SET_COLUMNS, daemon_set_cells, no_conditions),
        ("apps", "statefulsets") => (STATEFUL_SET_COLUMNS, stateful_set_cells, no_conditions),
        ("policy", "poddisruptionbudgets") => (PDB_COLUMNS, pdb_cells, no_conditions),
        ("coordination.k8s.io", "leases") => (LEASE_COLUMNS, lease_cells, no_conditions),
        ("autoscaling", "horizontalpodautoscalers") => (HPA_COLUMNS, hpa_cells, no_conditions),
        // CRDs have no printer upstream: the default table convertor (Name, Created At).
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            (DEFAULT_COLUMNS, default_cells, no_conditions)
        }
        _ => (NAME_AGE_COLUMNS, name_age_cells, no_conditions),
    };
    Printer { columns, cells, conditions }
}

// --- helpers ---

pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(crate) fn name(object: &Value) -> &str {
    text(object, "/metadata/name")
}

pub(super) fn age(object: &Value, now: jiff::Timestamp) -> Value {
    json!(since(object.pointer("/metadata/creationTimestamp"), now))
}

pub(super) fn or_none(s: &str) -> String {
    if s.is_empty() { "<none>".to_string() } else { s.to_string() }
}

/// upstream `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty.
pub(super) fn format_labels(map: Option<&Value>) -> String {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") }
}

/// The `metav1.LabelSelector` at `pointer` in query syntax; `<invalid>` if it does not parse.
pub(super) fn selector_string(object: &Value, pointer: &str) -> String {
    match LabelSelector::from_api(object.pointer(pointer).unwrap_or(&Value::Null)) {
        Ok(selector) => selector.to_string(),
        Err(_) => "<invalid>".to_string(),
    }
}

/// upstream `layoutContainerCells`: comma-joined container names and images.
pub(super) fn containers_and_images(object: &Value, pointer: &str) -> [Value; 2] {
    let containers = items(object, pointer);
    let join = |key: &str| {
        containers
            .iter()
            .map(|c| c.get(key).and_then(Value::as_str).unwrap_or(""))
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(join("name")), json!(join("image"))]
}

pub(super) const CONTAINERS: Column =
    Column::new("Containers", "string", "Names of each container in the template.").wide();
pub(super) const IMAGES: Column =
    Column::new("Images", "string", "Images referenced by each container in the template.").wide();

// --- fallbacks ---

const DEFAULT_COLUMNS: &[Column] =
    &[Column::name(), Column::new("Created At", "date", super::AGE_DESCRIPTION)];

/// upstream `defaultTableConvertor`: the creation time in RFC 3339.
fn default_cells(object: &Value, _now: jiff::Timestamp) -> Vec<Value> {
    let created = object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    vec![json!(name(object)), json!(created)]
}

const NAME_AGE_COLUMNS: &[Column] = &[Column::name(), Column::age()];

fn name_age_cells(object: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![json!(name(object)), age(object, now)]
}
