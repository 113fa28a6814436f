//! `resource.Quantity` parsing (`ParseQuantity`) and exact comparison, enough for
//! `requests <= limits` and the non-negative / integer rules.

use std::cmp::Ordering;

use serde_json::Value;

/// `resource.ErrFormatWrong`.
pub(super) const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `resource.ErrSuffix`.
pub(super) const SUFFIX_WRONG: &str = "unable to parse quantity's suffix";

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2` (mantissa carries the sign).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Quantity {
    mantissa: i128,
    exp10: i32,
    exp2: i32,
}

fn digits_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().position(|b| !b.is_ascii_digit()).map_or(bytes.len(), |p| from + p)
}

/// `ParseQuantity` of a string form.
pub(super) fn parse(text: &str) -> Result<Quantity, &'static str> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(FORMAT_WRONG);
    }
    let mut pos = 0;
    let negative = match bytes[0] {
        b'-' => {
            pos = 1;
            true
        }
        b'+' => {
            pos = 1;
            false
        }
        _ => false,
    };
    let int_end = digits_end(bytes, pos);
    let int_part = &text[pos..int_end];
    pos = int_end;
    let mut frac_part = "";
    if bytes.get(pos) == Some(&b'.') {
        let frac_end = digits_end(bytes, pos + 1);
        frac_part = &text[pos + 1..frac_end];
        pos = frac_end;
    }
    // The suffix: letters from the suffix alphabet, an optional sign, digits.
    let suffix_start = pos;
    while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && matches!(bytes[pos], b'-' | b'+') {
        pos += 1;
    }
    pos = digits_end(bytes, pos);
    if pos != bytes.len() {
        return Err(FORMAT_WRONG);
    }
    let suffix = &text[suffix_start..];
    let (mut exp10, exp2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            (s[1..].parse::<i32>().map_err(|_| SUFFIX_WRONG)?.clamp(-100_000, 100_000), 0)
        }
        _ => return Err(SUFFIX_WRONG),
    };
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    // Keep the comparison exact for realistic sizes; very long mantissas lose precision.
    let kept = &digits[..digits.len().min(30)];
    let dropped = digits.len() - kept.len();
    let mut mantissa: i128 = if kept.is_empty() { 0 } else { kept.parse().map_err(|_| FORMAT_WRONG)? };
    if negative {
        mantissa = -mantissa;
    }
    // Clamped so later arithmetic cannot overflow; such magnitudes compare approximately.
    let shifted = i64::from(exp10) + dropped as i64 - frac_part.len() as i64;
    exp10 = shifted.clamp(-100_000, 100_000) as i32;
    Ok(Quantity { mantissa, exp10, exp2 })
}

/// A quantity written as a JSON string or number.
pub(super) fn parse_value(value: &Value) -> Option<Result<Quantity, &'static str>> {
    match value {
        Value::String(s) => Some(parse(s)),
        Value::Number(n) => Some(parse(&n.to_string())),
        Value::Null => None,
        _ => Some(Err(FORMAT_WRONG)),
    }
}

impl Quantity {
    /// True when below zero.
    pub(super) fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// True when a whole number (`MilliValue() % 1000 == 0`).
    pub(super) fn is_integer(&self) -> bool {
        if self.exp10 >= 0 {
            return true;
        }
        let divisor = 10i128.checked_pow(self.exp10.unsigned_abs());
        let value = 1i128.checked_shl(self.exp2.max(0) as u32).and_then(|p2| self.mantissa.checked_mul(p2));
        match (value, divisor) {
            (Some(v), Some(d)) => v % d == 0,
            _ => self.approx().fract() == 0.0,
        }
    }

    fn scaled(&self, add10: i32, add2: i32) -> Option<i128> {
        let p10 = 10i128.checked_pow(u32::try_from(self.exp10 + add10).ok()?)?;
        let p2 = 1i128.checked_shl(u32::try_from(self.exp2 + add2).ok()?)?;
        self.mantissa.checked_mul(p10)?.checked_mul(p2)
    }

    fn approx(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exp10) * 2f64.powi(self.exp2)
    }

    /// `Quantity.Cmp`: exact when both fit in i128 at a common scale.
    pub(super) fn compare(&self, other: &Quantity) -> Ordering {
        let add10 = -self.exp10.min(other.exp10);
        let add2 = -self.exp2.min(other.exp2);
        match (self.scaled(add10, add2), other.scaled(add10, add2)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.approx().partial_cmp(&other.approx()).unwrap_or(Ordering::Equal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_upstream_forms() {
        for ok in ["1", "500m", "0.5", "1Gi", "128Mi", "1e3", "1E-3", "+2", "-1", ".5", "1.", "0"] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(parse("1Gb"), Err(FORMAT_WRONG));
        assert_eq!(parse("1iK"), Err(SUFFIX_WRONG));
        assert_eq!(parse("abc"), Err(FORMAT_WRONG));
        assert_eq!(parse("1 Gi"), Err(FORMAT_WRONG));
        assert_eq!(parse(""), Err(FORMAT_WRONG));
        let tiny = parse("1e-2147483648").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tiny.compare(&parse("1").unwrap_or_else(|e| panic!("{e}"))), Ordering::Less);
    }

    #[test]
    fn compares_across_suffixes_exactly() {
        let q = |s: &str| parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(q("1Gi").compare(&q("1024Mi")), Ordering::Equal);
        assert_eq!(q("0.1").compare(&q("100m")), Ordering::Equal);
        assert_eq!(q("2").compare(&q("1500m")), Ordering::Greater);
        assert_eq!(q("1G").compare(&q("1Gi")), Ordering::Less);
        assert!(q("-1").is_negative());
        assert!(q("2").is_integer() && q("2000m").is_integer() && !q("1500m").is_integer());
    }
}
