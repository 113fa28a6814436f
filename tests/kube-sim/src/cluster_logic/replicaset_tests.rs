use super::*;
use crate::cluster_logic::test_support::{ready_pod, ts, workload_fixture};

const NOW: &str = "2026-01-01T12:00:00Z";

fn rs(replicas: i64) -> Value {
    let (workloads, _) = workload_fixture(replicas, 0, true);
    let mut rs = workloads[1].clone();
    rs["spec"]["template"] = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    rs["metadata"]["generation"] = json!(3);
    rs
}

fn owned(name: &str) -> Value {
    let (_, mut pods) = workload_fixture(1, 1, true);
    let mut pod = pods.remove(0);
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["uid"] = json!(format!("uid-{name}"));
    pod["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    pod
}

#[test]
fn manage_replicas_creates_and_deletes_to_the_desired_count() {
    let pods: Vec<Value> = (0..3).map(|i| owned(&format!("p{i}"))).collect();
    assert_eq!(manage_replicas(&rs(3), &pods, &pods, ts(NOW)), ReplicaSetAction::InSync);
    assert_eq!(manage_replicas(&rs(5), &pods, &pods, ts(NOW)), ReplicaSetAction::Create(2));
    let mut terminating = pods.clone();
    terminating[0]["metadata"]["deletionTimestamp"] = json!(NOW);
    assert_eq!(
        manage_replicas(&rs(3), &terminating, &terminating, ts(NOW)),
        ReplicaSetAction::Create(1),
        "terminating pods are replaced at once"
    );
    let mut stranger = ready_pod("stranger");
    stranger["metadata"]["ownerReferences"] =
        json!([{"kind": "ReplicaSet", "uid": "other", "controller": true}]);
    let with_stranger = [pods.clone(), vec![stranger]].concat();
    assert_eq!(manage_replicas(&rs(3), &with_stranger, &with_stranger, ts(NOW)), ReplicaSetAction::InSync);
    assert!(
        matches!(manage_replicas(&rs(1), &pods, &pods, ts(NOW)), ReplicaSetAction::Delete(names) if names.len() == 2)
    );
    assert_eq!(manage_replicas(&rs(1000), &[], &[], ts(NOW)), ReplicaSetAction::Create(500));
}

#[test]
fn deletion_cost_parsing() {
    let with = |v: &str| json!({"metadata": {"annotations": {POD_DELETION_COST: v}}});
    for (text, cost) in
        [("100", 100), ("-5", -5), ("0", 0), ("+1", 0), ("007", 0), ("x", 0), ("99999999999", 0), ("", 0)]
    {
        assert_eq!(deletion_cost(&with(text)), cost, "{text:?}");
    }
    assert_eq!(deletion_cost(&json!({})), 0);
}

/// Each row: a pod that must be deleted before a Ready, Running, assigned baseline pod.
#[test]
fn scale_down_order_follows_upstream_ranking() {
    let now = ts(NOW);
    let baseline = owned("baseline");
    let variant = |f: &dyn Fn(&mut Value)| {
        let mut p = owned("variant");
        f(&mut p);
        p
    };
    let cases: Vec<(&str, Value)> = vec![
        ("unassigned", variant(&|p| p["spec"]["nodeName"] = json!(""))),
        ("pending", variant(&|p| p["status"]["phase"] = json!("Pending"))),
        ("unknown", variant(&|p| p["status"]["phase"] = json!("Unknown"))),
        ("not ready", variant(&|p| p["status"]["conditions"][0]["status"] = json!("False"))),
        ("lower cost", variant(&|p| p["metadata"]["annotations"] = json!({POD_DELETION_COST: "-1"}))),
        (
            "ready more recently",
            variant(&|p| p["status"]["conditions"][0]["lastTransitionTime"] = json!("2026-01-01T11:59:00Z")),
        ),
        ("more restarts", variant(&|p| p["status"]["containerStatuses"] = json!([{"restartCount": 3}]))),
        (
            "created more recently",
            variant(&|p| p["metadata"]["creationTimestamp"] = json!("2026-01-01T11:00:00Z")),
        ),
    ];
    for (label, first) in cases {
        for pair in [[&baseline, &first], [&first, &baseline]] {
            let chosen = pods_to_delete(&pair, &[], 1, now);
            assert_eq!(name_of(chosen[0]), "variant", "{label}");
        }
    }
    // A higher cost protects a pod even against an unready-free, co-located baseline.
    let expensive = variant(&|p| p["metadata"]["annotations"] = json!({POD_DELETION_COST: "10"}));
    assert_eq!(name_of(pods_to_delete(&[&expensive, &baseline], &[], 1, now)[0]), "baseline");
    // Rank: more related pods on the same node go first.
    let crowded = variant(&|p| p["spec"]["nodeName"] = json!("node-2"));
    let related = vec![
        crowded.clone(),
        owned("x"),
        {
            let mut y = owned("y");
            y["spec"]["nodeName"] = json!("node-2");
            y
        },
        {
            let mut z = owned("z");
            z["spec"]["nodeName"] = json!("node-2");
            z
        },
    ];
    assert_eq!(name_of(pods_to_delete(&[&baseline, &crowded], &related, 1, now)[0]), "variant");
}

#[test]
fn ready_times_in_the_same_log2_bucket_tie_break_by_uid() {
    let now = ts(NOW);
    let at = |name: &str, time: &str| {
        let mut p = owned(name);
        p["status"]["conditions"][0]["lastTransitionTime"] = json!(time);
        p
    };
    // 100 s and 120 s ago share the 2^36 ns bucket; uid-a < uid-b decides.
    let (a, b) = (at("a", "2026-01-01T11:58:00Z"), at("b", "2026-01-01T11:58:20Z"));
    assert_eq!(name_of(pods_to_delete(&[&b, &a], &[], 1, now)[0]), "a");
}

#[test]
fn pods_are_built_from_the_template_and_status_counts_them() {
    let rs = rs(3);
    let pod = pod_from_template(&rs);
    assert_eq!(pod["metadata"]["generateName"], "web-abc-");
    assert_eq!(pod["metadata"]["labels"]["pod-template-hash"], "abc");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");

    let mut pods: Vec<Value> = (0..4).map(|i| owned(&format!("p{i}"))).collect();
    for p in &mut pods {
        p["metadata"]["labels"]["pod-template-hash"] = json!("abc");
    }
    pods[0]["status"]["conditions"][0]["status"] = json!("False");
    pods[1]["metadata"]["labels"] = json!({"app": "web"});
    pods[2]["metadata"]["deletionTimestamp"] = json!(NOW);
    pods[3]["status"]["conditions"][0]["lastTransitionTime"] = json!("2026-01-01T11:59:58Z");
    let mut slow = rs.clone();
    slow["spec"]["minReadySeconds"] = json!(5);
    assert_eq!(
        replica_set_status(&slow, &pods, ts(NOW)),
        json!({"replicas": 3, "fullyLabeledReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 1, "observedGeneration": 3, "terminatingReplicas": 1})
    );
    // Zero counters are omitted (`replicas` and `terminatingReplicas` are always written).
    assert_eq!(
        replica_set_status(&rs, &[], ts(NOW)),
        json!({"replicas": 0, "observedGeneration": 3, "terminatingReplicas": 0})
    );
}
