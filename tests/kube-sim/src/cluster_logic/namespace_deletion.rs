//! The namespace controller's rules (`pkg/controller/namespace/deletion`): how long graceful
//! pods may take, what a collection left behind after its DELETE means, and the five
//! `NamespaceDeletion*`/`Namespace*Remaining` conditions with their upstream reasons and
//! messages.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::common::{format_time, parse_time};

/// The namespace's own finalizer, removed through `PUT .../finalize` once it is empty.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";
/// Assumed seconds for finalizers to finish (`finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// The condition types the controller maintains, in its order.
const CONDITION_TYPES: [(&str, &str, &str); 5] = [
    ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    ("NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
];

/// `estimateGracefulTerminationForPods` + the cut-off of `estimateGracefulTermination`: the
/// longest grace period of the non-terminal pods, 0 once the namespace has been deleting longer.
pub fn pod_estimate(pods: &[Value], namespace_deleted_at: &Value, now: Timestamp) -> i64 {
    let estimate = pods
        .iter()
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .filter_map(|p| p["spec"]["terminationGracePeriodSeconds"].as_i64())
        .max()
        .unwrap_or(0)
        .max(0);
    let elapsed = parse_time(namespace_deleted_at).map_or(0, |at| now.as_second() - at.as_second());
    if elapsed >= estimate { 0 } else { estimate }
}

/// What one resource left behind (`gvrDeletionMetadata`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Remaining {
    /// Seconds to wait before looking again (0: no estimate).
    pub estimate: i64,
    /// Objects still there.
    pub count: usize,
    /// Finalizer → objects holding it.
    pub finalizers: BTreeMap<String, usize>,
}

/// `GroupVersionResource.String()`: `apps/v1, Resource=deployments`, `/v1, Resource=pods`.
pub fn gvr_string(group: &str, version: &str, resource: &str) -> String {
    format!("{group}/{version}, Resource={resource}")
}

/// The verdict on the objects of one resource still listed after its collection DELETE: an
/// error when some remain with neither an estimate nor a finalizer to explain them.
pub fn remaining(namespace: &str, gvr: &str, items: &[Value], estimate: i64) -> (Remaining, Option<String>) {
    if items.is_empty() {
        return (Remaining::default(), None);
    }
    let mut finalizers = BTreeMap::new();
    for item in items {
        for f in item["metadata"]["finalizers"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            *finalizers.entry(f.to_string()).or_insert(0) += 1;
        }
    }
    let count = items.len();
    if estimate != 0 {
        return (Remaining { estimate, count, finalizers }, None);
    }
    if !finalizers.is_empty() {
        return (Remaining { estimate: FINALIZER_ESTIMATE_SECONDS, count, finalizers }, None);
    }
    let error = format!("unexpected items still remain in namespace: {namespace} for gvr: {gvr}");
    (Remaining { estimate, count, finalizers: BTreeMap::new() }, Some(error))
}

/// `namespaceConditionUpdater`: failures collected during one sync, then written over the five
/// conditions (the "ok" variant for every type without a failure).
#[derive(Debug, Default)]
pub struct ConditionUpdater {
    new: Vec<Value>,
    delete_errors: Vec<String>,
}

fn condition(condition_type: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": condition_type, "status": status, "reason": reason, "message": message})
}

impl ConditionUpdater {
    /// `ProcessDeleteContentErr`.
    pub fn delete_content_error(&mut self, error: String) {
        self.delete_errors.push(error);
    }

    /// `ProcessContentTotals`: `resources` maps `"<resource>.<group>"` to what is left.
    pub fn content_totals(
        &mut self,
        resources: &BTreeMap<String, usize>,
        finalizers: &BTreeMap<String, usize>,
    ) {
        let mut left: Vec<String> = resources
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| format!("{r} has {n} resource instances"))
            .collect();
        left.sort();
        if !resources.is_empty() {
            let message = format!("Some resources are remaining: {}", left.join(", "));
            self.new.push(condition("NamespaceContentRemaining", "True", "SomeResourcesRemain", &message));
        }
        let mut held: Vec<String> = finalizers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        held.sort();
        if !finalizers.is_empty() {
            let message =
                format!("Some content in the namespace has finalizers remaining: {}", held.join(", "));
            self.new.push(condition(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                &message,
            ));
        }
    }

    /// `Update` + `updateConditions`: sets the five conditions on `status`; true when it changed.
    /// A condition's transition time moves only when its status does.
    pub fn update(mut self, status: &mut Value, now: Timestamp) -> bool {
        if !self.delete_errors.is_empty()
            && !self.new.iter().any(|c| c["type"] == "NamespaceDeletionContentFailure")
        {
            let mut errors = self.delete_errors.clone();
            errors.sort();
            let message = format!(
                "Failed to delete all resource types, {} remaining: {}",
                errors.len(),
                errors.join(", ")
            );
            self.new.push(condition(
                "NamespaceDeletionContentFailure",
                "True",
                "ContentDeletionFailed",
                &message,
            ));
        }
        if !status.is_object() {
            *status = json!({});
        }
        if !status["conditions"].is_array() {
            status["conditions"] = json!([]);
        }
        let Some(conditions) = status["conditions"].as_array_mut() else { return false };
        let mut changed = false;
        for (condition_type, ok_reason, ok_message) in CONDITION_TYPES {
            let wanted = self
                .new
                .iter()
                .find(|c| c["type"] == condition_type)
                .cloned()
                .unwrap_or_else(|| condition(condition_type, "False", ok_reason, ok_message));
            match conditions.iter_mut().find(|c| c["type"] == condition_type) {
                None => {
                    let mut added = wanted;
                    added["lastTransitionTime"] = json!(format_time(now));
                    conditions.push(ordered(added));
                    changed = true;
                }
                Some(old) => {
                    let differs = ["status", "reason", "message"].iter().any(|f| old[f] != wanted[f]);
                    if differs {
                        if old["status"] != wanted["status"] {
                            old["lastTransitionTime"] = json!(format_time(now));
                        }
                        for f in ["status", "reason", "message"] {
                            old[f] = wanted[f].clone();
                        }
                        changed = true;
                    }
                }
            }
        }
        changed
    }
}

/// A condition with its fields in `NamespaceCondition`'s order (for readers of raw JSON).
fn ordered(c: Value) -> Value {
    let mut m = serde_json::Map::new();
    for f in ["type", "status", "lastTransitionTime", "reason", "message"] {
        if let Some(v) = c.get(f) {
            m.insert(f.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

/// `finalizeNamespace`: `spec.finalizers` without `kubernetes` (sorted, as the set it is built from).
pub fn finalized_spec_finalizers(namespace: &Value) -> Vec<Value> {
    let mut rest: Vec<String> = namespace["spec"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| *f != KUBERNETES_FINALIZER)
        .map(String::from)
        .collect();
    rest.sort();
    rest.dedup();
    rest.into_iter().map(Value::String).collect()
}

#[cfg(test)]
#[path = "namespace_deletion_tests.rs"]
mod tests;
