//! The DaemonSet controller's decisions: one pod per eligible node (node affinity on the
//! node name, upstream's default tolerations, so cordoned nodes keep their daemon pods), the
//! pods to create or delete, and the status.

use serde_json::{Value, json};

use super::common::{name_of, namespace_of, parse_time, pod_is_ready, pod_phase, uid_of};
use super::replicaset::{is_controlled_by, is_pod_active};
use super::scheduler::{UNSCHEDULABLE_TAINT_KEY, required_node_affinity_matches, toleration_tolerates};

/// upstream `AddOrUpdateDaemonPodTolerations` (without the hostNetwork-only one).
pub fn daemon_tolerations() -> Vec<Value> {
    let tolerate = |key: &str, effect: &str| json!({"key": key, "operator": "Exists", "effect": effect});
    vec![
        tolerate("node.kubernetes.io/not-ready", "NoExecute"),
        tolerate("node.kubernetes.io/unreachable", "NoExecute"),
        tolerate("node.kubernetes.io/disk-pressure", "NoSchedule"),
        tolerate("node.kubernetes.io/memory-pressure", "NoSchedule"),
        tolerate("node.kubernetes.io/pid-pressure", "NoSchedule"),
        tolerate(UNSCHEDULABLE_TAINT_KEY, "NoSchedule"),
    ]
}

/// The daemon pod for `node_name` (to POST with `generateName`): the template with the
/// default tolerations and a required node affinity on `metadata.name`.
pub fn daemon_pod(ds: &Value, node_name: &str) -> Value {
    let template = ds.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
    let mut metadata =
        template.get("metadata").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    metadata["generateName"] = json!(format!("{}-", name_of(ds)));
    metadata["namespace"] = json!(namespace_of(ds));
    metadata["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name_of(ds),
        "uid": uid_of(ds), "controller": true, "blockOwnerDeletion": true}]);
    if let Some(m) = metadata.as_object_mut() {
        m.remove("creationTimestamp");
    }
    let mut spec = template.get("spec").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let mut tolerations = spec.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    for toleration in daemon_tolerations() {
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    spec["tolerations"] = Value::Array(tolerations);
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]});
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// Whether the DaemonSet should run a pod on `node` (upstream `NodeShouldRunDaemonPod`):
/// the template's nodeSelector/affinity match and every NoSchedule/NoExecute taint is
/// tolerated by the template's tolerations plus the defaults.
pub fn should_run_on(ds: &Value, node: &Value) -> bool {
    let pod = daemon_pod(ds, name_of(node));
    if let Some(selector) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        let labels = node.pointer("/metadata/labels");
        if selector.iter().any(|(k, v)| labels.and_then(|l| l.get(k)) != Some(v)) {
            return false;
        }
    }
    // The template has the pod's shape (`spec.affinity`), so it can be matched directly.
    let template = ds.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
    let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let taints = node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    required_node_affinity_matches(&template, node)
        && taints
            .iter()
            .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
            .all(|t| tolerations.iter().any(|x| toleration_tolerates(x, t)))
}

/// The node a daemon pod is for: `spec.nodeName`, else its `metadata.name` affinity.
pub fn target_node(pod: &Value) -> Option<String> {
    if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        return Some(node.to_string());
    }
    let terms = pod
        .pointer(
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
        )
        .and_then(Value::as_array)?;
    terms.iter().flat_map(|t| t.get("matchFields").and_then(Value::as_array).into_iter().flatten()).find_map(
        |f| {
            (f["key"] == "metadata.name" && f["operator"] == "In")
                .then(|| f.pointer("/values/0").and_then(Value::as_str))?
                .map(String::from)
        },
    )
}

/// What one DaemonSet sync does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DaemonSetPlan {
    /// Nodes that need a daemon pod ([`daemon_pod`]).
    pub create_on: Vec<String>,
    /// Pods to delete: on nodes that should not run one, extras (the oldest is kept), failed ones.
    pub delete: Vec<String>,
    /// The DaemonSet's new `status`.
    pub status: Value,
}

/// One `syncDaemonSet` pass over all `nodes` and the namespace's `pods`.
pub fn sync_daemon_set(ds: &Value, nodes: &[Value], pods: &[Value]) -> DaemonSetPlan {
    let owned: Vec<&Value> = pods.iter().filter(|p| is_controlled_by(p, ds)).collect();
    let mut plan = DaemonSetPlan::default();
    let (mut desired, mut scheduled, mut misscheduled, mut ready) = (0, 0, 0, 0);
    for node in nodes {
        let node_name = name_of(node);
        let mut here: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|p| target_node(p).as_deref() == Some(node_name) && is_pod_active(p))
            .collect();
        plan.delete.extend(
            owned
                .iter()
                .filter(|p| target_node(p).as_deref() == Some(node_name) && pod_phase(p) == "Failed")
                .map(|p| name_of(p).to_string()),
        );
        if should_run_on(ds, node) {
            desired += 1;
            if here.is_empty() {
                plan.create_on.push(node_name.to_string());
                continue;
            }
            scheduled += 1;
            // Keep the oldest pod (running ones first), as upstream.
            here.sort_by_key(|p| {
                (
                    pod_phase(p) != "Running",
                    p.pointer("/metadata/creationTimestamp").and_then(parse_time),
                    name_of(p).to_string(),
                )
            });
            if pod_is_ready(here[0]) {
                ready += 1;
            }
            plan.delete.extend(here.iter().skip(1).map(|p| name_of(p).to_string()));
        } else if !here.is_empty() {
            misscheduled += 1;
            plan.delete.extend(here.iter().map(|p| name_of(p).to_string()));
        }
    }
    plan.status = json!({"desiredNumberScheduled": desired, "currentNumberScheduled": scheduled,
        "numberMisscheduled": misscheduled, "numberReady": ready, "numberAvailable": ready,
        "numberUnavailable": desired - ready, "updatedNumberScheduled": scheduled,
        "observedGeneration": ds.pointer("/metadata/generation").cloned().unwrap_or(json!(0))});
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds-uid", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent"}]}}}})
    }

    fn node(name: &str, taints: Value, unschedulable: bool) -> Value {
        json!({"metadata": {"name": name}, "spec": {"taints": taints, "unschedulable": unschedulable}})
    }

    fn daemon(name: &str, node: &str, created: &str, ready: bool) -> Value {
        let mut pod = daemon_pod(&ds(), node);
        pod["metadata"]["name"] = json!(name);
        pod["metadata"]["creationTimestamp"] = json!(created);
        pod["spec"]["nodeName"] = json!(node);
        pod["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]});
        pod
    }

    #[test]
    fn one_pod_per_eligible_node_including_cordoned_ones() {
        let cordoned =
            node("node-2", json!([{"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}]), true);
        let tainted =
            node("node-3", json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]), false);
        let nodes = [node("node-1", json!([]), false), cordoned, tainted];
        let pods = [
            daemon("a1", "node-1", "2026-01-01T00:00:00Z", true),
            daemon("a2", "node-1", "2026-01-01T01:00:00Z", true),
            daemon("a3", "node-3", "2026-01-01T00:00:00Z", true),
        ];
        let plan = sync_daemon_set(&ds(), &nodes, &pods);
        assert_eq!(plan.create_on, vec!["node-2".to_string()]);
        assert_eq!(plan.delete, vec!["a2".to_string(), "a3".to_string()]);
        assert_eq!(plan.status["desiredNumberScheduled"], 2);
        assert_eq!(plan.status["currentNumberScheduled"], 1);
        assert_eq!(plan.status["numberMisscheduled"], 1);
        assert_eq!(plan.status["numberReady"], 1);
    }

    #[test]
    fn daemon_pods_carry_tolerations_and_a_node_name_affinity() {
        let pod = daemon_pod(&ds(), "node-7");
        assert_eq!(target_node(&pod).as_deref(), Some("node-7"));
        assert_eq!(pod["metadata"]["generateName"], "agent-");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        let tolerations = pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
        assert!(tolerations.iter().any(|t| t["key"] == UNSCHEDULABLE_TAINT_KEY));
        assert!(required_node_affinity_matches(&pod, &node("node-7", json!([]), false)));
        assert!(!required_node_affinity_matches(&pod, &node("node-8", json!([]), false)));
    }
}
