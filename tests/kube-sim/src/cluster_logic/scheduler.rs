//! The scheduler's node fit and choice (filters in kube-scheduler's default order:
//! NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required node affinity),
//! NodeResourcesFit
//! (pod count only)), the upstream `FailedScheduling` message, and the node lifecycle
//! controller's cordon taint (k8s-semantics §6.1).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::common::{format_time, name_of, pod_phase};

/// The taint the node lifecycle controller keeps on cordoned nodes.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// Why a node does not fit, in upstream's wording (the `FailedScheduling` histogram keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Misfit {
    /// NodeUnschedulable: `spec.unschedulable` and no toleration of the cordon taint.
    Unschedulable,
    /// TaintToleration: a NoSchedule/NoExecute taint not tolerated.
    UntoleratedTaint,
    /// NodeAffinity: `spec.nodeSelector` does not match the node's labels.
    NodeSelector,
    /// NodeResourcesFit: the node already holds its allowed pod count.
    TooManyPods,
}

impl Misfit {
    /// The reason text (v1.35: taint keys/values are no longer shown, PR #134740).
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unschedulable => "node(s) were unschedulable",
            Self::UntoleratedTaint => "node(s) had untolerated taint(s)",
            Self::NodeSelector => "node(s) didn't match Pod's node affinity/selector",
            Self::TooManyPods => "Too many pods",
        }
    }
    /// Whether preemption could help (only resource misfits are resolvable).
    fn preemption_reason(self) -> &'static str {
        match self {
            Self::TooManyPods => "No preemption victims found for incoming pod",
            _ => "Preemption is not helpful for scheduling",
        }
    }
}

/// upstream `Toleration.ToleratesTaint`: effect (empty = all), key (empty = all, only with
/// `Exists`), operator `Equal` (default, values equal) or `Exists`.
pub fn toleration_tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let effect = field(toleration, "effect");
    if !effect.is_empty() && effect != field(taint, "effect") {
        return false;
    }
    let key = field(toleration, "key");
    if !key.is_empty() && key != field(taint, "key") {
        return false;
    }
    match field(toleration, "operator").as_str() {
        "" | "Equal" => field(toleration, "value") == field(taint, "value"),
        "Exists" => true,
        _ => false,
    }
}

fn tolerations(pod: &Value) -> &[Value] {
    pod.pointer("/spec/tolerations").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// True when some toleration of `pod` tolerates `taint`.
pub fn pod_tolerates(pod: &Value, taint: &Value) -> bool {
    tolerations(pod).iter().any(|t| toleration_tolerates(t, taint))
}

/// The node's allowed pod count: `status.allocatable.pods` (an integer quantity), else `default`.
pub fn pod_capacity(node: &Value, default: usize) -> usize {
    node.pointer("/status/allocatable/pods")
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64().map(|n| n as usize)))
        .unwrap_or(default)
}

/// Pods that occupy a slot on `node_name`: bound there and not Succeeded/Failed (the
/// scheduler's informer ignores terminal pods; terminating pods still count).
pub fn pods_on_node<'a>(pods: &'a [Value], node_name: &str) -> impl Iterator<Item = &'a Value> + 'a {
    let node_name = node_name.to_string();
    pods.iter().filter(move |p| {
        p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node_name.as_str())
            && !matches!(pod_phase(p), "Succeeded" | "Failed")
    })
}

/// Runs the filters for one node; `occupied` is the node's current pod count.
pub fn node_fit(pod: &Value, node: &Value, occupied: usize, default_capacity: usize) -> Result<(), Misfit> {
    if node.pointer("/spec/unschedulable") == Some(&Value::Bool(true))
        && !pod_tolerates(pod, &json!({"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}))
    {
        return Err(Misfit::Unschedulable);
    }
    let taints = node.pointer("/spec/taints").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if taints
        .iter()
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .any(|t| !pod_tolerates(pod, t))
    {
        return Err(Misfit::UntoleratedTaint);
    }
    if let Some(selector) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        let labels = node.pointer("/metadata/labels");
        if selector.iter().any(|(k, v)| labels.and_then(|l| l.get(k)) != Some(v)) {
            return Err(Misfit::NodeSelector);
        }
    }
    if !required_node_affinity_matches(pod, node) {
        return Err(Misfit::NodeSelector);
    }
    if occupied >= pod_capacity(node, default_capacity) {
        return Err(Misfit::TooManyPods);
    }
    Ok(())
}

/// One `NodeSelectorRequirement` against a value (`None` = label absent).
fn requirement_matches(requirement: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = requirement
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let number = |s: &str| s.parse::<i64>().ok();
    match requirement.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => !value.is_some_and(|v| values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// `requiredDuringSchedulingIgnoredDuringExecution`: terms are ORed; within a term every
/// `matchExpressions` (node labels) and `matchFields` (`metadata.name`) requirement must hold.
/// An empty term list matches nothing, as upstream; no required affinity matches everything.
pub fn required_node_affinity_matches(pod: &Value, node: &Value) -> bool {
    let Some(terms) = pod
        .pointer(
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
        )
        .and_then(Value::as_array)
    else {
        return true;
    };
    let label = |key: &str| node.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str);
    terms.iter().any(|term| {
        let list = |f: &str| term.get(f).and_then(Value::as_array).cloned().unwrap_or_default();
        let (expressions, fields) = (list("matchExpressions"), list("matchFields"));
        (!expressions.is_empty() || !fields.is_empty())
            && expressions.iter().all(|r| requirement_matches(r, label(r["key"].as_str().unwrap_or(""))))
            && fields.iter().all(|r| {
                let value = (r["key"] == "metadata.name").then(|| name_of(node));
                requirement_matches(r, value)
            })
    })
}

/// The scheduling decision for one pod.
#[derive(Clone, Debug, PartialEq)]
pub enum Scheduling {
    /// Bind to this node.
    Bind(String),
    /// No node fits: leave the pod Pending with `PodScheduled=False/Unschedulable` and this message.
    Unschedulable(String),
}

/// Picks a node for `pod` among `nodes`, given all bound `pods`: the fitting node with the
/// fewest pods, ties broken by node name.
pub fn schedule(pod: &Value, nodes: &[Value], pods: &[Value], default_capacity: usize) -> Scheduling {
    if nodes.is_empty() {
        return Scheduling::Unschedulable("no nodes available to schedule pods".into());
    }
    let mut misfits = Vec::new();
    let mut best: Option<(usize, &str)> = None;
    for node in nodes {
        let occupied = pods_on_node(pods, name_of(node)).count();
        match node_fit(pod, node, occupied, default_capacity) {
            Ok(()) => {
                let candidate = (occupied, name_of(node));
                if best.is_none_or(|b| candidate < b) {
                    best = Some(candidate);
                }
            }
            Err(misfit) => misfits.push(misfit),
        }
    }
    match best {
        Some((_, node)) => Scheduling::Bind(node.to_string()),
        None => Scheduling::Unschedulable(fit_error_message(nodes.len(), &misfits)),
    }
}

/// upstream `FitError.Error()` with the PostFilter messages of DynamicResources and DefaultPreemption
/// (v1.35): `0/N nodes are available: <count reason, ...>. no new claims to deallocate,
/// preemption: 0/N nodes are available: <...>.`
/// Reasons are `"<count> <reason>"` strings sorted as strings, as upstream.
pub fn fit_error_message(node_count: usize, misfits: &[Misfit]) -> String {
    let histogram = |reason: fn(Misfit) -> &'static str| {
        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        for misfit in misfits {
            match counts.iter_mut().find(|(r, _)| *r == reason(*misfit)) {
                Some((_, n)) => *n += 1,
                None => counts.push((reason(*misfit), 1)),
            }
        }
        let mut lines: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        lines.sort();
        lines.join(", ")
    };
    format!(
        "0/{node_count} nodes are available: {}. no new claims to deallocate, preemption: 0/{node_count} nodes are available: {}.",
        histogram(Misfit::reason),
        histogram(Misfit::preemption_reason)
    )
}

/// The pod condition to set: `PodScheduled=True` on bind, `False/Unschedulable` otherwise,
/// which v1.35's scheduler marks with the pod's `generation` (the bind leaves it out).
pub fn pod_scheduled_condition(scheduling: &Scheduling, generation: i64, now: Timestamp) -> Value {
    match scheduling {
        Scheduling::Bind(_) => {
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": format_time(now)})
        }
        Scheduling::Unschedulable(message) => json!({"type": "PodScheduled", "status": "False",
            "observedGeneration": generation, "lastProbeTime": null, "lastTransitionTime": format_time(now),
            "reason": "Unschedulable", "message": message}),
    }
}

/// Node lifecycle controller: the node's new `spec.taints` if the cordon taint must be added
/// (`spec.unschedulable: true`) or removed (otherwise); `None` when already in line.
pub fn reconcile_cordon_taint(node: &Value, now: Timestamp) -> Option<Vec<Value>> {
    let cordoned = node.pointer("/spec/unschedulable") == Some(&Value::Bool(true));
    let taints = node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    let is_cordon = |t: &Value| t["key"] == UNSCHEDULABLE_TAINT_KEY && t["effect"] == "NoSchedule";
    let present = taints.iter().any(is_cordon);
    match (cordoned, present) {
        (true, false) => {
            let mut taints = taints;
            taints.push(json!({"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule", "timeAdded": format_time(now)}));
            Some(taints)
        }
        (false, true) => Some(taints.into_iter().filter(|t| !is_cordon(t)).collect()),
        _ => None,
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
