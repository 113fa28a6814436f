//! Ages as kubectl shows them: upstream `duration.HumanDuration` and printers'
//! `translateTimestampSince`.

use serde_json::Value;

/// upstream `k8s.io/apimachinery/pkg/util/duration.HumanDuration`.
pub fn human_duration(span: jiff::SignedDuration) -> String {
    // Go converts with truncation toward zero, as Rust's integer division does.
    let seconds = span.as_secs();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        if days == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{days}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// upstream `translateTimestampSince`: `<unknown>` for a missing or unparsable timestamp.
pub fn since(timestamp: Option<&Value>, now: jiff::Timestamp) -> String {
    match timestamp.and_then(Value::as_str).and_then(|s| s.parse::<jiff::Timestamp>().ok()) {
        Some(t) => human_duration(now.duration_since(t)),
        None => "<unknown>".to_string(),
    }
}
