//! Values from a real v1.35 control plane deleting `life-probe-ns1` (a ConfigMap held by
//! `example.com/hold`, a pod on a kwok node).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap_or_default()
}

fn without_times(status: &Value) -> Value {
    let mut s = status.clone();
    for c in s["conditions"].as_array_mut().into_iter().flatten() {
        c.as_object_mut().map(|m| m.remove("lastTransitionTime"));
    }
    s["conditions"].clone()
}

#[test]
fn all_clear_writes_the_five_ok_conditions() {
    let mut status = json!({"phase": "Terminating"});
    assert!(ConditionUpdater::default().update(&mut status, ts("2026-12-04T02:31:52Z")));
    assert_eq!(
        without_times(&status),
        json!([
            {"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "ResourcesDiscovered", "message": "All resources successfully discovered"},
            {"type": "NamespaceDeletionGroupVersionParsingFailure", "status": "False", "reason": "ParsedGroupVersions", "message": "All legacy kube types successfully parsed"},
            {"type": "NamespaceDeletionContentFailure", "status": "False", "reason": "ContentDeleted", "message": "All content successfully deleted, may be waiting on finalization"},
            {"type": "NamespaceContentRemaining", "status": "False", "reason": "ContentRemoved", "message": "All content successfully removed"},
            {"type": "NamespaceFinalizersRemaining", "status": "False", "reason": "ContentHasNoFinalizers", "message": "All content-preserving finalizers finished"}
        ])
    );
    assert_eq!(status["conditions"][0]["lastTransitionTime"], "2026-12-04T02:31:52Z");
    assert!(
        !ConditionUpdater::default().update(&mut status, ts("2026-12-04T02:31:53Z")),
        "no change, no write"
    );
}

#[test]
fn remaining_content_and_finalizers_are_reported() {
    let held = json!({"metadata": {"name": "c", "finalizers": ["example.com/hold"]}});
    let (left, error) = remaining("life-probe-ns1", &gvr_string("", "v1", "configmaps"), &[held], 0);
    assert_eq!(error, None);
    assert_eq!(left.estimate, FINALIZER_ESTIMATE_SECONDS);
    let mut status = json!({"phase": "Terminating"});
    ConditionUpdater::default().update(&mut status, ts("2026-12-04T02:31:52Z"));
    let mut updater = ConditionUpdater::default();
    updater.content_totals(&BTreeMap::from([("configmaps.".to_string(), left.count)]), &left.finalizers);
    assert!(updater.update(&mut status, ts("2026-12-04T02:31:58Z")));
    let conditions = without_times(&status);
    assert_eq!(
        conditions[3],
        json!({"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain",
            "message": "Some resources are remaining: configmaps. has 1 resource instances"})
    );
    assert_eq!(
        conditions[4],
        json!({"type": "NamespaceFinalizersRemaining", "status": "True", "reason": "SomeFinalizersRemain",
            "message": "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"})
    );
    assert_eq!(status["conditions"][3]["lastTransitionTime"], "2026-12-04T02:31:58Z", "the status flipped");
    assert_eq!(status["conditions"][0]["lastTransitionTime"], "2026-12-04T02:31:52Z");
}

#[test]
fn delete_errors_and_unexplained_leftovers() {
    let (_, error) = remaining("ns", &gvr_string("apps", "v1", "deployments"), &[json!({"metadata": {}})], 0);
    assert_eq!(
        error.as_deref(),
        Some("unexpected items still remain in namespace: ns for gvr: apps/v1, Resource=deployments")
    );
    let mut updater = ConditionUpdater::default();
    updater.delete_content_error("b failed".into());
    updater.delete_content_error("a failed".into());
    let mut status = json!({});
    updater.update(&mut status, ts("2026-12-04T02:31:52Z"));
    assert_eq!(
        without_times(&status)[2],
        json!({"type": "NamespaceDeletionContentFailure", "status": "True", "reason": "ContentDeletionFailed",
            "message": "Failed to delete all resource types, 2 remaining: a failed, b failed"})
    );
}

#[test]
fn graceful_pods_set_the_estimate_until_their_time_is_up() {
    let pod = |grace: i64, phase: &str| json!({"spec": {"terminationGracePeriodSeconds": grace}, "status": {"phase": phase}});
    let deleted = json!("2026-12-04T02:31:47Z");
    let pods = [pod(30, "Running"), pod(60, "Succeeded"), pod(10, "Pending")];
    assert_eq!(pod_estimate(&pods, &deleted, ts("2026-12-04T02:31:52Z")), 30);
    assert_eq!(pod_estimate(&pods, &deleted, ts("2026-12-04T02:32:17Z")), 0, "30 s after the DELETE");
    assert_eq!(pod_estimate(&[], &deleted, ts("2026-12-04T02:31:52Z")), 0);
    let ns = json!({"spec": {"finalizers": ["kubernetes", "example.com/z", "example.com/a"]}});
    assert_eq!(finalized_spec_finalizers(&ns), vec![json!("example.com/a"), json!("example.com/z")]);
}
