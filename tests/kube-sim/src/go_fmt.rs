//! Go's renderings that upstream's messages embed: `strconv.Quote` (`%q`) of names and paths,
//! `json.Marshal` of objects and bad values, `%v` of a `float64` and `fmt`'s `%+v` of a decoded
//! patch (`map[a:1 b:[x <nil>]]`).

use std::fmt::Write as _;

use serde_json::Value;

/// Go's `strconv.Quote` (`%q`): `"` and `\` escaped, control characters as `\n`, `\x01`,
/// `\u0085`; printable text kept.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `json.Marshal` as Go writes it: compact, keys sorted, `<`, `>`, `&`, U+2028 and U+2029
/// escaped, floats as Go's encoder writes a `float64` (`1`, `0.5`, `1e+21`, `1e-7`).
pub fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value, 0);
    out
}

fn write_json(out: &mut String, v: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("null");
        return;
    }
    match v {
        Value::Number(n) if n.is_f64() => out.push_str(&json_float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                write_json(out, item, depth + 1);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string as Go's encoder writes it (serde_json's escapes plus Go's HTML-safe ones).
fn write_json_string(out: &mut String, s: &str) {
    let text = Value::String(s.to_string()).to_string();
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// Go's `encoding/json` rendering of a `float64`: the shortest digits, in exponent form below
/// 1e-6 and from 1e21 on (`1e+21`, `1.5e-7`).
pub fn json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        return if exp < 0 { format!("{mantissa}e-{}", -exp) } else { format!("{mantissa}e+{exp:02}") };
    }
    // Rust's `Display` writes the shortest round-tripping digits without an exponent, as Go's
    // `'f'` format with precision -1 does.
    format!("{f}")
}

/// `fmt.Sprintf("%+v", v)` of a value decoded by `sigs.k8s.io/json` (integers kept as `int64`,
/// other numbers `float64`): `map[k:v ...]` with sorted keys, `[a b]`, `<nil>`, strings bare.
pub fn value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 0);
    out
}

/// Deeper than this is written as `...` (a patch is depth-checked before; this is a guard).
const MAX_DEPTH: usize = 200;

fn write_value(out: &mut String, v: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(f)) => out.push_str(&float(f)),
            (None, None) => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json's map iterates in key order, as fmt sorts map keys.
            out.push_str("map[");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_value(out, item, depth + 1);
            }
            out.push(']');
        }
    }
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form when the decimal exponent is below -4 or at least 6 (Go's shortest `%g` decides
/// with precision 6): `1e+06`, `100000`, `1.5e-05`, `0.0001`, `-0`.
pub fn float(f: f64) -> String {
    // Rust's `{:e}` writes the shortest round-tripping digits: `1.2345e6`, `-0e0`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let rest = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{rest}e{exp_sign}{:02}", exp.abs());
    }
    // Fixed notation: the decimal point goes after `exp + 1` digits.
    let point = exp + 1;
    let fixed = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        if digits.len() <= point {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{fixed}")
}
