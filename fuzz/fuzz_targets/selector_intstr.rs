//! Label selectors (any keys, operators and values) against any labels, and int-or-percent
//! values (`maxSurge`, `minAvailable`, `maxUnavailable`, the zero-surge override) against any
//! replica counts: parsing is total and the arithmetic keeps its promises.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use eviction_autoscaler_fuzz::{IntOrPercent, check_budget};
use eviction_autoscaler_shared::budget::{PodCounts, budget_status, parse_percent, scaled};
use eviction_autoscaler_shared::selector::{matches, pdb_covers_template, query, validate};
use eviction_autoscaler_shared::surge::{resolve_max_surge, surge_target};
use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Text {
    Known(u8),
    Any(String),
}

const WORDS: [&str; 8] = ["app", "web", "", "In", "NotIn", "Exists", "DoesNotExist", "a.b/c"];

impl Text {
    fn get(&self) -> String {
        match self {
            Self::Known(i) => WORDS[usize::from(*i) % WORDS.len()].to_owned(),
            Self::Any(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Requirement {
    key: Text,
    operator: Text,
    values: Option<Vec<Text>>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    match_labels: Option<Vec<(Text, Text)>>,
    expressions: Option<Vec<Requirement>>,
    labels: Vec<(Text, Text)>,
    value: IntOrPercent,
    other: Option<IntOrPercent>,
    total: i32,
    counts: (i32, i32, i32),
    displaced: i32,
    autoscaler_max: Option<i32>,
    recreate: bool,
}

fuzz_target!(|input: Input| {
    let selector = LabelSelector {
        match_labels: input
            .match_labels
            .as_ref()
            .map(|pairs| pairs.iter().map(|(k, v)| (k.get(), v.get())).collect()),
        match_expressions: input.expressions.as_ref().map(|all| {
            all.iter()
                .map(|r| LabelSelectorRequirement {
                    key: r.key.get(),
                    operator: r.operator.get(),
                    values: r.values.as_ref().map(|v| v.iter().map(Text::get).collect()),
                })
                .collect()
        }),
    };
    let labels: BTreeMap<String, String> = input.labels.iter().map(|(k, v)| (k.get(), v.get())).collect();
    // A selector is valid exactly when it can be evaluated and written as a query.
    let valid = validate(&selector);
    assert_eq!(valid.is_ok(), matches(&selector, &labels).is_ok());
    assert_eq!(valid.is_ok(), query(&selector).is_ok());
    if let Err(error) = &valid {
        assert!(!error.to_string().is_empty());
    }
    let _ = pdb_covers_template(Some(&selector), Some(&labels));

    let value = input.value.value();
    if let IntOrString::String(text) = &value
        && let Ok(percent) = parse_percent(text)
    {
        assert!(percent >= 0);
    }
    match (scaled(&value, input.total, true), scaled(&value, input.total, false)) {
        (Ok(up), Ok(down)) => {
            assert!(down >= 0 && up >= down, "{value:?} of {}: {down}..{up}", input.total);
            if matches!(value, IntOrString::String(_)) {
                assert!(up - down <= 1);
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (up, down) => panic!("rounding changed validity: {up:?} {down:?}"),
    }

    let (scale, matched, healthy) = input.counts;
    let counts = PodCounts { controller_scale: scale, matched_pods: matched, healthy_pods: healthy };
    let other = input.other.as_ref().map(IntOrPercent::value);
    for spec in [
        PodDisruptionBudgetSpec {
            min_available: Some(value.clone()),
            max_unavailable: other.clone(),
            ..Default::default()
        },
        PodDisruptionBudgetSpec {
            min_available: other.clone(),
            max_unavailable: Some(value.clone()),
            ..Default::default()
        },
    ] {
        if let Ok(status) = budget_status(&spec, counts) {
            assert!(status.disruptions_allowed >= 0);
            assert!(status.disruptions_allowed <= healthy.max(0));
        }
        check_budget(&PodDisruptionBudget { spec: Some(spec), ..Default::default() });
    }

    let strategy = DeploymentStrategy {
        type_: Some(if input.recreate { "Recreate" } else { "RollingUpdate" }.into()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(value.clone()),
            ..Default::default()
        }),
    };
    if let Ok(surge) = resolve_max_surge(Some(&strategy), input.total, other.as_ref()) {
        assert!(surge.amount >= 0);
        let target = surge_target(input.total, input.displaced, surge.amount, input.autoscaler_max);
        let baseline = input.total.max(0);
        assert!(target >= baseline, "a surge never scales down");
        assert!(i64::from(target) <= i64::from(baseline) + i64::from(surge.amount));
        if let Some(max) = input.autoscaler_max {
            assert!(target <= max.max(baseline));
        }
    }
});
