//! Property tests for the arithmetic a wrong answer of which costs an outage, each against a
//! model written here independently of the code under test (from the upstream formulas).
//! Seeded and with fixed case counts, so a run is repeatable; a counterexample found once is
//! kept as a named unit test next to the code, not in a regressions file.

use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::budget::{PodCounts, allows_disruption_at, budget_status, min_replicas_to_open};
use crate::drain::revert;
use crate::surge::{resolve_max_surge, surge_target};

fn config() -> Config {
    Config { cases: 2000, rng_seed: RngSeed::Fixed(20261203), failure_persistence: None, ..Config::default() }
}

/// `intstr.GetScaledValueFromIntOrPercent` as upstream writes it (float ceil/floor).
fn upstream_scaled(value: &IntOrString, total: i32, round_up: bool) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(text) => {
            let percent: f64 = text.trim_end_matches('%').parse().expect("generated percentages parse");
            let exact = percent * f64::from(total) / 100.0;
            (if round_up { exact.ceil() } else { exact.floor() }) as i32
        }
    }
}

/// The disruption controller's `getExpectedPodCount` and `disruptionsAllowed`
/// (pkg/controller/disruption/disruption.go): (expectedPods, desiredHealthy, allowed).
fn upstream_status(spec: &PodDisruptionBudgetSpec, scale: i32, pods: i32, healthy: i32) -> (i32, i32, i32) {
    let (expected, desired) = if let Some(max_unavailable) = &spec.max_unavailable {
        let unavailable = upstream_scaled(max_unavailable, scale, true);
        (scale, (scale - unavailable).max(0))
    } else if let Some(min_available) = &spec.min_available {
        match min_available {
            IntOrString::Int(n) => (pods, *n),
            IntOrString::String(_) => (scale, upstream_scaled(min_available, scale, true)),
        }
    } else {
        (0, 0)
    };
    let allowed = healthy - desired;
    (expected, desired, if expected <= 0 || allowed <= 0 { 0 } else { allowed })
}

/// A non-negative int or percentage, as validation admits them.
fn int_or_percent() -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        (0..200i32).prop_map(IntOrString::Int),
        (0..=300i32).prop_map(|p| IntOrString::String(format!("{p}%")))
    ]
}

fn budget_spec() -> impl Strategy<Value = PodDisruptionBudgetSpec> {
    (proptest::option::of(int_or_percent()), proptest::option::of(int_or_percent())).prop_map(
        |(min_available, max_unavailable)| PodDisruptionBudgetSpec {
            min_available,
            max_unavailable,
            ..PodDisruptionBudgetSpec::default()
        },
    )
}

proptest! {
    #![proptest_config(config())]

    /// Budget status equals the disruption controller's, for any spec and pod health.
    #[test]
    fn budget_status_is_the_disruption_controllers(
        spec in budget_spec(),
        scale in 0..500i32,
        pods in 0..500i32,
        healthy_share in 0..=100i32,
    ) {
        let healthy = pods * healthy_share / 100;
        let counts = PodCounts { controller_scale: scale, matched_pods: pods, healthy_pods: healthy };
        let status = budget_status(&spec, counts).expect("valid specs");
        let (expected, desired, allowed) = upstream_status(&spec, scale, pods, healthy);
        prop_assert_eq!(
            (status.expected_pods, status.desired_healthy, status.current_healthy, status.disruptions_allowed),
            (expected, desired, healthy, allowed)
        );
    }

    /// The smallest replica count that opens a budget opens it, one fewer does not, and none
    /// opens a budget for which `min_replicas_to_open` says so.
    #[test]
    fn min_replicas_to_open_is_the_least_opening_count(spec in budget_spec()) {
        let opening = (0..=700).find(|&n| allows_disruption_at(&spec, n).expect("valid specs"));
        match min_replicas_to_open(&spec).expect("valid specs") {
            // Percentages above 100 never open; every other budget opens by 700 replicas.
            Some(min) => prop_assert_eq!(Some(min), opening),
            None => prop_assert_eq!(opening, None),
        }
    }

    /// A surge never exceeds baseline + maxSurge (resolved against the baseline, rounded up)
    /// nor the autoscaler's maximum, never goes below the baseline, and adds exactly the
    /// displaced pods when those limits allow.
    #[test]
    fn a_surge_stays_within_max_surge_and_the_autoscaler_max(
        baseline in 0..1000i32,
        displaced in 0..1000i32,
        max_surge in int_or_percent(),
        autoscaler_max in proptest::option::of(0..2000i32),
    ) {
        let strategy = DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment { max_surge: Some(max_surge.clone()), max_unavailable: None }),
        };
        let Ok(resolved) = resolve_max_surge(Some(&strategy), baseline, None) else {
            // Only a zero maxSurge, with no override, cannot surge.
            prop_assert_eq!(upstream_scaled(&max_surge, 100, true), 0);
            return Ok(());
        };
        let allowed = upstream_scaled(&max_surge, baseline, true);
        prop_assert_eq!(resolved.amount, allowed);
        let target = surge_target(baseline, displaced, resolved.amount, autoscaler_max);
        let ceiling = autoscaler_max.map_or(i32::MAX, |max| max.max(baseline));
        prop_assert!(target >= baseline);
        prop_assert!(target <= baseline + allowed);
        prop_assert!(target <= ceiling);
        prop_assert_eq!(target, (baseline + displaced.min(allowed)).min(ceiling));
    }

    /// A revert puts back exactly the baseline while our surge value is still there, and
    /// keeps a value someone else wrote since.
    #[test]
    fn a_revert_restores_the_baseline_or_keeps_a_later_value(
        baseline in 1..1000i32,
        surge in 1..500i32,
        later in proptest::option::of(0..2000i32),
    ) {
        let surge_value = baseline + surge;
        let current = later.unwrap_or(surge_value);
        let after = revert(current, surge_value, baseline).replicas.unwrap_or(current);
        let expected = match later {
            Some(value) if value != surge_value => value,
            _ => baseline,
        };
        prop_assert_eq!(after, expected);
    }
}
