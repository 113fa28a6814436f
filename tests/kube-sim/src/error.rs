//! `metav1.Status` errors with the upstream reasons, codes and messages
//! (apimachinery `pkg/api/errors/errors.go`).

use serde_json::{Map, Value, json};

/// An API error, rendered as a `metav1.Status` body with the same HTTP code.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `Conflict`, ...); empty for plain internal errors.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, if any.
    pub details: Option<Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// One field error of a 422 Invalid answer.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// `FieldValueRequired`, `FieldValueInvalid`, ...
    pub cause: &'static str,
    /// `spec.selector`, ...
    pub field: String,
    /// The rendered message (`spec.selector: Required value`).
    pub message: String,
}

impl FieldError {
    /// `<field>: Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        let message = if detail.is_empty() {
            format!("{field}: Required value")
        } else {
            format!("{field}: Required value: {detail}")
        };
        Self { cause: "FieldValueRequired", field: field.to_string(), message }
    }
    /// `<field>: Invalid value: <value>: <detail>`; `value` is already rendered (`"x"`, `-1`).
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self {
            cause: "FieldValueInvalid",
            field: field.to_string(),
            message: format!("{field}: Invalid value: {value}: {detail}"),
        }
    }
    /// `<field>: Forbidden: <detail>`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self {
            cause: "FieldValueForbidden",
            field: field.to_string(),
            message: format!("{field}: Forbidden: {detail}"),
        }
    }
    /// `<field>: Invalid value: <value>: <detail>` of `field.TypeInvalid` (a value of the wrong
    /// type); `value` is already rendered.
    pub fn type_invalid(field: &str, value: &str, detail: &str) -> Self {
        Self { cause: "FieldValueTypeInvalid", ..Self::invalid(field, value, detail) }
    }
    /// `field.TooLong`: `<field>: Too long: may not be more than 3 bytes` (`value is too long`
    /// for a negative maximum).
    pub fn too_long_bytes(field: &str, max: i64) -> Self {
        let detail = match max {
            i64::MIN..=-1 => "value is too long".to_string(),
            1 => "may not be more than 1 byte".to_string(),
            _ => format!("may not be more than {max} bytes"),
        };
        Self {
            cause: "FieldValueTooLong",
            field: field.to_string(),
            message: format!("{field}: Too long: {detail}"),
        }
    }
    /// `field.TooMany`: `<field>: Too many: 4: must have at most 3 items`.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let detail = match max {
            i64::MIN..=-1 => "has too many items".to_string(),
            1 => "must have at most 1 item".to_string(),
            _ => format!("must have at most {max} items"),
        };
        let body =
            if actual >= 0 { format!("Too many: {actual}: {detail}") } else { format!("Too many: {detail}") };
        Self { cause: "FieldValueTooMany", field: field.to_string(), message: format!("{field}: {body}") }
    }
    /// `field.NotSupported` with an already rendered value and supported values already
    /// quoted (`Unsupported value: 3: supported values: "1", "2"`).
    pub fn not_supported_rendered(field: &str, value: &str, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            format!(": supported values: {}", supported.join(", "))
        };
        Self {
            cause: "FieldValueNotSupported",
            field: field.to_string(),
            message: format!("{field}: Unsupported value: {value}{detail}"),
        }
    }
    /// `<field>: Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        Self {
            cause: "FieldValueNotSupported",
            field: field.to_string(),
            message: format!(
                "{field}: Unsupported value: \"{value}\": supported values: {}",
                list.join(", ")
            ),
        }
    }
}

fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        d.insert("kind".into(), json!(kind));
    }
    Value::Object(d)
}

/// `resource` for the core group, `resource.group` otherwise.
pub fn group_resource(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

impl ApiError {
    fn new(code: u16, reason: &str, message: String, details: Option<Value>) -> Self {
        Self { code, reason: reason.to_string(), message, details }
    }
    /// 404 NotFound.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", group_resource(group, resource)),
            Some(details(name, group, resource)),
        )
    }
    /// 404 for a path that names no resource (`the server could not find the requested resource`).
    pub fn no_route() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource".into(), Some(json!({})))
    }
    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", group_resource(group, resource)),
            Some(details(name, group, resource)),
        )
    }
    /// 409 Conflict with an explanation (`the object has been modified; ...`).
    pub fn conflict(group: &str, resource: &str, name: &str, err: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {err}", group_resource(group, resource)),
            Some(details(name, group, resource)),
        )
    }
    /// 409 Conflict with the optimistic-lock message.
    pub fn optimistic_lock(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(group, resource, name, OPTIMISTIC_LOCK_MSG)
    }
    /// 403 Forbidden.
    pub fn forbidden(group: &str, resource: &str, name: &str, err: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {err}", group_resource(group, resource)),
            Some(details(name, group, resource)),
        )
    }
    /// 422 Invalid. `kind_label` is `Deployment.apps` / `Pod` (or the group-resource where
    /// upstream builds it from the resource).
    pub fn invalid(kind_label: &str, group: &str, kind: &str, name: &str, errs: &[FieldError]) -> Self {
        // `ErrorList.ToAggregate` drops repeated messages (the causes keep them).
        let mut joined: Vec<&str> = Vec::new();
        for e in errs {
            if !joined.contains(&e.message.as_str()) {
                joined.push(&e.message);
            }
        }
        let message = if joined.len() == 1 {
            format!("{kind_label} \"{name}\" is invalid: {}", joined.join(", "))
        } else {
            format!("{kind_label} \"{name}\" is invalid: [{}]", joined.join(", "))
        };
        // A cause's message is the error without its field (`ErrorBody`): the field is beside it.
        let body = |e: &FieldError| {
            e.message.strip_prefix(&format!("{}: ", e.field)).unwrap_or(&e.message).to_owned()
        };
        let causes: Vec<Value> =
            errs.iter().map(|e| json!({"reason": e.cause, "message": body(e), "field": e.field})).collect();
        let mut d = details(name, group, kind);
        if let Value::Object(m) = &mut d {
            m.insert("causes".into(), Value::Array(causes));
        }
        Self::new(422, "Invalid", message, Some(d))
    }
    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into(), None)
    }
    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        let message = "the server does not allow this method on the requested resource";
        Self::new(405, "MethodNotAllowed", message.into(), Some(json!({})))
    }
    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message.into(), None)
    }
    /// 410 Expired (too old resource version, expired continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message.into(), None)
    }
    /// 500 InternalError.
    pub fn internal(err: impl Into<String>) -> Self {
        let err = err.into();
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {err}"),
            Some(json!({"causes": [{"message": err}]})),
        )
    }
    /// 500 with no reason: a plain storage error surfaced as-is (e.g. create with resourceVersion).
    pub fn plain_internal(message: impl Into<String>) -> Self {
        Self::new(500, "", message.into(), None)
    }
    /// 429 TooManyRequests (optionally with `retryAfterSeconds`).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        let details = (retry_after_seconds > 0).then(|| json!({"retryAfterSeconds": retry_after_seconds}));
        Self::new(429, "TooManyRequests", message.into(), details)
    }

    /// `details.retryAfterSeconds`, when set (drives the `Retry-After` header).
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.details.as_ref()?.get("retryAfterSeconds")?.as_u64().filter(|s| *s > 0)
    }

    /// The `metav1.Status` body, with the upstream field order.
    pub fn to_status(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!("Status"));
        m.insert("apiVersion".into(), json!("v1"));
        m.insert("metadata".into(), json!({}));
        m.insert("status".into(), json!("Failure"));
        if !self.message.is_empty() {
            m.insert("message".into(), json!(self.message));
        }
        if !self.reason.is_empty() {
            m.insert("reason".into(), json!(self.reason));
        }
        if let Some(d) = &self.details {
            m.insert("details".into(), d.clone());
        }
        m.insert("code".into(), json!(self.code));
        Value::Object(m)
    }
}

/// `registry/generic/registry/store.go` `OptimisticLockErrorMsg`.
pub const OPTIMISTIC_LOCK_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";
