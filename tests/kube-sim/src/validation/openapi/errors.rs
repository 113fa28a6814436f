//! kube-openapi's validation errors (`pkg/validation/errors/schema.go`, all `in body`) and
//! apiextensions' `kubeOpenAPIResultToFieldErrors`, which turns them into field errors: the
//! openapi message becomes the detail, except for the codes upstream maps to their own
//! field-error types (`Required value`, `Unsupported value`, `Too long`, `Too many`).

use serde_json::Value;

use super::number::Num;
use crate::error::FieldError;
use crate::go_fmt;

/// A Go value as `field.Error` renders a bad value: numbers and booleans with `%v`, strings
/// with `%q`, anything else as JSON.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Bad {
    Str(String),
    Num(Num),
    Bool(bool),
    Json(Value),
}

impl Bad {
    /// The bad value a decoded JSON value is (`null`, objects and arrays render as JSON).
    pub(super) fn of(value: &Value) -> Self {
        match value {
            Value::String(s) => Self::Str(s.clone()),
            Value::Number(n) => Self::Num(Num::of(n)),
            Value::Bool(b) => Self::Bool(*b),
            other => Self::Json(other.clone()),
        }
    }
    fn render(&self) -> String {
        match self {
            Self::Str(s) => go_fmt::quote(s),
            Self::Num(n) => n.to_string(),
            Self::Bool(b) => b.to_string(),
            Self::Json(v) => go_fmt::json(v),
        }
    }
}

/// How `field.Error` prints a decoded JSON value as a bad value.
pub(crate) fn render_value(value: &Value) -> String {
    Bad::of(value).render()
}

/// How the error becomes a field error (upstream switches on the openapi error code).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Kind {
    /// `RequiredFailCode` → `field.Required`.
    Required,
    /// `EnumFailCode` → `field.NotSupported` with the value and the allowed values.
    Enum { value: Value, allowed: Vec<Value> },
    /// `TooLongFailCode` → `field.TooLong`.
    TooLong { max: i64 },
    /// `MaxItemsFailCode`, `TooManyPropertiesCode` → `field.TooMany`.
    TooMany { actual: i64, max: i64 },
    /// `InvalidTypeCode` → `field.TypeInvalid`.
    TypeInvalid(Bad),
    /// Every other code → `field.Invalid`.
    Invalid(Bad),
    /// Not a validation error (`anyOf`, `oneOf`, `allOf`, `not`) → `field.Invalid` on the
    /// validator's own path, a nil one for the resource (printed `<nil>`), with value `""`.
    Composite,
}

/// One openapi validation error: the `Name` (a path like `spec.items[0].name`, `.spec` for a
/// property required at the root), the message, and what becomes of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Error {
    pub(super) name: String,
    pub(super) message: String,
    pub(super) kind: Kind,
}

impl Error {
    fn new(name: &str, message: String, kind: Kind) -> Self {
        Self { name: name.to_string(), message, kind }
    }
    /// A composition failure (`"spec.q" must validate at least one schema (anyOf)`).
    pub(super) fn composite(message: String) -> Self {
        Self { name: String::new(), message, kind: Kind::Composite }
    }
    /// `%s in body is required`.
    pub(super) fn required(name: &str) -> Self {
        Self::new(name, format!("{name} in body is required"), Kind::Required)
    }
    /// `%s in body must be of type %s: %q`: `found` is the value's type name (or format).
    pub(super) fn invalid_type(name: &str, expected: &str, found: &str) -> Self {
        let message = format!("{name} in body must be of type {expected}: {}", go_fmt::quote(found));
        Self::new(name, message, Kind::TypeInvalid(Bad::Str(found.to_string())))
    }
    /// `%s in body should be one of %v`.
    pub(super) fn enum_fail(name: &str, value: &Value, allowed: &[Value]) -> Self {
        let listed: Vec<String> = allowed.iter().map(go_fmt::value).collect();
        let message = format!("{name} in body should be one of [{}]", listed.join(" "));
        Self::new(name, message, Kind::Enum { value: value.clone(), allowed: allowed.to_vec() })
    }
    /// `%s in body should be at most %d chars long`.
    pub(super) fn too_long(name: &str, max: i64) -> Self {
        Self::new(name, format!("{name} in body should be at most {max} chars long"), Kind::TooLong { max })
    }
    /// `%s in body should be at least %d chars long`.
    pub(super) fn too_short(name: &str, min: i64, value: &str) -> Self {
        let message = format!("{name} in body should be at least {min} chars long");
        Self::new(name, message, Kind::Invalid(Bad::Str(value.to_string())))
    }
    /// `%s in body should match '%s'`.
    pub(super) fn failed_pattern(name: &str, pattern: &str, value: &str) -> Self {
        let message = format!("{name} in body should match '{pattern}'");
        Self::new(name, message, Kind::Invalid(Bad::Str(value.to_string())))
    }
    /// `%s in body should be a multiple of %v`.
    pub(super) fn not_multiple_of(name: &str, factor: Num, value: Num) -> Self {
        let message = format!("{name} in body should be a multiple of {factor}");
        Self::new(name, message, Kind::Invalid(Bad::Num(value)))
    }
    /// `factor MultipleOf declared for %s must be positive: %v`.
    pub(super) fn multiple_of_must_be_positive(name: &str, factor: Num) -> Self {
        let message = format!("factor MultipleOf declared for {name} must be positive: {factor}");
        Self::new(name, message, Kind::Invalid(Bad::Num(factor)))
    }
    /// `%s in body should be less than (or equal to) %v`.
    pub(super) fn exceeds_maximum(name: &str, max: Num, exclusive: bool, value: Num) -> Self {
        let relation = if exclusive { "less than" } else { "less than or equal to" };
        let message = format!("{name} in body should be {relation} {max}");
        Self::new(name, message, Kind::Invalid(Bad::Num(value)))
    }
    /// `%s in body should be greater than (or equal to) %v`.
    pub(super) fn exceeds_minimum(name: &str, min: Num, exclusive: bool, value: Num) -> Self {
        let relation = if exclusive { "greater than" } else { "greater than or equal to" };
        let message = format!("{name} in body should be {relation} {min}");
        Self::new(name, message, Kind::Invalid(Bad::Num(value)))
    }
    /// `%s in body should have at least %d items`.
    pub(super) fn too_few_items(name: &str, min: i64, size: i64) -> Self {
        let message = format!("{name} in body should have at least {min} items");
        Self::new(name, message, Kind::Invalid(Bad::Num(Num::Int(size))))
    }
    /// `%s in body should have at most %d items`.
    pub(super) fn too_many_items(name: &str, max: i64, size: i64) -> Self {
        let message = format!("{name} in body should have at most {max} items");
        Self::new(name, message, Kind::TooMany { actual: size, max })
    }
    /// `%s in body shouldn't contain duplicates` (no value: upstream renders `""`).
    pub(super) fn duplicate_items(name: &str) -> Self {
        let message = format!("{name} in body shouldn't contain duplicates");
        Self::new(name, message, Kind::Invalid(Bad::Str(String::new())))
    }
    /// `%s in body should have at least %d properties`.
    pub(super) fn too_few_properties(name: &str, min: i64, size: i64) -> Self {
        let message = format!("{name} in body should have at least {min} properties");
        Self::new(name, message, Kind::Invalid(Bad::Num(Num::Int(size))))
    }
    /// `%s in body should have at most %d properties`.
    pub(super) fn too_many_properties(name: &str, max: i64, size: i64) -> Self {
        let message = format!("{name} in body should have at most {max} properties");
        Self::new(name, message, Kind::TooMany { actual: size, max })
    }
    /// `%s.%s in body is a forbidden property`: named by the object, valued by the key.
    pub(super) fn property_not_allowed(name: &str, key: &str) -> Self {
        let message = format!("{name}.{key} in body is a forbidden property");
        Self::new(name, message, Kind::Invalid(Bad::Str(key.to_string())))
    }
}

/// `kubeOpenAPIResultToFieldErrors`: each error on `prefix` (the status subresource validates
/// `status` with names relative to it) joined with its name, a leading `.` dropped.
pub(crate) fn to_field_errors(prefix: Option<&str>, errors: &[Error]) -> Vec<FieldError> {
    errors
        .iter()
        .map(|e| {
            let name = e.name.strip_prefix('.').unwrap_or(&e.name);
            let field = match (prefix, e.name.as_str()) {
                (p, "" | ".") => p.unwrap_or_default().to_string(),
                (Some(p), _) => format!("{p}.{name}"),
                (None, _) => name.to_string(),
            };
            match &e.kind {
                Kind::Required => FieldError::required(&field, ""),
                Kind::Enum { value, allowed } => {
                    let supported: Vec<String> = allowed
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => go_fmt::quote(s),
                            other => go_fmt::quote(&go_fmt::json(other)),
                        })
                        .collect();
                    FieldError::not_supported_rendered(&field, &Bad::of(value).render(), &supported)
                }
                Kind::TooLong { max } => FieldError::too_long_bytes(&field, *max),
                Kind::TooMany { actual, max } => FieldError::too_many(&field, *actual, *max),
                Kind::TypeInvalid(bad) => FieldError::type_invalid(&field, &bad.render(), &e.message),
                Kind::Invalid(bad) => FieldError::invalid(&field, &bad.render(), &e.message),
                Kind::Composite => FieldError::invalid(prefix.unwrap_or("<nil>"), "\"\"", &e.message),
            }
        })
        .collect()
}
