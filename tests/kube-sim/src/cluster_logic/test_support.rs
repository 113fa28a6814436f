//! Fixtures shared by the cluster-logic tests.

use jiff::Timestamp;
use serde_json::{Value, json};

/// Parses an RFC 3339 test timestamp (the epoch on a typo, which makes the test fail loudly).
pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap_or_default()
}

/// A Ready, Running pod `name` in `prod` labelled `app: web`, on `node-1`.
pub fn ready_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "prod", "uid": format!("uid-{name}"), "resourceVersion": "7",
                     "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 30},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

/// Deployment `web` (uid `dep-uid`, `replicas`) → ReplicaSet `web-abc` (uid `rs-uid`) →
/// `pod_count` Ready pods `web-<i>` (owned by the ReplicaSet only if `owned`).
pub fn workload_fixture(replicas: i64, pod_count: usize, owned: bool) -> (Vec<Value>, Vec<Value>) {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "uid": "dep-uid"}, "spec": {"replicas": replicas}});
    let replica_set = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "prod", "uid": "rs-uid", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "dep-uid", "controller": true}]},
        "spec": {"replicas": replicas}});
    let pods = (0..pod_count)
        .map(|i| {
            let mut pod = ready_pod(&format!("web-{i}"));
            if owned {
                pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-abc", "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}]);
            }
            pod
        })
        .collect();
    (vec![deployment, replica_set], pods)
}
