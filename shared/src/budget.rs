//! PodDisruptionBudget arithmetic, computed exactly as the Kubernetes disruption controller
//! computes a PDB's status (`getExpectedPodCount`, `disruptionsAllowed`), plus the two
//! questions the surge controller asks of a budget: "would it allow a disruption at N Ready
//! replicas?" and "what is the smallest N at which it does?".
//!
//! Upstream rounds percentages UP for both `minAvailable` and `maxUnavailable` (the opposite
//! of a Deployment's `maxUnavailable`), so a percentage budget never allows more than asked.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Whether the budgets covering a pod refuse its eviction now: exactly one covers it and its
/// status allows no disruption (no status yet counts as none allowed, as the apiserver's
/// eviction check does). Pods under two or more budgets are refused by the apiserver anyway and
/// never surged for.
pub fn blocks_eviction(covering: &[PodDisruptionBudget]) -> bool {
    matches!(covering, [p] if p.status.as_ref().map_or(0, |s| s.disruptions_allowed) == 0)
}

/// An int-or-percent value that cannot be scaled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScaleError {
    /// A string that is not `<integer>%` (for example `"10"` or `"abc%"`).
    #[error("{0:?} is neither an integer nor a percentage such as \"25%\"")]
    Malformed(String),
    /// A negative integer or percentage.
    #[error("{0} is negative")]
    Negative(String),
}

/// A PDB field whose value cannot be used (validation normally prevents this).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PodDisruptionBudget spec.{field}: {problem}")]
pub struct BudgetError {
    /// `minAvailable` or `maxUnavailable`.
    pub field: &'static str,
    /// What is wrong with its value.
    pub problem: ScaleError,
}

/// Parses `"<n>%"` into `n` (≥ 0). Anything else, including a bare number, is an error.
pub fn parse_percent(value: &str) -> Result<i32, ScaleError> {
    let malformed = || ScaleError::Malformed(value.to_owned());
    let digits = value.strip_suffix('%').ok_or_else(malformed)?;
    let percent: i32 = digits.parse().map_err(|_| malformed())?;
    if percent < 0 {
        return Err(ScaleError::Negative(value.to_owned()));
    }
    Ok(percent)
}

/// `intstr.GetScaledValueFromIntOrPercent`: an integer as is, a percentage of `total`
/// rounded up (`round_up`) or down. Stricter than upstream: negatives are errors.
/// A negative `total` counts as 0; a result beyond `i32::MAX` saturates.
pub fn scaled(value: &IntOrString, total: i32, round_up: bool) -> Result<i32, ScaleError> {
    match value {
        IntOrString::Int(n) if *n < 0 => Err(ScaleError::Negative(n.to_string())),
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(text) => {
            let percent = parse_percent(text)?;
            // i64: total × percent cannot overflow it.
            let product = i64::from(total.max(0)) * i64::from(percent);
            let result = if round_up { (product + 99) / 100 } else { product / 100 };
            Ok(i32::try_from(result).unwrap_or(i32::MAX))
        }
    }
}

/// The pod counts the disruption controller derives from the pods a PDB selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodCounts {
    /// Σ `spec.replicas` over the distinct controllers of the selected pods (a Deployment's
    /// replicas for its pods; bare pods add nothing): upstream `getExpectedScale`.
    pub controller_scale: i32,
    /// Every selected pod, whatever its phase or state: upstream `len(pods)`.
    pub matched_pods: i32,
    /// Selected pods that are Ready, not terminating and not recently evicted.
    pub healthy_pods: i32,
}

impl PodCounts {
    /// N replicas of one controller, all running, Ready and selected.
    pub fn all_ready(replicas: i32) -> Self {
        let replicas = replicas.max(0);
        Self { controller_scale: replicas, matched_pods: replicas, healthy_pods: replicas }
    }
}

/// The status fields the disruption controller writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetStatus {
    /// `status.expectedPods`.
    pub expected_pods: i32,
    /// `status.desiredHealthy`.
    pub desired_healthy: i32,
    /// `status.currentHealthy`.
    pub current_healthy: i32,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
}

fn in_field(field: &'static str) -> impl Fn(ScaleError) -> BudgetError {
    move |problem| BudgetError { field, problem }
}

/// The disruption controller's status for `spec` given the pods it selects.
///
/// `maxUnavailable` is looked at first, as upstream does (validation forbids setting both).
/// Integer `minAvailable` counts selected pods; everything else counts controller replicas.
pub fn budget_status(spec: &PodDisruptionBudgetSpec, counts: PodCounts) -> Result<BudgetStatus, BudgetError> {
    let (expected_pods, desired_healthy) = if let Some(max_unavailable) = &spec.max_unavailable {
        let expected = counts.controller_scale;
        let unavailable = scaled(max_unavailable, expected, true).map_err(in_field("maxUnavailable"))?;
        (expected, expected.saturating_sub(unavailable).max(0))
    } else if let Some(min_available) = &spec.min_available {
        let expected = match min_available {
            IntOrString::Int(_) => counts.matched_pods,
            IntOrString::String(_) => counts.controller_scale,
        };
        let desired = scaled(min_available, expected, true).map_err(in_field("minAvailable"))?;
        (expected, desired)
    } else {
        (0, 0)
    };
    let disruptions_allowed =
        if expected_pods <= 0 { 0 } else { counts.healthy_pods.saturating_sub(desired_healthy).max(0) };
    Ok(BudgetStatus {
        expected_pods,
        desired_healthy,
        current_healthy: counts.healthy_pods,
        disruptions_allowed,
    })
}

/// `desiredHealthy` if the budget's Deployment had `replicas` Ready replicas.
pub fn desired_healthy_at(spec: &PodDisruptionBudgetSpec, replicas: i32) -> Result<i32, BudgetError> {
    Ok(budget_status(spec, PodCounts::all_ready(replicas))?.desired_healthy)
}

/// Would this PDB allow a disruption if its Deployment had `replicas` Ready replicas (and the
/// PDB selected exactly those pods)? Never for `maxUnavailable: 0` or `minAvailable: 100%`.
pub fn allows_disruption_at(spec: &PodDisruptionBudgetSpec, replicas: i32) -> Result<bool, BudgetError> {
    Ok(budget_status(spec, PodCounts::all_ready(replicas))?.disruptions_allowed > 0)
}

/// The smallest replica count at which [`allows_disruption_at`] is true, or `None` when no
/// count opens the budget (it scales with replicas, or sets neither field). Every larger
/// count opens it too, so "can a surge to T open it?" is `min <= T`.
pub fn min_replicas_to_open(spec: &PodDisruptionBudgetSpec) -> Result<Option<i32>, BudgetError> {
    if let Some(max_unavailable) = &spec.max_unavailable {
        // At N ≥ 1 an int k > 0 allows min(N, k) and p% > 0 allows ceil(N·p/100) ≥ 1.
        let opens = match max_unavailable {
            IntOrString::Int(_) => scaled(max_unavailable, 1, true),
            IntOrString::String(text) => parse_percent(text),
        }
        .map_err(in_field("maxUnavailable"))?
            > 0;
        return Ok(opens.then_some(1));
    }
    let Some(min_available) = &spec.min_available else {
        return Ok(None);
    };
    match min_available {
        IntOrString::Int(_) => {
            let floor = scaled(min_available, 0, true).map_err(in_field("minAvailable"))?;
            Ok(floor.checked_add(1))
        }
        IntOrString::String(text) => {
            let percent = parse_percent(text).map_err(in_field("minAvailable"))?;
            if percent >= 100 {
                return Ok(None);
            }
            // N − ceil(N·p/100) ≥ 1  ⇔  N·(100 − p) ≥ 100  ⇔  N ≥ ceil(100 / (100 − p)).
            let spare = 100 - percent;
            Ok(Some((100 + spare - 1) / spare))
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }

    pub(crate) fn text(s: &str) -> IntOrString {
        IntOrString::String(s.to_owned())
    }

    pub(crate) fn min_available(v: IntOrString) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec { min_available: Some(v), ..Default::default() }
    }

    pub(crate) fn max_unavailable(v: IntOrString) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec { max_unavailable: Some(v), ..Default::default() }
    }

    #[test]
    fn only_a_single_closed_budget_blocks_an_eviction() {
        use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
        let with = |allowed: Option<i32>| PodDisruptionBudget {
            status: allowed
                .map(|n| PodDisruptionBudgetStatus { disruptions_allowed: n, ..Default::default() }),
            ..Default::default()
        };
        assert!(blocks_eviction(&[with(Some(0))]), "one budget at 0");
        assert!(blocks_eviction(&[with(None)]), "no status yet counts as none allowed");
        assert!(!blocks_eviction(&[with(Some(1))]), "a disruption allowed");
        assert!(!blocks_eviction(&[]), "no budget");
        assert!(!blocks_eviction(&[with(Some(0)), with(Some(0))]), "two budgets: never surged for");
    }

    #[test]
    fn scaled_values_round_as_upstream() {
        /// name, value, total, round up, expected.
        type Row = (&'static str, IntOrString, i32, bool, Result<i32, ScaleError>);
        let cases: [Row; 22] = [
            ("int passes through", int(5), 3, true, Ok(5)),
            ("int zero", int(0), 3, true, Ok(0)),
            ("25% of 10 up", text("25%"), 10, true, Ok(3)),
            ("25% of 10 down", text("25%"), 10, false, Ok(2)),
            ("33% of 3 up", text("33%"), 3, true, Ok(1)),
            ("33% of 3 down", text("33%"), 3, false, Ok(0)),
            ("33% of 10 up", text("33%"), 10, true, Ok(4)),
            ("50% of 3 up", text("50%"), 3, true, Ok(2)),
            ("50% of 1 up", text("50%"), 1, true, Ok(1)),
            ("100% of 3", text("100%"), 3, true, Ok(3)),
            ("25% of 1 up", text("25%"), 1, true, Ok(1)),
            ("25% of 1 down", text("25%"), 1, false, Ok(0)),
            ("25% of 0", text("25%"), 0, true, Ok(0)),
            ("200% of 3", text("200%"), 3, true, Ok(6)),
            ("huge saturates", text("200%"), i32::MAX, true, Ok(i32::MAX)),
            ("bare number string", text("10"), 3, true, Err(ScaleError::Malformed("10".into()))),
            ("garbage percent", text("abc%"), 3, true, Err(ScaleError::Malformed("abc%".into()))),
            ("lone percent sign", text("%"), 3, true, Err(ScaleError::Malformed("%".into()))),
            ("space inside", text("25 %"), 3, true, Err(ScaleError::Malformed("25 %".into()))),
            ("empty string", text(""), 3, true, Err(ScaleError::Malformed(String::new()))),
            ("negative percent", text("-1%"), 3, true, Err(ScaleError::Negative("-1%".into()))),
            ("negative int", int(-1), 3, true, Err(ScaleError::Negative("-1".into()))),
        ];
        for (name, value, total, round_up, want) in cases {
            assert_eq!(scaled(&value, total, round_up), want, "{name}");
        }
    }

    /// The worked examples of the Kubernetes docs ("Specifying a Disruption Budget"), literally.
    #[test]
    fn worked_examples_of_the_disruption_controller() {
        let counts = |controller_scale, matched_pods, healthy_pods| PodCounts {
            controller_scale,
            matched_pods,
            healthy_pods,
        };
        let status = |expected_pods, desired_healthy, current_healthy, disruptions_allowed| BudgetStatus {
            expected_pods,
            desired_healthy,
            current_healthy,
            disruptions_allowed,
        };
        let cases = [
            ("A minAvailable 2", min_available(int(2)), counts(3, 3, 3), status(3, 2, 3, 1)),
            ("B maxUnavailable 1", max_unavailable(int(1)), counts(3, 3, 3), status(3, 2, 3, 1)),
            ("C minAvailable 25%", min_available(text("25%")), counts(10, 10, 10), status(10, 3, 10, 7)),
            ("D maxUnavailable 25%", max_unavailable(text("25%")), counts(10, 10, 10), status(10, 7, 10, 3)),
            ("E maxUnavailable 50%", max_unavailable(text("50%")), counts(3, 3, 3), status(3, 1, 3, 2)),
            ("F minAvailable 100%", min_available(text("100%")), counts(3, 3, 3), status(3, 3, 3, 0)),
            ("G surge, maxUnavailable 1", max_unavailable(int(1)), counts(3, 4, 4), status(3, 2, 4, 2)),
            ("H surge, minAvailable 2", min_available(int(2)), counts(3, 4, 4), status(4, 2, 4, 2)),
            ("I one just evicted", min_available(int(2)), counts(3, 3, 2), status(3, 2, 2, 0)),
            ("J bare pods, maxUnavailable", max_unavailable(int(1)), counts(0, 3, 3), status(0, 0, 3, 0)),
            ("K bare pods, minAvailable", min_available(int(2)), counts(0, 3, 3), status(3, 2, 3, 1)),
            ("L replicas 0", min_available(int(1)), counts(0, 0, 0), status(0, 1, 0, 0)),
            ("neither field", PodDisruptionBudgetSpec::default(), counts(3, 3, 3), status(0, 0, 3, 0)),
        ];
        for (name, spec, counts, want) in cases {
            assert_eq!(budget_status(&spec, counts), Ok(want), "{name}");
        }
    }

    #[test]
    fn invalid_budget_values_name_the_field() {
        let cases = [
            (
                "minAvailable bare string",
                min_available(text("2")),
                "minAvailable",
                ScaleError::Malformed("2".into()),
            ),
            (
                "maxUnavailable garbage",
                max_unavailable(text("x%")),
                "maxUnavailable",
                ScaleError::Malformed("x%".into()),
            ),
            (
                "minAvailable negative",
                min_available(int(-2)),
                "minAvailable",
                ScaleError::Negative("-2".into()),
            ),
        ];
        for (name, spec, field, problem) in cases {
            let want = BudgetError { field, problem };
            assert_eq!(budget_status(&spec, PodCounts::all_ready(3)).as_ref(), Err(&want), "{name}");
            assert_eq!(min_replicas_to_open(&spec).as_ref(), Err(&want), "{name}");
            assert!(want.to_string().contains(field), "{name}: {want}");
        }
    }

    #[test]
    fn disruption_at_replica_counts() {
        let cases = [
            (
                "maxUnavailable 0 never",
                max_unavailable(int(0)),
                vec![(0, false), (1, false), (3, false), (100, false)],
            ),
            ("maxUnavailable 0% never", max_unavailable(text("0%")), vec![(1, false), (10, false)]),
            (
                "minAvailable 100% never",
                min_available(text("100%")),
                vec![(0, false), (1, false), (3, false), (100, false)],
            ),
            (
                "minAvailable 2 from 3",
                min_available(int(2)),
                vec![(0, false), (2, false), (3, true), (4, true)],
            ),
            ("minAvailable 0 from 1", min_available(int(0)), vec![(0, false), (1, true)]),
            ("maxUnavailable 1 from 1", max_unavailable(int(1)), vec![(0, false), (1, true), (5, true)]),
            ("maxUnavailable 25% from 1", max_unavailable(text("25%")), vec![(0, false), (1, true)]),
            ("minAvailable 25% from 2", min_available(text("25%")), vec![(1, false), (2, true)]),
            ("minAvailable 33% from 2", min_available(text("33%")), vec![(1, false), (2, true)]),
            ("minAvailable 50% from 2", min_available(text("50%")), vec![(1, false), (2, true), (3, true)]),
            ("minAvailable 99% from 100", min_available(text("99%")), vec![(99, false), (100, true)]),
            ("neither field never", PodDisruptionBudgetSpec::default(), vec![(1, false), (10, false)]),
        ];
        for (name, spec, points) in cases {
            for (replicas, want) in points {
                assert_eq!(allows_disruption_at(&spec, replicas), Ok(want), "{name} at {replicas}");
            }
        }
    }

    #[test]
    fn smallest_count_that_opens_a_budget() {
        let cases = [
            ("maxUnavailable 0", max_unavailable(int(0)), None),
            ("maxUnavailable 0%", max_unavailable(text("0%")), None),
            ("minAvailable 100%", min_available(text("100%")), None),
            ("neither field", PodDisruptionBudgetSpec::default(), None),
            ("minAvailable 3", min_available(int(3)), Some(4)),
            ("minAvailable max int", min_available(int(i32::MAX)), None),
            ("maxUnavailable 2", max_unavailable(int(2)), Some(1)),
            ("maxUnavailable 1%", max_unavailable(text("1%")), Some(1)),
            ("minAvailable 0%", min_available(text("0%")), Some(1)),
            ("minAvailable 34%", min_available(text("34%")), Some(2)),
            ("minAvailable 75%", min_available(text("75%")), Some(4)),
            ("minAvailable 90%", min_available(text("90%")), Some(10)),
        ];
        for (name, spec, want) in cases {
            assert_eq!(min_replicas_to_open(&spec), Ok(want), "{name}");
        }
    }

    /// Property, exhaustively over small budgets: the closed form agrees with a search, and
    /// once a count opens a budget every larger count does too (a surge never closes it).
    #[test]
    fn min_replicas_to_open_matches_a_search_and_is_monotone() {
        let mut specs = Vec::new();
        for n in 0..=12 {
            specs.push(min_available(int(n)));
            specs.push(max_unavailable(int(n)));
        }
        for p in 0..=100 {
            specs.push(min_available(text(&format!("{p}%"))));
            specs.push(max_unavailable(text(&format!("{p}%"))));
        }
        for spec in specs {
            let Ok(closed_form) = min_replicas_to_open(&spec) else {
                panic!("valid spec {spec:?} rejected");
            };
            let mut first_open = None;
            for replicas in 0..=120 {
                let Ok(open) = allows_disruption_at(&spec, replicas) else {
                    panic!("valid spec {spec:?} rejected at {replicas}");
                };
                match first_open {
                    None if open => first_open = Some(replicas),
                    Some(first) => {
                        assert!(open, "{spec:?} open at {first} but closed at {replicas}")
                    }
                    None => {}
                }
            }
            assert_eq!(closed_form, first_open, "{spec:?}");
        }
    }

    #[test]
    fn desired_healthy_at_the_baseline() {
        let cases = [
            ("minAvailable 25% of 10", min_available(text("25%")), 10, 3),
            ("maxUnavailable 25% of 10", max_unavailable(text("25%")), 10, 7),
            ("maxUnavailable 5 of 3 clamps", max_unavailable(int(5)), 3, 0),
            ("minAvailable 2 at 0", min_available(int(2)), 0, 2),
        ];
        for (name, spec, replicas, want) in cases {
            assert_eq!(desired_healthy_at(&spec, replicas), Ok(want), "{name}");
        }
    }
}
