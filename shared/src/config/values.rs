//! Text to values: the `--config` file flattened to dotted keys, and the parser and check of
//! each kind of setting. Every error is a reason; `Resolved::parse` adds which setting, which
//! value and where it came from.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, time::Duration};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::{IGNORED_FILE_KEYS, SETTINGS};

/// Flattens the YAML file into dotted keys → text. Accepts the `controllerConfig` structure
/// either at the top level or under a `controllerConfig:` key. Lists become comma lists.
pub(super) fn flatten_file(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut root: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?
    };
    if let Some(inner) = root.get_mut("controllerConfig") {
        root = inner.take();
    }
    let mut out = BTreeMap::new();
    match root {
        Value::Object(map) => flatten_into(&mut out, "", map)?,
        Value::Null => {}
        _ => return Err("expected a mapping of settings (controllerConfig)".into()),
    }
    for key in out.keys() {
        if !SETTINGS.iter().any(|s| s.key == key) && !IGNORED_FILE_KEYS.contains(&key.as_str()) {
            return Err(format!("unknown setting controllerConfig.{key}"));
        }
    }
    Ok(out)
}

fn flatten_into(
    out: &mut BTreeMap<String, String>,
    prefix: &str,
    map: serde_json::Map<String, Value>,
) -> Result<(), String> {
    for (k, v) in map {
        let key = if prefix.is_empty() { k } else { format!("{prefix}.{k}") };
        let text = match v {
            Value::Object(inner) => {
                flatten_into(out, &key, inner)?;
                continue;
            }
            Value::Null => String::new(),
            Value::String(s) => s,
            Value::Array(items) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(format!("controllerConfig.{key}: list items must be strings")),
                })
                .collect::<Result<Vec<_>, _>>()?
                .join(","),
            other => other.to_string(),
        };
        out.insert(key, text);
    }
    Ok(())
}

/// Booleans as Go's `strconv.ParseBool` accepts them, so the Go project's env values work.
pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    crate::scope::parse_bool(v).ok_or_else(|| "expected true or false".into())
}

/// The longest duration any setting takes: far beyond any sensible value, yet small enough
/// that adding it to a clock reading cannot overflow (`500000000000y` parses, and made a timer
/// panic).
const MAX_DURATION: Duration = Duration::from_secs(100 * 31_557_600); // humantime's year: 365.25 days

pub(super) fn parse_duration(v: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(v).map_err(|e| format!("expected a duration like 60s or 5m ({e})"))?;
    if d > MAX_DURATION {
        return Err("must be at most 100 years".into());
    }
    Ok(d)
}

pub(super) fn parse_positive_duration(v: &str) -> Result<Duration, String> {
    let d = parse_duration(v)?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

pub(super) fn parse_addr(v: &str) -> Result<SocketAddr, String> {
    v.parse().map_err(|_| "expected an address like 0.0.0.0:9443".into())
}

pub(super) fn parse_path(v: &str) -> Result<PathBuf, String> {
    if v.is_empty() || v.ends_with('/') {
        return Err("must name a file".into());
    }
    Ok(PathBuf::from(v))
}

/// `""`, `0` and `0%` mean off; otherwise a non-negative int or percentage.
pub(super) fn parse_surge_override(v: &str) -> Result<Option<IntOrString>, String> {
    crate::surge::parse_zero_surge_override(v).map_err(|e| e.to_string())
}

pub(super) fn parse_list(v: &str, check: fn(&str) -> Result<(), String>) -> Result<Vec<String>, String> {
    let items: Vec<String> =
        v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    for item in &items {
        check(item).map_err(|e| format!("{item:?}: {e}"))?;
    }
    Ok(items)
}

/// RFC 1123 label: what a namespace name must be.
pub(super) fn check_dns_label(v: &str) -> Result<(), String> {
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    ok.then_some(()).ok_or_else(|| "must be a lowercase RFC 1123 label (a-z, 0-9, '-', at most 63)".into())
}

pub(super) fn check_dns_subdomain(v: &str) -> Result<(), String> {
    let ok = !v.is_empty() && v.len() <= 253 && v.split('.').all(|l| check_dns_label(l).is_ok());
    ok.then_some(()).ok_or_else(|| "must be a lowercase RFC 1123 subdomain".into())
}

/// A label/taint key: optional DNS-subdomain prefix, `/`, name of alphanumerics, `-_.`.
pub(super) fn check_qualified_name(v: &str) -> Result<(), String> {
    let (prefix, name) = match v.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, v),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
    if !name_ok || prefix.is_some_and(|p| check_dns_subdomain(p).is_err()) {
        return Err("must be a taint key like example.com/name".into());
    }
    Ok(())
}
