//! Surge arithmetic: how far a Deployment may be scaled above its baseline while a drain
//! displaces its pods, and the `minAvailable` of the default PDB we create for it.
//!
//! The surge size is the Deployment's own rolling-update `maxSurge`, resolved against the
//! BASELINE (not the current, possibly surged, replicas) and rounded up, as the Go project
//! does. A Deployment that can never surge (`Recreate`, `maxSurge: 0`) surges by the
//! configured zero-surge override or not at all.

use k8s_openapi::api::apps::v1::DeploymentStrategy;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::budget::{ScaleError, scaled};

/// The Kubernetes default `maxSurge` (and `maxUnavailable`) of a rolling update.
pub const DEFAULT_MAX_SURGE: &str = "25%";

/// Why no surge size could be resolved. [`SurgeError::reason`] is the EAS `Degraded` reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SurgeError {
    /// The Deployment cannot surge by its own strategy and no override applies.
    #[error(
        "the Deployment cannot surge: {cause}; set a rolling-update maxSurge above 0 or configure the zero-surge override"
    )]
    Unsupported {
        /// What makes the surge zero, e.g. `strategy is Recreate` or `maxSurge is "0%"`.
        cause: String,
    },
    /// `spec.strategy.rollingUpdate.maxSurge` is negative or malformed.
    #[error("invalid maxSurge: {0}")]
    InvalidMaxSurge(ScaleError),
    /// The zero-surge override is negative or malformed.
    #[error("invalid zero-surge override: {0}")]
    InvalidOverride(ScaleError),
    /// `spec.strategy.type` is neither `RollingUpdate` nor `Recreate`.
    #[error("unknown Deployment strategy type {0:?}; expected RollingUpdate or Recreate")]
    UnknownStrategy(String),
}

impl SurgeError {
    /// The `Degraded` condition reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            SurgeError::Unsupported { .. } => "UnsupportedSurgeConfiguration",
            _ => "InvalidSurgeConfiguration",
        }
    }
}

/// A resolved surge size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedSurge {
    /// Replicas that may be added above the baseline (≥ 0; 0 only for a baseline of 0).
    pub amount: i32,
    /// True when the zero-surge override, not the Deployment's strategy, gave the amount.
    pub from_override: bool,
}

/// Renders an int-or-string the way users wrote it: strings quoted, integers bare.
fn describe(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => format!("{s:?}"),
    }
}

/// `maxSurge` as written in the strategy: `None` for `Recreate` (which never surges),
/// the default 25% when the strategy, its `rollingUpdate` or its `maxSurge` is absent.
fn strategy_max_surge(strategy: Option<&DeploymentStrategy>) -> Result<Option<IntOrString>, SurgeError> {
    let Some(strategy) = strategy else {
        return Ok(Some(IntOrString::String(DEFAULT_MAX_SURGE.to_owned())));
    };
    match strategy.type_.as_deref() {
        Some("Recreate") => Ok(None),
        None | Some("RollingUpdate") => Ok(Some(
            strategy
                .rolling_update
                .as_ref()
                .and_then(|rolling| rolling.max_surge.clone())
                .unwrap_or_else(|| IntOrString::String(DEFAULT_MAX_SURGE.to_owned())),
        )),
        Some(other) => Err(SurgeError::UnknownStrategy(other.to_owned())),
    }
}

/// Resolves how many replicas a Deployment with `strategy` may surge above `baseline`:
/// an integer as is, a percentage of the baseline rounded up, absent → 25%. A strategy that
/// resolves to zero (`Recreate`, `0`, `"0%"`) uses `zero_surge_override` (int or percent of
/// the baseline, rounded up), else fails with [`SurgeError::Unsupported`].
pub fn resolve_max_surge(
    strategy: Option<&DeploymentStrategy>,
    baseline: i32,
    zero_surge_override: Option<&IntOrString>,
) -> Result<ResolvedSurge, SurgeError> {
    let cause = match strategy_max_surge(strategy)? {
        None => "strategy is Recreate".to_owned(),
        Some(max_surge) => {
            // Zero-ness is a property of the value, not of the baseline: 25% of 0 is no error.
            if is_zero(&max_surge).map_err(SurgeError::InvalidMaxSurge)? {
                format!("maxSurge is {}", describe(&max_surge))
            } else {
                let amount = scaled(&max_surge, baseline, true).map_err(SurgeError::InvalidMaxSurge)?;
                return Ok(ResolvedSurge { amount, from_override: false });
            }
        }
    };
    let Some(override_value) = zero_surge_override else {
        return Err(SurgeError::Unsupported { cause });
    };
    if is_zero(override_value).map_err(SurgeError::InvalidOverride)? {
        return Err(SurgeError::Unsupported {
            cause: format!("{cause} and the zero-surge override is {}", describe(override_value)),
        });
    }
    let amount = scaled(override_value, baseline, true).map_err(SurgeError::InvalidOverride)?;
    Ok(ResolvedSurge { amount, from_override: true })
}

/// True for `0` and `"0%"`; errors for negative or malformed values.
fn is_zero(value: &IntOrString) -> Result<bool, ScaleError> {
    // Scaling against 100 turns a percentage into its own number.
    Ok(scaled(value, 100, true)? == 0)
}

/// Parses the zero-surge override setting like the Go project's `ZERO_SURGE_OVERRIDE`:
/// an integer (`"2"`) or a percentage (`"50%"`); `""`, `"0"` and `"0%"` mean off (`None`);
/// negative or malformed values are errors naming the value.
pub fn parse_zero_surge_override(raw: &str) -> Result<Option<IntOrString>, SurgeError> {
    if raw.is_empty() {
        return Ok(None);
    }
    let value = match raw.parse::<i32>() {
        Ok(n) => IntOrString::Int(n),
        Err(_) => IntOrString::String(raw.to_owned()),
    };
    if is_zero(&value).map_err(SurgeError::InvalidOverride)? { Ok(None) } else { Ok(Some(value)) }
}

/// The replica count to surge to: `min(baseline + displaced, baseline + max_surge)`, capped
/// at the HPA/KEDA maximum when there is one, but never below the baseline (a surge never
/// scales down). Negative inputs count as 0; sums saturate.
pub fn surge_target(baseline: i32, displaced: i32, max_surge: i32, autoscaler_max: Option<i32>) -> i32 {
    let baseline = baseline.max(0);
    let extra = displaced.max(0).min(max_surge.max(0));
    let target = baseline.saturating_add(extra);
    match autoscaler_max {
        Some(max) => target.min(max.max(baseline)),
        None => target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::RollingUpdateDeployment;

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }

    fn text(s: &str) -> IntOrString {
        IntOrString::String(s.to_owned())
    }

    fn rolling(max_surge: Option<IntOrString>) -> Option<DeploymentStrategy> {
        Some(DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment { max_surge, max_unavailable: Some(int(0)) }),
        })
    }

    fn recreate() -> Option<DeploymentStrategy> {
        Some(DeploymentStrategy { type_: Some("Recreate".into()), rolling_update: None })
    }

    fn surge(amount: i32) -> Result<ResolvedSurge, SurgeError> {
        Ok(ResolvedSurge { amount, from_override: false })
    }

    fn overridden(amount: i32) -> Result<ResolvedSurge, SurgeError> {
        Ok(ResolvedSurge { amount, from_override: true })
    }

    fn unsupported(cause: &str) -> Result<ResolvedSurge, SurgeError> {
        Err(SurgeError::Unsupported { cause: cause.into() })
    }

    #[test]
    fn max_surge_resolution() {
        let no_rolling_update = Some(DeploymentStrategy { type_: None, rolling_update: None });
        let malformed = |s: &str| ScaleError::Malformed(s.into());
        let negative = |s: &str| ScaleError::Negative(s.into());
        /// name, strategy, baseline, zero-surge override, expected.
        type Row = (
            &'static str,
            Option<DeploymentStrategy>,
            i32,
            Option<IntOrString>,
            Result<ResolvedSurge, SurgeError>,
        );
        let cases: Vec<Row> = vec![
            ("int 1 on 2", rolling(Some(int(1))), 2, None, surge(1)),
            ("int above baseline", rolling(Some(int(5))), 2, None, surge(5)),
            ("25% of 3 rounds up", rolling(Some(text("25%"))), 3, None, surge(1)),
            ("25% of 1 rounds up", rolling(Some(text("25%"))), 1, None, surge(1)),
            ("25% of 10 rounds up", rolling(Some(text("25%"))), 10, None, surge(3)),
            ("33% of 3 rounds up", rolling(Some(text("33%"))), 3, None, surge(1)),
            ("33% of 10 rounds up", rolling(Some(text("33%"))), 10, None, surge(4)),
            ("50% of 1 rounds up", rolling(Some(text("50%"))), 1, None, surge(1)),
            ("50% of 3 rounds up", rolling(Some(text("50%"))), 3, None, surge(2)),
            ("100% of 3", rolling(Some(text("100%"))), 3, None, surge(3)),
            ("25% of baseline 0", rolling(Some(text("25%"))), 0, None, surge(0)),
            ("no strategy: 25%", None, 3, None, surge(1)),
            ("no strategy, baseline 1", None, 1, None, surge(1)),
            ("no rollingUpdate: 25%", no_rolling_update, 8, None, surge(2)),
            ("no maxSurge: 25%", rolling(None), 3, None, surge(1)),
            ("override ignored when maxSurge > 0", rolling(Some(int(1))), 3, Some(int(5)), surge(1)),
            ("Recreate without override", recreate(), 3, None, unsupported("strategy is Recreate")),
            ("maxSurge 0 without override", rolling(Some(int(0))), 3, None, unsupported("maxSurge is 0")),
            (
                "maxSurge 0% without override",
                rolling(Some(text("0%"))),
                3,
                None,
                unsupported("maxSurge is \"0%\""),
            ),
            ("Recreate, override 1", recreate(), 3, Some(int(1)), overridden(1)),
            ("Recreate, override 50% of 3", recreate(), 3, Some(text("50%")), overridden(2)),
            ("maxSurge 0, override 25% of 1", rolling(Some(int(0))), 1, Some(text("25%")), overridden(1)),
            ("maxSurge 0%, override 2", rolling(Some(text("0%"))), 3, Some(int(2)), overridden(2)),
            (
                "override 0 is no override",
                recreate(),
                3,
                Some(int(0)),
                unsupported("strategy is Recreate and the zero-surge override is 0"),
            ),
            (
                "string without %",
                rolling(Some(text("10"))),
                3,
                None,
                Err(SurgeError::InvalidMaxSurge(malformed("10"))),
            ),
            (
                "garbage percent",
                rolling(Some(text("abc%"))),
                3,
                None,
                Err(SurgeError::InvalidMaxSurge(malformed("abc%"))),
            ),
            (
                "negative int",
                rolling(Some(int(-1))),
                3,
                None,
                Err(SurgeError::InvalidMaxSurge(negative("-1"))),
            ),
            (
                "negative percent",
                rolling(Some(text("-10%"))),
                3,
                None,
                Err(SurgeError::InvalidMaxSurge(negative("-10%"))),
            ),
            (
                "string -1",
                rolling(Some(text("-1"))),
                3,
                None,
                Err(SurgeError::InvalidMaxSurge(malformed("-1"))),
            ),
            (
                "bad override",
                recreate(),
                3,
                Some(text("x%")),
                Err(SurgeError::InvalidOverride(malformed("x%"))),
            ),
            (
                "negative override",
                recreate(),
                3,
                Some(int(-2)),
                Err(SurgeError::InvalidOverride(negative("-2"))),
            ),
            (
                "unknown strategy",
                Some(DeploymentStrategy { type_: Some("BlueGreen".into()), rolling_update: None }),
                3,
                None,
                Err(SurgeError::UnknownStrategy("BlueGreen".into())),
            ),
        ];
        for (name, strategy, baseline, override_value, want) in cases {
            assert_eq!(
                resolve_max_surge(strategy.as_ref(), baseline, override_value.as_ref()),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn errors_carry_degraded_reasons_and_name_the_value() {
        let cases = [
            (
                "zero surge",
                resolve_max_surge(recreate().as_ref(), 3, None),
                "UnsupportedSurgeConfiguration",
                "Recreate",
            ),
            (
                "bare number",
                resolve_max_surge(rolling(Some(text("10"))).as_ref(), 3, None),
                "InvalidSurgeConfiguration",
                "\"10\"",
            ),
            (
                "negative",
                resolve_max_surge(rolling(Some(int(-1))).as_ref(), 3, None),
                "InvalidSurgeConfiguration",
                "-1",
            ),
            (
                "bad override",
                resolve_max_surge(recreate().as_ref(), 3, Some(&text("abc%"))),
                "InvalidSurgeConfiguration",
                "abc%",
            ),
        ];
        for (name, result, reason, mentions) in cases {
            let Err(error) = result else { panic!("{name}: expected an error") };
            assert_eq!(error.reason(), reason, "{name}");
            assert!(error.to_string().contains(mentions), "{name}: {error}");
        }
    }

    #[test]
    fn zero_surge_override_setting() {
        let cases = [
            ("empty is off", "", Ok(None)),
            ("0 is off", "0", Ok(None)),
            ("0% is off", "0%", Ok(None)),
            ("integer", "2", Ok(Some(int(2)))),
            ("percent", "25%", Ok(Some(text("25%")))),
            ("negative", "-1", Err(SurgeError::InvalidOverride(ScaleError::Negative("-1".into())))),
            ("garbage", "lots", Err(SurgeError::InvalidOverride(ScaleError::Malformed("lots".into())))),
            ("negative percent", "-5%", Err(SurgeError::InvalidOverride(ScaleError::Negative("-5%".into())))),
        ];
        for (name, raw, want) in cases {
            assert_eq!(parse_zero_surge_override(raw), want, "{name}");
        }
    }

    #[test]
    fn surge_targets() {
        let cases = [
            ("README: 2 displaced on baseline 3", 3, 2, 3, None, 5),
            ("README: 1 more displaced", 3, 3, 3, None, 6),
            ("capped by maxSurge (25% of 3)", 3, 2, 1, None, 4),
            ("default on baseline 1", 1, 5, 1, None, 2),
            ("nothing displaced", 3, 0, 2, None, 3),
            ("capped by autoscaler max", 3, 3, 3, Some(5), 5),
            ("autoscaler max below baseline never scales down", 4, 2, 2, Some(3), 4),
            ("negative displaced", 3, -2, 2, None, 3),
            ("saturates", i32::MAX - 1, 5, 5, None, i32::MAX),
        ];
        for (name, baseline, displaced, max_surge, autoscaler_max, want) in cases {
            assert_eq!(surge_target(baseline, displaced, max_surge, autoscaler_max), want, "{name}");
        }
    }

    /// Property, exhaustively over small inputs: baseline ≤ target ≤ baseline + maxSurge,
    /// target ≤ the autoscaler maximum unless that is below the baseline, and uncapped the
    /// target covers every displaced pod the surge allows.
    #[test]
    fn surge_target_stays_within_its_bounds() {
        for baseline in 0..=12 {
            for displaced in 0..=15 {
                for max_surge in 0..=8 {
                    for cap in std::iter::once(None).chain((0..=20).map(Some)) {
                        let target = surge_target(baseline, displaced, max_surge, cap);
                        let at = format!("b={baseline} d={displaced} s={max_surge} cap={cap:?}");
                        assert!(target >= baseline, "{at}: {target} below baseline");
                        assert!(target <= baseline + max_surge, "{at}: {target} above maxSurge");
                        if let Some(cap) = cap.filter(|&cap| cap >= baseline) {
                            assert!(target <= cap, "{at}: {target} above the autoscaler max");
                        }
                        if cap.is_none() {
                            assert_eq!(target, baseline + displaced.min(max_surge), "{at}");
                        }
                    }
                }
            }
        }
    }

    /// Property: a resolved percentage surge is the exact ceiling of p% of the baseline.
    #[test]
    fn percentage_surge_is_the_ceiling() {
        for baseline in 0..=150 {
            for percent in 1..=200 {
                let strategy = rolling(Some(text(&format!("{percent}%"))));
                let Ok(resolved) = resolve_max_surge(strategy.as_ref(), baseline, None) else {
                    panic!("{percent}% of {baseline} rejected");
                };
                let exact = baseline * percent;
                assert!(resolved.amount * 100 >= exact, "{percent}% of {baseline}: {resolved:?}");
                assert!(
                    (resolved.amount - 1) * 100 < exact || resolved.amount == 0,
                    "{percent}% of {baseline}"
                );
            }
        }
    }
}
