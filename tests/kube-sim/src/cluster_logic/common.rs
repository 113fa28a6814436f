//! Small helpers shared by the cluster-logic modules: times, int-or-percent scaling, pod
//! predicates, `metav1.Condition` upserts and `metav1.Status` bodies.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// Parses a `metav1.Time` (RFC 3339) JSON value.
pub fn parse_time(value: &Value) -> Option<Timestamp> {
    value.as_str()?.parse().ok()
}

/// Formats a `metav1.Time`: RFC 3339 at second precision, as the apiserver serialises it.
pub fn format_time(time: Timestamp) -> String {
    Timestamp::from_second(time.as_second()).unwrap_or(time).to_string()
}

/// `time + seconds`, saturating at the representable range.
pub fn add_seconds(time: Timestamp, seconds: i64) -> Timestamp {
    time.checked_add(jiff::SignedDuration::from_secs(seconds)).unwrap_or(time)
}

/// upstream `intstr.GetScaledValueFromIntOrPercent`: an integer is returned as is; `"N%"`
/// becomes `ceil(N*total/100)` when `round_up`, else `floor(...)`.
pub fn scaled_int_or_percent(value: &Value, total: i64, round_up: bool) -> Result<i64, String> {
    match value {
        Value::Number(n) => n.as_i64().ok_or_else(|| format!("invalid value for IntOrString: {n}")),
        Value::String(s) => {
            let Some(digits) = s.strip_suffix('%') else {
                return Err("invalid value for IntOrString: invalid type: string is not a percentage".into());
            };
            let percent: i64 = digits.parse().map_err(|_| {
                format!("invalid value \"{s}\": strconv.Atoi: parsing \"{digits}\": invalid syntax")
            })?;
            let product = percent.saturating_mul(total);
            Ok(if round_up { -(-product).div_euclid(100) } else { product.div_euclid(100) })
        }
        other => Err(format!("invalid value for IntOrString: {other}")),
    }
}

/// A list a controller writes through a JSON merge patch: `null` when empty, so the field is
/// removed. Go clients serialise an emptied slice with `omitempty` away, so the real apiserver
/// never stores `[]` for `spec.taints` or `metadata.ownerReferences` (measured: uncordon and
/// orphaning leave no such field).
pub fn list_or_removed(items: Vec<Value>) -> Value {
    if items.is_empty() { Value::Null } else { Value::Array(items) }
}

/// The object's `metadata.name` (`""` if absent).
pub fn name_of(object: &Value) -> &str {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// The object's `metadata.namespace` (`""` if absent).
pub fn namespace_of(object: &Value) -> &str {
    object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("")
}

/// The object's `metadata.uid` (`""` if absent).
pub fn uid_of(object: &Value) -> &str {
    object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("")
}

/// The pod's `status.phase` (`""` if absent).
pub fn pod_phase(pod: &Value) -> &str {
    pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("")
}

/// True when `metadata.deletionTimestamp` is set.
pub fn is_terminating(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// The condition of `type` in `status.conditions`.
pub fn find_condition<'a>(object: &'a Value, condition_type: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == condition_type)
}

/// upstream `podutil.IsPodReady`: a `Ready` condition with status `"True"`.
pub fn pod_is_ready(pod: &Value) -> bool {
    find_condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
}

/// upstream `metav1.GetControllerOf`: the first ownerReference with `controller: true`.
pub fn controller_ref(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
}

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → `""`).
pub fn api_group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// An integer field, or `default` when absent.
pub fn int_at(object: &Value, pointer: &str, default: i64) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(default)
}

/// upstream `meta.SetStatusCondition` on a `metav1.Condition` list: a new type is appended
/// with `lastTransitionTime = now`; an existing one keeps its transition time unless its
/// status changes; reason, message and observedGeneration are overwritten. Returns whether
/// anything changed.
pub fn set_status_condition(conditions: &mut Vec<Value>, new: Value, now: Timestamp) -> bool {
    let condition_type = new["type"].clone();
    let Some(existing) = conditions.iter_mut().find(|c| c["type"] == condition_type) else {
        let mut new = new;
        if new.get("lastTransitionTime").is_none_or(Value::is_null) {
            new["lastTransitionTime"] = json!(format_time(now));
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing["status"] != new["status"] {
        existing["status"] = new["status"].clone();
        existing["lastTransitionTime"] = match new.get("lastTransitionTime") {
            Some(t) if !t.is_null() => t.clone(),
            _ => json!(format_time(now)),
        };
        changed = true;
    }
    for field in ["reason", "message"] {
        let value = new.get(field).cloned().unwrap_or_else(|| json!(""));
        if existing.get(field).unwrap_or(&json!("")) != &value {
            existing[field] = value;
            changed = true;
        }
    }
    let generation = new.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0);
    if existing.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0) != generation {
        match existing.as_object_mut() {
            Some(map) if generation == 0 => {
                map.remove("observedGeneration");
            }
            _ => existing["observedGeneration"] = json!(generation),
        }
        changed = true;
    }
    changed
}

/// An HTTP answer carrying a `metav1.Status` body.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusResponse {
    /// HTTP status code (equal to the body's `code`).
    pub code: u16,
    /// The full `Status` JSON (`kind`, `apiVersion`, `metadata`, `status`, ...).
    pub body: Value,
}

impl StatusResponse {
    /// A `Failure` Status; `reason` and `details` are omitted when empty/None.
    pub fn failure(code: u16, reason: &str, message: &str, details: Option<Value>) -> Self {
        let mut body = Map::new();
        body.insert("kind".into(), json!("Status"));
        body.insert("apiVersion".into(), json!("v1"));
        body.insert("metadata".into(), json!({}));
        body.insert("status".into(), json!("Failure"));
        if !message.is_empty() {
            body.insert("message".into(), json!(message));
        }
        if !reason.is_empty() {
            body.insert("reason".into(), json!(reason));
        }
        if let Some(details) = details {
            body.insert("details".into(), details);
        }
        body.insert("code".into(), json!(code));
        Self { code, body: Value::Object(body) }
    }

    /// A `Success` Status with `code`.
    pub fn success(code: u16) -> Self {
        Self {
            code,
            body: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}),
        }
    }

    /// `details.retryAfterSeconds`, which becomes the `Retry-After` header when > 0.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.body.pointer("/details/retryAfterSeconds").and_then(Value::as_u64).filter(|s| *s > 0)
    }

    /// `message`.
    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }

    /// The same answer as the API layer's error type (for `Failure` bodies).
    pub fn to_api_error(&self) -> crate::error::ApiError {
        crate::error::ApiError {
            code: self.code,
            reason: self.body["reason"].as_str().unwrap_or("").to_string(),
            message: self.message().to_string(),
            details: self.body.get("details").cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_as_asked_and_plain_strings_are_rejected() {
        let cases: &[(Value, i64, bool, Result<i64, ()>)] = &[
            (json!(3), 10, true, Ok(3)),
            (json!("25%"), 10, true, Ok(3)),
            (json!("25%"), 10, false, Ok(2)),
            (json!("50%"), 3, true, Ok(2)),
            (json!("50%"), 3, false, Ok(1)),
            (json!("100%"), 0, true, Ok(0)),
            (json!("3"), 10, true, Err(())),
            (json!("x%"), 10, true, Err(())),
        ];
        for (value, total, up, expected) in cases {
            let got = scaled_int_or_percent(value, *total, *up).map_err(|_| ());
            assert_eq!(&got, expected, "{value} of {total} round_up={up}");
        }
    }

    #[test]
    fn set_status_condition_keeps_transition_time_unless_status_flips() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap_or_default();
        let t1: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap_or_default();
        let mut conditions = Vec::new();
        let cond = |status: &str, reason: &str| json!({"type": "X", "status": status, "reason": reason, "message": ""});
        assert!(set_status_condition(&mut conditions, cond("True", "A"), t0));
        assert_eq!(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert!(set_status_condition(&mut conditions, cond("True", "B"), t1));
        assert_eq!(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert!(!set_status_condition(&mut conditions, cond("True", "B"), t1));
        assert!(set_status_condition(&mut conditions, cond("False", "B"), t1));
        assert_eq!(conditions[0]["lastTransitionTime"], "2026-01-01T00:05:00Z");
    }

    #[test]
    fn status_responses_convert_to_api_errors() {
        let r = StatusResponse::failure(
            429,
            "TooManyRequests",
            "slow down",
            Some(json!({"retryAfterSeconds": 10})),
        );
        assert_eq!(r.retry_after_seconds(), Some(10));
        let e = r.to_api_error();
        assert_eq!((e.code, e.reason.as_str(), e.message.as_str()), (429, "TooManyRequests", "slow down"));
        assert_eq!(e.to_status(), r.body, "the API layer renders the same body");
        assert_eq!(StatusResponse::success(201).body["status"], "Success");
    }

    #[test]
    fn emptied_lists_are_removed_not_written_empty() {
        assert_eq!(list_or_removed(Vec::new()), Value::Null);
        assert_eq!(list_or_removed(vec![json!("a")]), json!(["a"]));
    }

    #[test]
    fn format_time_drops_subseconds() {
        let t: Timestamp = "2026-01-01T00:00:00.75Z".parse().unwrap_or_default();
        assert_eq!(format_time(t), "2026-01-01T00:00:00Z");
    }
}
