use super::*;
use crate::cluster_logic::test_support::{ts, workload_fixture};

fn pdb(spec: Value) -> Value {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": "web"}});
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web-pdb", "namespace": "prod", "generation": 1}, "spec": spec, "status": {}})
}

fn counts(sync: &PdbSync) -> (i64, i64, i64, i64) {
    let s = &sync.status;
    (
        int_at(s, "/expectedPods", -1),
        int_at(s, "/desiredHealthy", -1),
        int_at(s, "/currentHealthy", -1),
        int_at(s, "/disruptionsAllowed", -1),
    )
}

/// (label, replicas, pod count, owned?, pdb spec, disruptedPods, (expected, desired, current, allowed)).
type WorkedExample = (&'static str, i64, usize, bool, Value, Option<Value>, (i64, i64, i64, i64));

/// §2.9 worked examples A–L, literally.
#[test]
fn worked_examples_a_to_l() {
    let now = ts("2026-01-01T12:00:00Z");
    let evicted_10s_ago = json!({"web-0": "2026-01-01T11:59:50Z"});
    // (label, replicas, pod count, owned?, pdb spec, disruptedPods, expected tuple)
    let cases: Vec<WorkedExample> = vec![
        ("A", 3, 3, true, json!({"minAvailable": 2}), None, (3, 2, 3, 1)),
        ("B", 3, 3, true, json!({"maxUnavailable": 1}), None, (3, 2, 3, 1)),
        ("C", 10, 10, true, json!({"minAvailable": "25%"}), None, (10, 3, 10, 7)),
        ("D", 10, 10, true, json!({"maxUnavailable": "25%"}), None, (10, 7, 10, 3)),
        ("E", 3, 3, true, json!({"maxUnavailable": "50%"}), None, (3, 1, 3, 2)),
        ("F", 3, 3, true, json!({"minAvailable": "100%"}), None, (3, 3, 3, 0)),
        ("G", 3, 4, true, json!({"maxUnavailable": 1}), None, (3, 2, 4, 2)),
        ("H", 3, 4, true, json!({"minAvailable": 2}), None, (4, 2, 4, 2)),
        ("I", 3, 3, true, json!({"minAvailable": 2}), Some(evicted_10s_ago), (3, 2, 2, 0)),
        ("J", 0, 3, false, json!({"maxUnavailable": 1}), None, (0, 0, 3, 0)),
        ("K", 0, 3, false, json!({"minAvailable": 2}), None, (3, 2, 3, 1)),
        ("L", 0, 0, true, json!({"minAvailable": 1}), None, (0, 1, 0, 0)),
    ];
    for (label, replicas, pod_count, owned, spec, disrupted, expected) in cases {
        let (workloads, pods) = workload_fixture(replicas, pod_count, owned);
        let mut pdb = pdb(spec);
        if let Some(d) = disrupted {
            pdb["status"]["disruptedPods"] = d;
        }
        let sync = sync_pdb(&pdb, &pods, workloads.as_slice(), now);
        assert!(!sync.failed, "{label}: {:?}", sync.status);
        assert_eq!(counts(&sync), expected, "example {label}");
        assert_eq!(sync.status["observedGeneration"], 1, "example {label}");
        let condition = &sync.status["conditions"][0];
        let want = if expected.3 > 0 { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
        assert_eq!(
            (condition["status"].as_str(), condition["reason"].as_str()),
            (Some(want.0), Some(want.1)),
            "{label}"
        );
        assert_eq!(condition["lastTransitionTime"], "2026-01-01T12:00:00Z");
    }
}

#[test]
fn unready_and_terminating_pods_are_not_healthy() {
    let (workloads, mut pods) = workload_fixture(3, 3, true);
    pods[0]["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    pods[1]["metadata"]["deletionTimestamp"] = json!("2026-01-01T11:00:00Z");
    let sync =
        sync_pdb(&pdb(json!({"minAvailable": 1})), &pods, workloads.as_slice(), ts("2026-01-01T12:00:00Z"));
    assert_eq!(counts(&sync), (3, 1, 1, 0));
}

#[test]
fn disrupted_pods_are_pruned_and_a_recheck_is_scheduled() {
    let (workloads, mut pods) = workload_fixture(4, 4, true);
    pods[1]["metadata"]["deletionTimestamp"] = json!("2026-01-01T11:59:00Z");
    let mut pdb = pdb(json!({"minAvailable": 1}));
    pdb["status"]["disruptedPods"] = json!({
        "web-0": "2026-01-01T11:59:30Z",  // fresh: kept, not healthy
        "web-1": "2026-01-01T11:59:30Z",  // terminating: dropped
        "web-2": "2026-01-01T11:50:00Z",  // expired: dropped, healthy again, NotDeleted event
        "gone":  "2026-01-01T11:59:30Z",  // no such pod: dropped
    });
    let now = ts("2026-01-01T12:00:00Z");
    let sync = sync_pdb(&pdb, &pods, workloads.as_slice(), now);
    assert_eq!(sync.status["disruptedPods"], json!({"web-0": "2026-01-01T11:59:30Z"}));
    assert_eq!(sync.recheck_at, Some(ts("2026-01-01T12:01:30Z")));
    assert_eq!(counts(&sync), (4, 1, 2, 1));
    let not_deleted: Vec<_> = sync.events.iter().filter(|e| e.reason == "NotDeleted").collect();
    assert_eq!(not_deleted.len(), 1);
    assert_eq!(not_deleted[0].involved_name, "web-2");
    assert_eq!(not_deleted[0].message, "Pod was expected by PDB prod/prod to be deleted but it wasn't");
}

#[test]
fn a_synced_pdb_needs_no_write_and_a_spec_change_does() {
    let (workloads, pods) = workload_fixture(3, 3, true);
    let now = ts("2026-01-01T12:00:00Z");
    let mut pdb = pdb(json!({"minAvailable": 2}));
    let first = sync_pdb(&pdb, &pods, workloads.as_slice(), now);
    assert!(first.needs_write);
    pdb["status"] = first.status.clone();
    let second = sync_pdb(&pdb, &pods, workloads.as_slice(), ts("2026-01-01T12:05:00Z"));
    assert!(!second.needs_write);
    pdb["metadata"]["generation"] = json!(2);
    pdb["spec"]["minAvailable"] = json!(3);
    let third = sync_pdb(&pdb, &pods, workloads.as_slice(), ts("2026-01-01T12:05:00Z"));
    assert!(third.needs_write);
    assert_eq!(third.status["observedGeneration"], 2);
    let condition = &third.status["conditions"][0];
    assert_eq!(condition["reason"], "InsufficientPods");
    assert_eq!(condition["lastTransitionTime"], "2026-01-01T12:05:00Z", "status flipped");
    assert_eq!(condition["observedGeneration"], 2);
}

#[test]
fn a_pod_whose_controller_is_gone_fails_safe_without_advancing_observed_generation() {
    let (mut workloads, pods) = workload_fixture(3, 3, true);
    workloads.retain(|w| w["kind"] != "Deployment");
    let mut pdb = pdb(json!({"maxUnavailable": 1}));
    pdb["status"] =
        json!({"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3});
    let sync = sync_pdb(&pdb, &pods, workloads.as_slice(), ts("2026-01-01T12:00:00Z"));
    assert!(sync.failed && sync.needs_write);
    assert_eq!(sync.status["disruptionsAllowed"], 0);
    assert_eq!(sync.status["currentHealthy"], 3);
    assert!(sync.status.get("observedGeneration").is_none());
    let condition = &sync.status["conditions"][0];
    assert_eq!(condition["reason"], "SyncFailed");
    assert_eq!(condition["message"], "found no controllers for pod \"web-0\"");
    assert_eq!(sync.events[0].reason, "CalculateExpectedPodCountFailed");
}

#[test]
fn int_min_available_never_looks_up_controllers() {
    let (_, pods) = workload_fixture(3, 3, true);
    let no_workloads: Vec<Value> = Vec::new();
    let sync = sync_pdb(
        &pdb(json!({"minAvailable": 2})),
        &pods,
        no_workloads.as_slice(),
        ts("2026-01-01T12:00:00Z"),
    );
    assert_eq!(counts(&sync), (3, 2, 3, 1));
}

#[test]
fn selector_semantics_null_nothing_empty_everything_other_namespace_never() {
    let (workloads, pods) = workload_fixture(3, 3, true);
    let now = ts("2026-01-01T12:00:00Z");
    let mut everything = pdb(json!({"minAvailable": 1}));
    everything["spec"]["selector"] = json!({});
    assert_eq!(counts(&sync_pdb(&everything, &pods, workloads.as_slice(), now)).2, 3);
    let mut nothing = everything.clone();
    nothing["spec"]["selector"] = Value::Null;
    let sync = sync_pdb(&nothing, &pods, workloads.as_slice(), now);
    assert_eq!(counts(&sync).2, 0);
    assert_eq!(sync.events[0].reason, "NoPods");
    let mut elsewhere = everything;
    elsewhere["metadata"]["namespace"] = json!("other");
    assert_eq!(counts(&sync_pdb(&elsewhere, &pods, workloads.as_slice(), now)).2, 0);
}

#[test]
fn unmanaged_pods_warn_and_replicaset_without_deployment_uses_its_own_replicas() {
    let (_, pods) = workload_fixture(0, 2, false);
    let sync = sync_pdb(
        &pdb(json!({"minAvailable": "50%"})),
        &pods,
        Vec::<Value>::new().as_slice(),
        ts("2026-01-01T12:00:00Z"),
    );
    assert_eq!(sync.events[0].reason, "UnmanagedPods");
    assert!(sync.events[0].message.contains("(selector: app=web)"));

    let (mut workloads, pods) = workload_fixture(5, 2, true);
    workloads.retain(|w| w["kind"] != "Deployment");
    for w in &mut workloads {
        w["metadata"]["ownerReferences"] = json!([]);
        w["spec"]["replicas"] = json!(2);
    }
    let sync =
        sync_pdb(&pdb(json!({"maxUnavailable": 1})), &pods, workloads.as_slice(), ts("2026-01-01T12:00:00Z"));
    assert_eq!(counts(&sync), (2, 1, 2, 1));
}

#[test]
fn stale_disruption_target_is_cleared_after_two_minutes() {
    let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "lastTransitionTime": "2026-01-01T12:00:00Z"}]}});
    assert_eq!(
        stale_disruption_target(&pod, ts("2026-01-01T12:01:00Z")),
        StaleDisruptionTarget::CleanUpAt(ts("2026-01-01T12:02:00Z"))
    );
    let StaleDisruptionTarget::CleanUpNow(condition) =
        stale_disruption_target(&pod, ts("2026-01-01T12:02:00Z"))
    else {
        panic!("expected a cleanup");
    };
    assert_eq!(condition["status"], "False");
    let mut terminating = pod;
    terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T12:00:00Z");
    assert_eq!(
        stale_disruption_target(&terminating, ts("2026-01-01T13:00:00Z")),
        StaleDisruptionTarget::Nothing
    );
}

#[test]
fn pods_of_a_controller_without_scale_fail_safe() {
    let (_, mut pods) = workload_fixture(0, 1, true);
    pods[0]["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-uid", "controller": true}]);
    let daemon_set = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "uid": "ds-uid"}, "spec": {}});
    let sync = sync_pdb(
        &pdb(json!({"maxUnavailable": 1})),
        &pods,
        [daemon_set].as_slice(),
        ts("2026-01-01T12:00:00Z"),
    );
    assert!(sync.failed);
    assert_eq!(
        sync.status["conditions"][0]["message"],
        "daemonsets.apps does not implement the scale subresource"
    );
}
