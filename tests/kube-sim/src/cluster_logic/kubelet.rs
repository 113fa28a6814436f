//! A fake kubelet's decisions: a bound pod becomes Running, then Ready after a delay; a test
//! can hold a pod unready with an annotation; a terminating pod is removed once its (scaled)
//! grace period has passed.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::common::{
    add_seconds, find_condition, format_time, int_at, is_terminating, parse_time, pod_phase,
};

/// Set to `"true"` on a pod to keep (or make) it unready.
pub const UNREADY_ANNOTATION: &str = "kube-sim.dev/unready";

/// What the kubelet does with a pod now.
#[derive(Clone, Debug, PartialEq)]
pub enum KubeletAction {
    /// Nothing now; look again at this time (None: only on the next pod change).
    Wait(Option<Timestamp>),
    /// Write this `status` through `/status`.
    UpdateStatus(Value),
    /// The grace period is over: delete the pod with grace 0.
    Remove,
}

fn condition(kind: &str, status: bool, since: &str) -> Value {
    json!({"type": kind, "status": if status { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": since})
}

/// The pod's status as the kubelet reports it, `ready` or not, keeping transition times of
/// unchanged conditions and other conditions (PodScheduled, DisruptionTarget).
fn running_status(pod: &Value, ready: bool, now: Timestamp) -> Value {
    let now_text = format_time(now);
    let started = pod.pointer("/status/startTime").and_then(Value::as_str).unwrap_or(&now_text).to_string();
    let others: Vec<Value> = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            !matches!(
                c["type"].as_str(),
                Some("PodReadyToStartContainers" | "Initialized" | "Ready" | "ContainersReady")
            )
        })
        .collect();
    let keep_time = |kind: &str, status: bool| {
        find_condition(pod, kind)
            .filter(|c| c["status"] == if status { "True" } else { "False" })
            .and_then(|c| c["lastTransitionTime"].as_str().map(String::from))
            .unwrap_or_else(|| now_text.clone())
    };
    // The kubelet's own conditions first, then the others (PodScheduled, ...), as a kubelet
    // writes them.
    let mut conditions: Vec<Value> = [
        ("PodReadyToStartContainers", true),
        ("Initialized", true),
        ("Ready", ready),
        ("ContainersReady", ready),
    ]
    .into_iter()
    .map(|(kind, status)| condition(kind, status, &keep_time(kind, status)))
    .collect();
    conditions.extend(others);
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": ready, "started": true,
                "restartCount": 0, "state": {"running": {"startedAt": started}}, "lastState": {}})
        })
        .collect();
    let mut status = pod.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    status["phase"] = json!("Running");
    status["startTime"] = json!(started);
    status["conditions"] = Value::Array(conditions);
    status["containerStatuses"] = Value::Array(statuses);
    status["qosClass"] = status.get("qosClass").cloned().unwrap_or_else(|| json!("BestEffort"));
    status
}

/// One look at `pod` on its node. `ready_delay_seconds` is the time from start to Ready;
/// `grace_scale` shrinks termination grace periods for tests (1.0 = real time).
pub fn kubelet_step(
    pod: &Value,
    ready_delay_seconds: i64,
    grace_scale: f64,
    now: Timestamp,
) -> KubeletAction {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        return KubeletAction::Wait(None);
    }
    if is_terminating(pod) {
        let grace = int_at(pod, "/metadata/deletionGracePeriodSeconds", 0);
        let deadline = pod.pointer("/metadata/deletionTimestamp").and_then(parse_time).unwrap_or(now);
        // Move the deadline from `grace` seconds after the delete to `grace * scale`.
        let scaled = (grace as f64 * grace_scale).ceil() as i64;
        let due = add_seconds(deadline, scaled - grace);
        return if due <= now { KubeletAction::Remove } else { KubeletAction::Wait(Some(due)) };
    }
    if matches!(pod_phase(pod), "Succeeded" | "Failed") {
        return KubeletAction::Wait(None);
    }
    let held_unready =
        pod.pointer("/metadata/annotations").and_then(|a| a.get(UNREADY_ANNOTATION)) == Some(&json!("true"));
    let started = pod.pointer("/status/startTime").and_then(parse_time);
    let ready_at = add_seconds(started.unwrap_or(now), ready_delay_seconds);
    let ready = !held_unready && ready_at <= now;
    if pod_phase(pod) == "Running"
        && started.is_some()
        && find_condition(pod, "Ready").map(|c| c["status"] == "True") == Some(ready)
    {
        let next = (!ready && !held_unready).then_some(ready_at);
        return KubeletAction::Wait(next);
    }
    KubeletAction::UpdateStatus(running_status(pod, ready, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster_logic::test_support::ts;

    fn bound_pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}})
    }

    fn status_of(action: KubeletAction) -> Value {
        match action {
            KubeletAction::UpdateStatus(status) => status,
            other => panic!("expected a status update, got {other:?}"),
        }
    }

    #[test]
    fn a_bound_pod_runs_then_becomes_ready_after_the_delay() {
        let t0 = ts("2026-01-01T12:00:00Z");
        let mut pod = bound_pod();
        pod["status"] = status_of(kubelet_step(&pod, 2, 1.0, t0));
        assert_eq!(pod["status"]["phase"], "Running");
        assert_eq!(pod["status"]["startTime"], "2026-01-01T12:00:00Z");
        assert!(!crate::cluster_logic::common::pod_is_ready(&pod));
        assert!(find_condition(&pod, "PodScheduled").is_some(), "other conditions are kept");
        assert_eq!(kubelet_step(&pod, 2, 1.0, t0), KubeletAction::Wait(Some(ts("2026-01-01T12:00:02Z"))));
        pod["status"] = status_of(kubelet_step(&pod, 2, 1.0, ts("2026-01-01T12:00:02Z")));
        assert!(crate::cluster_logic::common::pod_is_ready(&pod));
        assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);
        assert_eq!(kubelet_step(&pod, 2, 1.0, ts("2026-01-01T12:00:05Z")), KubeletAction::Wait(None));
        assert_eq!(kubelet_step(&bound_pod_unbound(), 2, 1.0, t0), KubeletAction::Wait(None));
    }

    fn bound_pod_unbound() -> Value {
        let mut pod = bound_pod();
        pod["spec"]["nodeName"] = json!("");
        pod
    }

    #[test]
    fn the_unready_annotation_holds_a_pod_unready() {
        let t0 = ts("2026-01-01T12:00:00Z");
        let mut pod = bound_pod();
        pod["status"] = status_of(kubelet_step(&pod, 0, 1.0, t0));
        assert!(crate::cluster_logic::common::pod_is_ready(&pod));
        let ready_since = find_condition(&pod, "Ready").map(|c| c["lastTransitionTime"].clone());
        pod["metadata"]["annotations"] = json!({UNREADY_ANNOTATION: "true"});
        pod["status"] = status_of(kubelet_step(&pod, 0, 1.0, ts("2026-01-01T12:01:00Z")));
        assert!(!crate::cluster_logic::common::pod_is_ready(&pod));
        assert_eq!(kubelet_step(&pod, 0, 1.0, ts("2026-01-01T12:02:00Z")), KubeletAction::Wait(None));
        pod["metadata"]["annotations"] = json!({});
        pod["status"] = status_of(kubelet_step(&pod, 0, 1.0, ts("2026-01-01T12:03:00Z")));
        let ready = find_condition(&pod, "Ready").cloned().unwrap_or_default();
        assert_eq!(
            (ready["status"].clone(), ready["lastTransitionTime"].clone()),
            (json!("True"), json!("2026-01-01T12:03:00Z"))
        );
        assert_ne!(ready_since, Some(ready["lastTransitionTime"].clone()));
    }

    #[test]
    fn terminating_pods_go_after_the_scaled_grace_period() {
        let mut pod = bound_pod();
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T12:00:30Z");
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        assert_eq!(
            kubelet_step(&pod, 0, 1.0, ts("2026-01-01T12:00:10Z")),
            KubeletAction::Wait(Some(ts("2026-01-01T12:00:30Z")))
        );
        assert_eq!(kubelet_step(&pod, 0, 1.0, ts("2026-01-01T12:00:30Z")), KubeletAction::Remove);
        assert_eq!(
            kubelet_step(&pod, 0, 0.1, ts("2026-01-01T12:00:03Z")),
            KubeletAction::Remove,
            "30 s scaled to 3 s"
        );
        assert_eq!(
            kubelet_step(&pod, 0, 0.1, ts("2026-01-01T12:00:02Z")),
            KubeletAction::Wait(Some(ts("2026-01-01T12:00:03Z")))
        );
    }
}
