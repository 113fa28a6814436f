//! EvictionAutoScaler status: identical when nothing changed, and written at a drain's surge
//! and revert only (issue 19).

use super::status::{StatusFacts, needs_write, render};
use super::tests::{at, config, deployment, min_available, observed, surged};
use super::*;

#[test]
fn status_is_stable_when_nothing_changes() {
    let obs = observed(deployment(1, &[]), vec![min_available(1, 0)], 1);
    let p = plan(&obs, &config(), at(5));
    let facts = StatusFacts { target_replicas: 2, generation: Some(3), ..Default::default() };
    let first = render(None, &p, &facts, at(5));
    assert_eq!((first.min_replicas, first.surge_replicas), (Some(1), Some(1)));
    let second = render(Some(&first), &p, &facts, at(50));
    assert_eq!(first, second, "same situation, same status: no write");
}

/// A blocked single-replica drain as the status sees it: surge, the eviction recorded on the
/// EAS spec (a newer generation and lastEviction), held while the drain goes on, revert.
#[test]
fn a_drain_writes_the_status_twice() {
    let fresh = observed(deployment(1, &[]), vec![min_available(1, 0)], 1);
    let facts = |generation, target_replicas, pod: Option<&str>| StatusFacts {
        target_replicas,
        generation: Some(generation),
        last_eviction: pod.map(|p| eviction_autoscaler_shared::crd::Eviction {
            pod_name: p.into(),
            eviction_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(4))),
        }),
    };
    let idle = render(None, &plan(&fresh, &config(), at(1)), &facts(1, 1, None), at(1));

    let surge = plan(&fresh, &config(), at(5));
    let surging = render(Some(&idle), &surge, &facts(1, 2, None), at(5));
    assert!(needs_write(Some(&idle), &surging), "the surge is written");
    assert_eq!(surging.conditions[0].reason, "Surged");

    // The eviction lands on the EAS spec; the drain goes on: held, nothing else changed.
    let held_obs = observed(surged(2, 2, 1), vec![min_available(1, 1)], 1);
    let held = plan(&held_obs, &config(), at(8));
    assert_eq!(held.outcome, Outcome::Held);
    let acknowledged = render(Some(&surging), &held, &facts(2, 2, Some("web-1")), at(8));
    assert_ne!(acknowledged, surging, "it would acknowledge the eviction and the generation");
    assert!(!needs_write(Some(&surging), &acknowledged), "an acknowledgement alone waits for the revert");
    let later = plan(&Observed { any_node_draining: false, ..held_obs.clone() }, &config(), at(9));
    assert!(!needs_write(
        Some(&surging),
        &render(Some(&surging), &later, &facts(2, 2, Some("web-1")), at(9))
    ));

    let revert = plan(
        &Observed { displacement: Default::default(), any_node_draining: false, ..held_obs },
        &config(),
        at(500),
    );
    assert!(matches!(revert.outcome, Outcome::Reverted { .. }));
    let reverted = render(Some(&surging), &revert, &facts(2, 1, Some("web-1")), at(500));
    assert!(needs_write(Some(&surging), &reverted), "the revert is written");
    assert_eq!(
        reverted.last_eviction.as_ref().map(|e| e.pod_name.as_str()),
        Some("web-1"),
        "and acknowledges the eviction"
    );
    assert_eq!(reverted.observed_generation, Some(2));
}

#[test]
fn an_acknowledgement_is_written_at_once_when_no_surge_is_active() {
    let obs = observed(deployment(1, &[]), vec![min_available(1, 0)], 0);
    let p = plan(&obs, &config(), at(1));
    let before = render(
        None,
        &p,
        &StatusFacts { target_replicas: 1, generation: Some(1), ..Default::default() },
        at(1),
    );
    let after = render(
        Some(&before),
        &p,
        &StatusFacts { target_replicas: 1, generation: Some(2), ..Default::default() },
        at(2),
    );
    assert!(
        needs_write(Some(&before), &after),
        "a descheduler's eviction recorded on the spec is acknowledged"
    );
    assert!(!needs_write(Some(&after), &after.clone()));
    assert!(needs_write(None, &after));
}
