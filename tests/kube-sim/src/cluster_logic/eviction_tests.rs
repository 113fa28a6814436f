use super::*;
use crate::cluster_logic::test_support::{ready_pod, ts};

const NOW: &str = "2026-01-01T12:00:00Z";

fn pdb(name: &str, status: Value) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "prod", "generation": 1, "resourceVersion": "55"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}, "status": status})
}

fn synced(allowed: i64, current: i64, desired: i64) -> Value {
    json!({"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": current,
        "desiredHealthy": desired, "expectedPods": 3,
        "conditions": [{"type": "DisruptionAllowed", "status": if allowed > 0 { "True" } else { "False" },
            "reason": if allowed > 0 { "SufficientPods" } else { "InsufficientPods" }, "message": "",
            "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
}

fn prepared(dry_run: bool) -> PreparedEviction {
    let eviction = json!({"metadata": {"name": "web-0"}, "deleteOptions": {}});
    prepare_eviction("web-0", &eviction, dry_run).unwrap_or_else(|e| panic!("{e:?}"))
}

fn respond(decision: EvictionDecision) -> StatusResponse {
    match decision {
        EvictionDecision::Respond(r) => r,
        EvictionDecision::Evict(plan) => panic!("expected an answer, got {plan:?}"),
    }
}

fn plan(decision: EvictionDecision) -> EvictionPlan {
    match decision {
        EvictionDecision::Evict(plan) => plan,
        EvictionDecision::Respond(r) => panic!("expected a plan, got {r:?}"),
    }
}

#[test]
fn decode_defaults_version_and_namespace_and_warns_on_kube_rs_delete_options() {
    let decoded = decode_eviction(&json!({"delete_options": null, "metadata": {"name": "web-0"}}), "prod")
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        decoded.eviction,
        json!({"kind": "Eviction", "apiVersion": "policy/v1",
        "metadata": {"name": "web-0", "namespace": "prod", "creationTimestamp": null}})
    );
    assert_eq!(decoded.warnings, vec!["unknown field \"delete_options\"".to_string()]);

    let kubectl = json!({"kind": "Eviction", "apiVersion": "policy/v1beta1",
        "metadata": {"name": "web-0", "namespace": "prod", "creationTimestamp": null}, "deleteOptions": {}});
    let decoded = decode_eviction(&kubectl, "prod").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(decoded.eviction["apiVersion"], "policy/v1");
    assert_eq!(decoded.eviction["deleteOptions"], json!({}));
    assert!(decoded.warnings.is_empty());

    let wrong_version = decode_eviction(&json!({"apiVersion": "policy/v2"}), "prod").err();
    assert_eq!(
        wrong_version.map(|r| (r.code, r.message().to_string())),
        Some((
            400,
            "the API version in the data (policy/v2) does not match the expected API version (policy/v1)"
                .to_string()
        ))
    );
    let wrong_namespace =
        decode_eviction(&json!({"metadata": {"name": "a", "namespace": "x"}}), "prod").err();
    assert_eq!(wrong_namespace.map(|r| r.code), Some(400));
}

#[test]
fn prepare_checks_the_name_and_propagates_dry_run() {
    let err = prepare_eviction("web-0", &json!({"metadata": {"name": "other"}}), false).err();
    assert_eq!(
        err.map(|r| r.body),
        Some(json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "name in URL does not match name in Eviction object", "reason": "BadRequest", "code": 400}))
    );
    // (body deleteOptions, query dryRun) → dry run?
    let cases = [
        (None, false, Ok(false)),
        (None, true, Ok(true)),
        (Some(json!({})), true, Ok(true)),
        (Some(json!({"dryRun": ["All"]})), false, Ok(true)),
        (Some(json!({"dryRun": ["All"]})), true, Ok(true)),
        (
            Some(json!({"dryRun": ["Foo"]})),
            true,
            Err("Non-matching dry-run options in request and content: [All] and [Foo]"),
        ),
    ];
    for (options, query, expected) in cases {
        let mut eviction = json!({"metadata": {"name": "web-0"}});
        if let Some(o) = options.clone() {
            eviction["deleteOptions"] = o;
        }
        let got = prepare_eviction("web-0", &eviction, query);
        match (got, expected) {
            (Ok(p), Ok(dry)) => assert_eq!(p.dry_run, dry, "{options:?} query={query}"),
            (Err(r), Err(message)) => {
                assert_eq!((r.code, r.message()), (500, message));
                assert!(r.body.get("reason").is_none());
            }
            (got, want) => panic!("{options:?} query={query}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn pods_that_skip_the_budget_are_deleted_without_consulting_pdbs() {
    let two_pdbs = [pdb("a", synced(0, 2, 2)), pdb("b", synced(0, 2, 2))];
    for (phase, terminating, rv_precondition) in [
        ("Succeeded", false, None),
        ("Failed", false, None),
        ("Running", true, None),
        ("Pending", false, Some("7")),
    ] {
        let mut pod = ready_pod("web-0");
        pod["status"]["phase"] = json!(phase);
        if terminating {
            pod["metadata"]["deletionTimestamp"] = json!(NOW);
        }
        let plan = plan(decide_eviction(&prepared(false), &pod, &two_pdbs, ts(NOW)));
        assert_eq!(plan.pdb_update, None, "{phase}");
        assert_eq!(
            plan.delete_options.pointer("/preconditions/resourceVersion").and_then(Value::as_str),
            rv_precondition,
            "{phase}"
        );
        assert_eq!(plan.on_conflict, OnConflict::RetryFromPodGet, "{phase}");
    }
}

#[test]
fn a_client_rv_precondition_on_a_pending_pod_is_kept_and_not_retried() {
    let mut pod = ready_pod("web-0");
    pod["status"]["phase"] = json!("Pending");
    let eviction =
        json!({"metadata": {"name": "web-0"}, "deleteOptions": {"preconditions": {"resourceVersion": "3"}}});
    let prepared = prepare_eviction("web-0", &eviction, false).unwrap_or_else(|e| panic!("{e:?}"));
    let plan = plan(decide_eviction(&prepared, &pod, &[], ts(NOW)));
    assert_eq!(plan.delete_options["preconditions"]["resourceVersion"], "3");
    assert_eq!(plan.on_conflict, OnConflict::ReturnConflict);
}

#[test]
fn budget_answers_match_the_response_catalogue() {
    let pod = ready_pod("web-0");
    // R5
    let two = [pdb("a", synced(1, 3, 2)), pdb("b", synced(1, 3, 2))];
    assert_eq!(
        respond(decide_eviction(&prepared(false), &pod, &two, ts(NOW))).body,
        json!({"kind": "Status",
        "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", "code": 500})
    );
    // R4: a just-created PDB (generation 1, empty status)
    let r4 = respond(decide_eviction(&prepared(false), &pod, &[pdb("web-pdb", json!({}))], ts(NOW)));
    assert_eq!(
        r4.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.", "reason": "TooManyRequests",
        "details": {"causes": [{"reason": "DisruptionBudget",
            "message": "The disruption budget web-pdb is still being processed by the server."}], "retryAfterSeconds": 10},
        "code": 429})
    );
    assert_eq!(r4.retry_after_seconds(), Some(10));
    // R3
    let r3 = respond(decide_eviction(&prepared(false), &pod, &[pdb("web-pdb", synced(0, 2, 2))], ts(NOW)));
    assert_eq!(
        r3.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.", "reason": "TooManyRequests",
        "details": {"causes": [{"reason": "DisruptionBudget",
            "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]}, "code": 429})
    );
    assert_eq!(r3.retry_after_seconds(), None);
    // R6
    let r6 = respond(decide_eviction(&prepared(false), &pod, &[pdb("web-pdb", synced(-1, 2, 2))], ts(NOW)));
    assert_eq!(
        (r6.code, r6.message()),
        (403, "poddisruptionbudget.policy \"web-pdb\" is forbidden: pdb disruptions allowed is negative")
    );
    let mut crowded = synced(1, 3, 2);
    crowded["disruptedPods"] = Value::Object((0..=2000).map(|i| (format!("p{i}"), json!(NOW))).collect());
    let r6 = respond(decide_eviction(&prepared(false), &pod, &[pdb("web-pdb", crowded)], ts(NOW)));
    assert_eq!(r6.code, 403);
    assert!(
        r6.message()
            .ends_with("DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    );
}

#[test]
fn zero_budget_cause_follows_the_v1_35_condition_rules() {
    let pod = ready_pod("web-0");
    let cause = |status: Value| {
        let r = respond(decide_eviction(&prepared(false), &pod, &[pdb("p", status)], ts(NOW)));
        r.body["details"]["causes"][0]["message"].as_str().unwrap_or("").to_string()
    };
    let mut sync_failed = synced(0, 3, 2);
    sync_failed["conditions"][0]["reason"] = json!("SyncFailed");
    sync_failed["conditions"][0]["message"] = json!("found no controllers for pod \"x\"");
    assert_eq!(
        cause(sync_failed),
        "The disruption budget p does not allow evicting pods currently because it failed sync: found no controllers for pod \"x\""
    );
    let mut other = synced(0, 3, 2);
    other["conditions"][0]["message"] = json!("why");
    assert_eq!(
        cause(other),
        "The disruption budget p does not allow evicting pods currently (InsufficientPods): why"
    );
    assert_eq!(cause(synced(0, 3, 2)), "The disruption budget p does not allow evicting pods currently");
}

#[test]
fn an_allowed_eviction_decrements_and_records_the_pod() {
    let pod = ready_pod("web-0");
    let plan = plan(decide_eviction(&prepared(false), &pod, &[pdb("web-pdb", synced(1, 3, 2))], ts(NOW)));
    let update = plan.pdb_update.unwrap_or_else(|| panic!("no PDB update"));
    assert_eq!((update.pdb_name.as_str(), update.resource_version.as_str()), ("web-pdb", "55"));
    assert_eq!(update.status["disruptionsAllowed"], 0);
    assert_eq!(update.status["disruptedPods"], json!({"web-0": NOW}));
    let condition = &update.status["conditions"][0];
    assert_eq!(
        (condition["status"].as_str(), condition["reason"].as_str()),
        (Some("False"), Some("InsufficientPods"))
    );
    assert_eq!(condition["lastTransitionTime"], NOW);
    assert_eq!(plan.delete_options, json!({}));
    assert!(!plan.dry_run);

    let dry = plan_of_dry_run(&pod);
    assert_eq!(dry.pdb_update, None, "dry run writes no PDB status");
    assert!(dry.dry_run);
}

fn plan_of_dry_run(pod: &Value) -> EvictionPlan {
    plan(decide_eviction(&prepared(true), pod, &[pdb("web-pdb", synced(1, 3, 2))], ts(NOW)))
}

#[test]
fn unready_pods_follow_the_unhealthy_pod_eviction_policy() {
    let mut pod = ready_pod("web-0");
    pod["status"]["conditions"][0]["status"] = json!("False");
    // (policy, status, evicted without decrement?)
    let cases = [
        (Some("AlwaysAllow"), synced(0, 1, 2), true),
        (None, synced(0, 1, 2), false),
        (Some("IfHealthyBudget"), synced(0, 1, 2), false),
        (Some("IfHealthyBudget"), synced(0, 2, 2), true),
        (None, synced(0, 0, 0), false),
    ];
    for (policy, status, bypass) in cases {
        let mut pdb = pdb("web-pdb", status);
        if let Some(p) = policy {
            pdb["spec"]["unhealthyPodEvictionPolicy"] = json!(p);
        }
        match decide_eviction(&prepared(false), &pod, &[pdb], ts(NOW)) {
            EvictionDecision::Evict(plan) if bypass => {
                assert_eq!(plan.pdb_update, None);
                assert_eq!(plan.delete_options["preconditions"]["resourceVersion"], "7");
                assert_eq!(plan.on_conflict, OnConflict::Respond(still_being_processed("web-pdb")));
            }
            EvictionDecision::Respond(r) if !bypass => assert_eq!(r.code, 429, "{policy:?}"),
            other => panic!("{policy:?}: unexpected {other:?}"),
        }
    }
}

#[test]
fn condition_write_checks_preconditions_and_upserts_disruption_target() {
    let pod = ready_pod("web-0");
    let updated = disruption_target_update(&pod, &json!({}), ts(NOW)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        updated["status"]["conditions"][1],
        json!({"type": "DisruptionTarget", "status": "True",
        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting", "lastTransitionTime": NOW})
    );
    let again =
        disruption_target_update(&updated, &json!({}), ts("2026-01-01T13:00:00Z")).unwrap_or_default();
    assert_eq!(
        again["status"]["conditions"][1]["lastTransitionTime"], NOW,
        "unchanged status keeps its time"
    );

    let uid = disruption_target_update(&pod, &json!({"preconditions": {"uid": "x"}}), ts(NOW)).err();
    assert_eq!(uid.map(|r| (r.code, r.message().to_string(), r.body["details"].clone())), Some((409,
        "Operation cannot be fulfilled on Pod \"web-0\": the UID in the precondition (x) does not match the UID in record (uid-web-0). The object might have been deleted and then recreated".to_string(),
        json!({"name": "web-0", "kind": "Pod"}))));
    let rv =
        disruption_target_update(&pod, &json!({"preconditions": {"resourceVersion": "6"}}), ts(NOW)).err();
    assert!(rv.is_some_and(|r| r.message().ends_with("the ResourceVersion in the precondition (6) does not match the ResourceVersion in record (7). The object might have been modified")));

    let moved = after_condition_write(&json!({"preconditions": {"resourceVersion": "7"}}), "8");
    assert_eq!(moved["preconditions"]["resourceVersion"], "8");
    assert_eq!(after_condition_write(&json!({}), "8"), json!({}));
}

#[test]
fn delete_preconditions_fail_with_the_storage_error() {
    let pod = ready_pod("web-0");
    assert_eq!(check_delete_preconditions(&pod, &json!({"preconditions": {"resourceVersion": "7"}})), Ok(()));
    let err = check_delete_preconditions(&pod, &json!({"preconditions": {"resourceVersion": "5"}})).err();
    assert_eq!(err.map(|r| r.message().to_string()), Some("Operation cannot be fulfilled on pods \"web-0\": StorageError: invalid object, Code: 4, Key: /registry/pods/prod/web-0, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 5, ResourceVersion in object meta: 7".to_string()));
}

#[test]
fn grace_period_rules() {
    let now = ts(NOW);
    let pod = ready_pod("web-0");
    let graceful = |s: i64, at: &str| PodDeletion::Graceful {
        grace_period_seconds: s,
        deletion_timestamp: at.to_string(),
    };
    assert_eq!(pod_deletion(&pod, &json!({}), now), graceful(30, "2026-01-01T12:00:30Z"));
    assert_eq!(
        pod_deletion(&pod, &json!({"gracePeriodSeconds": 5}), now),
        graceful(5, "2026-01-01T12:00:05Z")
    );
    assert_eq!(pod_deletion(&pod, &json!({"gracePeriodSeconds": 0}), now), PodDeletion::Immediate);
    assert_eq!(
        pod_deletion(&pod, &json!({"gracePeriodSeconds": -1}), now),
        graceful(1, "2026-01-01T12:00:01Z")
    );
    let mut unscheduled = pod.clone();
    unscheduled["spec"]["nodeName"] = json!("");
    assert_eq!(pod_deletion(&unscheduled, &json!({}), now), PodDeletion::Immediate);
    let mut finished = pod.clone();
    finished["status"]["phase"] = json!("Succeeded");
    assert_eq!(pod_deletion(&finished, &json!({}), now), PodDeletion::Immediate);
    let mut terminating = pod;
    terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T12:00:30Z");
    terminating["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    assert_eq!(pod_deletion(&terminating, &json!({}), now), PodDeletion::Pending);
    assert_eq!(pod_deletion(&terminating, &json!({"gracePeriodSeconds": 40}), now), PodDeletion::Pending);
    assert_eq!(
        pod_deletion(&terminating, &json!({"gracePeriodSeconds": 10}), now),
        graceful(10, "2026-01-01T12:00:10Z")
    );
}

/// Two evictions read the same PDB (budget 1); the second one's status write conflicts, it
/// re-reads the PDB as the handler does, and `check_and_decrement` then refuses with R3.
#[test]
fn a_conflicting_second_eviction_is_refused_after_the_re_read() {
    let pdb_v55 = pdb("web-pdb", synced(1, 3, 2));
    let first =
        plan(decide_eviction(&prepared(false), &ready_pod("web-0"), std::slice::from_ref(&pdb_v55), ts(NOW)));
    let second =
        plan(decide_eviction(&prepared(false), &ready_pod("web-1"), std::slice::from_ref(&pdb_v55), ts(NOW)));
    assert!(
        first.pdb_update.is_some() && second.pdb_update.is_some(),
        "both were computed from resourceVersion 55"
    );
    let mut pdb_v56 = pdb_v55;
    pdb_v56["status"] = first.pdb_update.map(|u| u.status).unwrap_or_default();
    pdb_v56["metadata"]["resourceVersion"] = json!("56");
    let retried = check_and_decrement(&pdb_v56, "web-1", false, ts(NOW));
    assert_eq!(retried.err().map(|r| (r.code, r.retry_after_seconds())), Some((429, None)));
}
