use super::*;
use crate::cluster_logic::test_support::ts;

const NOW: &str = "2026-01-01T12:00:00Z";

fn deployment(replicas: i64, surge: Value, unavailable: Value, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "uid": "dep-uid", "generation": 1,
                     "annotations": {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
                 "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
        "status": {}})
}

/// Applies a sync's changes to the ReplicaSets, as the API would (creation time = `tick`).
fn apply(sync: &DeploymentSync, replica_sets: &mut Vec<Value>, tick: usize) {
    for change in &sync.changes {
        match change {
            RsChange::Create(rs) => {
                let mut rs = rs.clone();
                rs["metadata"]["uid"] = json!(format!("rs-{tick}"));
                rs["metadata"]["creationTimestamp"] = json!(format!("2026-01-01T00:{:02}:00Z", tick));
                replica_sets.push(rs);
            }
            RsChange::Update { name, replicas, annotations } => {
                for rs in replica_sets.iter_mut().filter(|rs| name_of(rs) == name) {
                    rs["spec"]["replicas"] = json!(replicas);
                    for (k, v) in annotations {
                        rs["metadata"]["annotations"][k] = v.clone();
                    }
                }
            }
            RsChange::Delete(name) => replica_sets.retain(|rs| name_of(rs) != name),
        }
    }
}

/// The ReplicaSet controller and kubelet, instantly: every RS has all its pods available.
fn settle(replica_sets: &mut [Value]) {
    for rs in replica_sets {
        let n = replicas(rs);
        rs["status"] =
            json!({"replicas": n, "readyReplicas": n, "availableReplicas": n, "observedGeneration": 0});
    }
}

#[test]
fn fenceposts_match_the_spec_table() {
    for (replicas, surge, unavailable) in
        [(0, 0, 1), (1, 1, 0), (2, 1, 0), (3, 1, 0), (4, 1, 1), (5, 2, 1), (8, 2, 2), (10, 3, 2)]
    {
        assert_eq!(
            resolve_fenceposts(&json!("25%"), &json!("25%"), replicas),
            Ok((surge, unavailable)),
            "replicas {replicas}"
        );
    }
    assert_eq!(resolve_fenceposts(&json!(0), &json!(0), 5), Ok((0, 1)));
    assert_eq!(max_unavailable(&deployment(0, json!("25%"), json!("25%"), "a")), 0, "0 replicas → 0");
    assert_eq!(max_unavailable(&deployment(2, json!(0), json!(5), "a")), 2, "capped at replicas");
    let mut recreate = deployment(4, json!("25%"), json!("25%"), "a");
    recreate["spec"]["strategy"] = json!({"type": "Recreate"});
    assert_eq!((max_surge(&recreate), max_unavailable(&recreate)), (0, 0));
}

#[test]
fn the_first_sync_creates_the_replica_set_from_the_template() {
    let d = deployment(3, json!("25%"), json!("25%"), "nginx:1");
    let sync = sync_deployment(&d, &[], &[], ts(NOW));
    let [RsChange::Create(rs)] = sync.changes.as_slice() else { panic!("{:?}", sync.changes) };
    let hash = template_hash(&d["spec"]["template"], None);
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert!(hash.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
    assert_eq!(rs["spec"]["replicas"], 3);
    assert_eq!(rs["metadata"]["labels"], json!({"app": "web", POD_TEMPLATE_HASH: hash}));
    assert_eq!(rs["spec"]["selector"]["matchLabels"], json!({"app": "web", POD_TEMPLATE_HASH: hash}));
    assert_eq!(
        rs["metadata"]["annotations"],
        json!({"team": "a", REVISION: "1", DESIRED_REPLICAS: "3", MAX_REPLICAS: "4"})
    );
    assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "dep-uid");
    assert_eq!(sync.revision_annotation.as_deref(), Some("1"));
    let progressing = sync.status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Progressing"))
        .cloned();
    assert_eq!(progressing.map(|c| c["reason"].clone()), Some(json!("NewReplicaSetCreated")));
    assert_ne!(template_hash(&deployment(3, json!(1), json!(0), "nginx:2")["spec"]["template"], None), hash);
    assert_ne!(template_hash(&d["spec"]["template"], Some(1)), hash, "a collision count changes the hash");
}

/// Drives syncs to completion, checking the surge/unavailability bounds at every step.
fn roll(desired: i64, surge: Value, unavailable: Value) -> (Vec<Value>, DeploymentSync, usize) {
    let mut d = deployment(desired, surge, unavailable, "v1");
    let mut replica_sets = Vec::new();
    let first = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    apply(&first, &mut replica_sets, 0);
    settle(&mut replica_sets);
    d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("v2");
    let (max_total, min_available) = (desired + max_surge(&d), desired - max_unavailable(&d));
    for tick in 1..50 {
        let sync = sync_deployment(&d, &replica_sets, &[], ts(NOW));
        if sync.changes.is_empty() {
            d["status"] = sync.status.clone();
            let again = sync_deployment(&d, &replica_sets, &[], ts(NOW));
            return (replica_sets, again, tick);
        }
        apply(&sync, &mut replica_sets, tick);
        let total: i64 = replica_sets.iter().map(replicas).sum();
        assert!(total <= max_total, "surge bound broken at tick {tick}: {total}");
        let available_now: i64 =
            replica_sets.iter().map(|rs| replicas(rs).min(int_at(rs, "/status/availableReplicas", 0))).sum();
        assert!(available_now >= min_available, "availability bound broken at tick {tick}: {available_now}");
        settle(&mut replica_sets);
        d["status"] = sync.status;
    }
    panic!("the rollout did not finish");
}

#[test]
fn rolling_updates_respect_surge_and_unavailability_and_complete() {
    for (replicas, surge, unavailable) in [
        (3, json!(1), json!(0)),
        (4, json!("25%"), json!("25%")),
        (10, json!(0), json!(3)),
        (1, json!("25%"), json!("25%")),
    ] {
        let (replica_sets, last, _) = roll(replicas, surge.clone(), unavailable.clone());
        let sizes: Vec<(i64, i64)> =
            replica_sets.iter().map(|rs| (revision(rs), super::replicas(rs))).collect();
        assert_eq!(sizes, vec![(1, 0), (2, replicas)], "{surge}/{unavailable}");
        assert_eq!(last.status["updatedReplicas"], replicas);
        // A zero counter is omitted (`omitempty` in apps/v1).
        assert!(last.status["unavailableReplicas"].is_null(), "{}", last.status);
        let reasons: Vec<Value> = last.status["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|c| c["reason"].clone())
            .collect();
        assert_eq!(reasons, vec![json!("MinimumReplicasAvailable"), json!("NewReplicaSetAvailable")]);
    }
}

#[test]
fn recreate_scales_old_down_and_waits_for_old_pods() {
    let mut d = deployment(2, json!(1), json!(0), "v1");
    d["spec"]["strategy"] = json!({"type": "Recreate"});
    let mut replica_sets = Vec::new();
    apply(&sync_deployment(&d, &replica_sets, &[], ts(NOW)), &mut replica_sets, 0);
    settle(&mut replica_sets);
    d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("v2");
    let first = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    assert!(
        matches!(first.changes.as_slice(), [RsChange::Update { replicas: 0, .. }]),
        "{:?}",
        first.changes
    );
    apply(&first, &mut replica_sets, 1);
    // The old pod still runs: nothing new yet.
    let old_pod = json!({"metadata": {"ownerReferences": [{"uid": "rs-0", "controller": true}]}, "status": {"phase": "Running"}});
    assert!(sync_deployment(&d, &replica_sets, std::slice::from_ref(&old_pod), ts(NOW)).changes.is_empty());
    settle(&mut replica_sets);
    let last = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    assert!(
        matches!(last.changes.as_slice(), [RsChange::Create(rs)] if rs["spec"]["replicas"] == 2),
        "{:?}",
        last.changes
    );
}

#[test]
fn scaling_a_settled_deployment_resizes_its_only_replica_set() {
    let mut d = deployment(3, json!("25%"), json!("25%"), "v1");
    let mut replica_sets = Vec::new();
    apply(&sync_deployment(&d, &replica_sets, &[], ts(NOW)), &mut replica_sets, 0);
    settle(&mut replica_sets);
    d["spec"]["replicas"] = json!(5);
    let sync = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    let RsChange::Update { replicas, annotations, .. } = &sync.changes[0] else {
        panic!("{:?}", sync.changes)
    };
    assert_eq!(*replicas, 5);
    assert_eq!(annotations.get(DESIRED_REPLICAS), Some(&json!("5")));
    assert_eq!(annotations.get(MAX_REPLICAS), Some(&json!("7")));
}

#[test]
fn scaling_mid_rollout_is_proportional() {
    let d = deployment(20, json!("25%"), json!("25%"), "v2");
    let rs = |name: &str, image: &str, size: i64, created: &str, rev: &str| {
        json!({"metadata": {"name": name, "uid": name, "creationTimestamp": created,
            "annotations": {REVISION: rev, DESIRED_REPLICAS: "10", MAX_REPLICAS: "13"},
            "ownerReferences": [{"uid": "dep-uid", "controller": true}]},
            "spec": {"replicas": size, "template": {"metadata": {"labels": {"app": "web", POD_TEMPLATE_HASH: name}},
                "spec": {"containers": [{"name": "web", "image": image}]}}},
            "status": {"replicas": size, "availableReplicas": size}})
    };
    let replica_sets =
        [rs("old", "v1", 8, "2026-01-01T00:00:00Z", "1"), rs("new", "v2", 5, "2026-01-01T01:00:00Z", "2")];
    let sync = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    let sizes: Vec<(String, i64)> = sync
        .changes
        .iter()
        .filter_map(|c| match c {
            RsChange::Update { name, replicas, .. } => Some((name.clone(), *replicas)),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, vec![("old".to_string(), 15), ("new".to_string(), 10)]);
}

#[test]
fn old_replica_sets_beyond_the_history_limit_are_deleted_oldest_revision_first() {
    let mut d = deployment(1, json!(1), json!(0), "v9");
    d["spec"]["revisionHistoryLimit"] = json!(1);
    let rs = |rev: i64, image: &str, size: i64| {
        json!({"metadata": {"name": format!("rs-{rev}"), "uid": format!("u{rev}"), "creationTimestamp": format!("2026-01-01T0{rev}:00:00Z"),
            "annotations": {REVISION: rev.to_string(), DESIRED_REPLICAS: "1", MAX_REPLICAS: "2"},
            "ownerReferences": [{"uid": "dep-uid", "controller": true}]},
            "spec": {"replicas": size, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}}},
            "status": {"replicas": size, "availableReplicas": size, "readyReplicas": size}})
    };
    let replica_sets = [rs(3, "v3", 0), rs(1, "v1", 0), rs(2, "v2", 0), rs(4, "v9", 1)];
    let sync = sync_deployment(&d, &replica_sets, &[], ts(NOW));
    assert_eq!(sync.changes, vec![RsChange::Delete("rs-1".into()), RsChange::Delete("rs-2".into())]);
    assert_eq!(sync.status["availableReplicas"], 1);
}

#[test]
fn status_reports_unavailability_and_pause() {
    let mut d = deployment(4, json!(1), json!(1), "v1");
    d["spec"]["paused"] = json!(true);
    let rs = json!({"metadata": {"name": "web-x", "uid": "x", "annotations": {DESIRED_REPLICAS: "4", REVISION: "1"},
        "ownerReferences": [{"uid": "dep-uid", "controller": true}]},
        "spec": {"replicas": 4, "template": d["spec"]["template"].clone()},
        "status": {"replicas": 4, "readyReplicas": 2, "availableReplicas": 2}});
    let sync = sync_deployment(&d, &[rs], &[], ts(NOW));
    assert!(sync.changes.is_empty());
    assert_eq!(
        (sync.status["unavailableReplicas"].clone(), sync.status["readyReplicas"].clone()),
        (json!(2), json!(2))
    );
    let by_type = |t: &str| {
        sync.status["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == t))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        (by_type("Available")["status"].clone(), by_type("Available")["reason"].clone()),
        (json!("False"), json!("MinimumReplicasUnavailable"))
    );
    assert_eq!(
        (by_type("Progressing")["status"].clone(), by_type("Progressing")["reason"].clone()),
        (json!("Unknown"), json!("DeploymentPaused"))
    );
}
