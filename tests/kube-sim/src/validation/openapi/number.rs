//! Numbers as the apiserver holds a decoded custom resource (`int64` when the JSON number is an
//! integer that fits, `float64` otherwise) and kube-openapi's checks on them
//! (`validate/values.go`: `MaximumNativeType`, `MinimumNativeType`, `MultipleOfNativeType`),
//! Go conversions included: an integer value is compared with `int64(bound)`, so `minimum:
//! 0.5` lets `0` pass.

use std::fmt;

use super::errors::Error;
use crate::go_fmt;

/// A decoded JSON number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn of(n: &serde_json::Number) -> Self {
        match n.as_i64() {
            Some(i) => Self::Int(i),
            None => Self::Float(n.as_f64().unwrap_or(0.0)),
        }
    }
}

/// Go's `%v`.
impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => f.write_str(&go_fmt::float(*x)),
        }
    }
}

const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// Go's `int64(f)` on amd64: truncation, and `math.MinInt64` for what does not fit (NaN too).
pub(super) fn go_int64(f: f64) -> i64 {
    if (-TWO_POW_63..TWO_POW_63).contains(&f) { f as i64 } else { i64::MIN }
}

/// Go's `float64(uint64(f))` on amd64: below 2^63 the conversion goes through `int64`, so a
/// negative value wraps to near 2^64.
fn go_uint64_as_float(f: f64) -> f64 {
    if f < TWO_POW_63 {
        go_int64(f) as u64 as f64
    } else {
        ((go_int64(f - TWO_POW_63) as u64) ^ (1 << 63)) as f64
    }
}

/// go-openapi/swag `IsFloat64AJSONInteger`: integral within ±2^53-1, with a relative tolerance
/// of 1e-9 (which, through Go's conversions, only positive values get).
pub(super) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    const EPSILON: f64 = 1e-9;
    let smallest = f64::from_bits(1); // math.SmallestNonzeroFloat64
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let g = go_uint64_as_float(f);
    let diff = (f - g).abs();
    if f == g || f == go_int64(f) as f64 {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < smallest {
        return diff < EPSILON * smallest;
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < EPSILON
}

/// `MaximumNativeType`.
pub(super) fn maximum(name: &str, value: Num, max: f64, exclusive: bool) -> Option<Error> {
    let exceeds = match value {
        Num::Int(v) => {
            let m = go_int64(max);
            ((!exclusive && v > m) || (exclusive && v >= m)).then_some(Num::Int(m))
        }
        Num::Float(v) => ((!exclusive && v > max) || (exclusive && v >= max)).then_some(Num::Float(max)),
    };
    exceeds.map(|bound| Error::exceeds_maximum(name, bound, exclusive, value))
}

/// `MinimumNativeType`.
pub(super) fn minimum(name: &str, value: Num, min: f64, exclusive: bool) -> Option<Error> {
    let exceeds = match value {
        Num::Int(v) => {
            let m = go_int64(min);
            ((!exclusive && v < m) || (exclusive && v <= m)).then_some(Num::Int(m))
        }
        Num::Float(v) => ((!exclusive && v < min) || (exclusive && v <= min)).then_some(Num::Float(min)),
    };
    exceeds.map(|bound| Error::exceeds_minimum(name, bound, exclusive, value))
}

/// `MultipleOfNativeType`: an integer against `int64(factor)`, a float by division.
pub(super) fn multiple_of(name: &str, value: Num, factor: f64) -> Option<Error> {
    match value {
        Num::Int(v) => {
            let f = go_int64(factor);
            if f <= 0 {
                return Some(Error::multiple_of_must_be_positive(name, Num::Int(f)));
            }
            (v % f != 0).then(|| Error::not_multiple_of(name, Num::Int(f), value))
        }
        Num::Float(v) => {
            if factor <= 0.0 {
                return Some(Error::multiple_of_must_be_positive(name, Num::Float(factor)));
            }
            let mult = if factor < 1.0 { 1.0 / factor * v } else { v / factor };
            (!is_json_integer(mult)).then(|| Error::not_multiple_of(name, Num::Float(factor), value))
        }
    }
}
