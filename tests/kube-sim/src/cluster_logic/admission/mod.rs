//! Admission webhooks as the apiserver calls them (k8s-semantics §3): configuration defaults
//! and validation, which webhooks apply to a request ([`matching`]), the AdmissionReview v1
//! request and the judging of the answer ([`review`]).
//!
//! `matchConditions` (CEL) are not evaluated: a webhook that has them is called as if they
//! all held. Reinvocation (`IfNeeded`) is left to the caller, which knows whether a later
//! webhook changed the object.

pub mod matching;
pub mod review;

use serde_json::{Map, Value, json};

use crate::error::FieldError;

pub use matching::{AdmissionAttributes, Invocation, Operation, ResourceRef, should_call_hook};
pub use review::{
    FailureOutcome, WebhookTarget, WebhookVerdict, admission_review, call_error_text, denial,
    dry_run_unsupported, judge_response, on_call_error, review_version, timeout_seconds,
    transport_error_text, webhook_target,
};

/// The default `timeoutSeconds`.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The largest `timeoutSeconds` accepted.
pub const MAX_TIMEOUT_SECONDS: u64 = 30;

/// Applies the v1 defaults (`k8s:pkg/apis/admissionregistration/v1/defaults.go`) to every
/// webhook of a Validating/MutatingWebhookConfiguration: failurePolicy Fail, matchPolicy
/// Equivalent, namespaceSelector/objectSelector `{}`, timeoutSeconds 10, rules scope `*`,
/// service port 443, and (mutating) reinvocationPolicy Never.
pub fn default_configuration(configuration: &mut Value, mutating: bool) {
    let Some(webhooks) = configuration.get_mut("webhooks").and_then(Value::as_array_mut) else { return };
    for webhook in webhooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut default = |key: &str, value: Value| {
            if webhook.get(key).is_none_or(Value::is_null) {
                webhook.insert(key.to_string(), value);
            }
        };
        default("failurePolicy", json!("Fail"));
        default("matchPolicy", json!("Equivalent"));
        default("namespaceSelector", json!({}));
        default("objectSelector", json!({}));
        default("timeoutSeconds", json!(DEFAULT_TIMEOUT_SECONDS));
        if mutating {
            default("reinvocationPolicy", json!("Never"));
        }
        for rule in webhook.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(rule) = rule.as_object_mut() {
                rule.entry("scope").or_insert_with(|| json!("*"));
            }
        }
        if let Some(service) =
            webhook.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert_with(|| json!(443));
        }
    }
}

fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Validates a (defaulted) configuration's webhooks; an empty list means valid. Covers names
/// (fully qualified, unique), clientConfig (exactly one of url/service, https url),
/// rule operations, sideEffects, timeoutSeconds, admissionReviewVersions and the policy enums.
pub fn validate_configuration(configuration: &Value, mutating: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let empty = Vec::new();
    let webhooks = configuration.get("webhooks").and_then(Value::as_array).unwrap_or(&empty);
    let mut seen: Vec<&str> = Vec::new();
    for (i, webhook) in webhooks.iter().enumerate() {
        let at = |field: &str| format!("webhooks[{i}].{field}");
        let str_of = |field: &str| webhook.get(field).and_then(Value::as_str);
        match str_of("name") {
            None | Some("") => errors.push(FieldError::required(&at("name"), "")),
            Some(name) => {
                if !is_dns1123_subdomain(name) || name.split('.').count() < 3 {
                    errors.push(FieldError::invalid(
                        &at("name"),
                        &format!("\"{name}\""),
                        "should be a domain with at least three segments separated by dots",
                    ));
                }
                if seen.contains(&name) {
                    errors.push(FieldError {
                        cause: "FieldValueDuplicate",
                        field: at("name"),
                        message: format!("{}: Duplicate value: \"{name}\"", at("name")),
                    });
                }
                seen.push(name);
            }
        }
        let client = webhook.get("clientConfig").unwrap_or(&Value::Null);
        match (client.get("url").and_then(Value::as_str), client.get("service").filter(|s| s.is_object())) {
            (Some(_), Some(_)) | (None, None) => {
                errors.push(FieldError::required(
                    &at("clientConfig"),
                    "exactly one of url or service is required",
                ));
            }
            (Some(url), None) if !url.starts_with("https://") => errors.push(FieldError::invalid(
                &at("clientConfig.url"),
                &format!("\"{url}\""),
                "'https' is the only allowed URL scheme",
            )),
            _ => {}
        }
        for (r, rule) in webhook.get("rules").and_then(Value::as_array).unwrap_or(&empty).iter().enumerate() {
            let operations = rule.get("operations").and_then(Value::as_array).unwrap_or(&empty);
            if operations.len() > 1 && operations.iter().any(|o| o == "*") {
                errors.push(FieldError::invalid(
                    &at(&format!("rules[{r}].operations")),
                    &format!("{operations:?}"),
                    "if '*' is present, must not specify other operations",
                ));
            }
        }
        let side_effects = str_of("sideEffects");
        match side_effects {
            None => errors.push(FieldError::required(&at("sideEffects"), "")),
            Some(s) if !matches!(s, "None" | "NoneOnDryRun") => {
                errors.push(FieldError::not_supported(&at("sideEffects"), s, &["None", "NoneOnDryRun"]));
            }
            _ => {}
        }
        if let Some(t) =
            webhook.get("timeoutSeconds").and_then(Value::as_i64).filter(|t| !(1..=30).contains(t))
        {
            errors.push(FieldError::invalid(
                &at("timeoutSeconds"),
                &t.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        let versions = webhook.get("admissionReviewVersions").and_then(Value::as_array).unwrap_or(&empty);
        if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
            errors.push(FieldError::required(
                &at("admissionReviewVersions"),
                "must include at least one of v1, v1beta1",
            ));
        }
        for (field, allowed) in [
            ("failurePolicy", &["Ignore", "Fail"][..]),
            ("matchPolicy", &["Exact", "Equivalent"][..]),
            ("reinvocationPolicy", &["Never", "IfNeeded"][..]),
        ] {
            if field == "reinvocationPolicy" && !mutating {
                continue;
            }
            if let Some(v) = str_of(field).filter(|v| !allowed.contains(v)) {
                errors.push(FieldError::not_supported(&at(field), v, allowed));
            }
        }
    }
    errors
}

/// One webhook to consider, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookEntry {
    /// The configuration's `metadata.name`.
    pub configuration: String,
    /// Index within the configuration's `webhooks`.
    pub index: usize,
    /// The webhook object.
    pub webhook: Value,
}

/// All webhooks of the given configurations in the apiserver's order: configurations sorted
/// by name, webhooks in list order (mutating webhooks are called serially in this order).
pub fn ordered_webhooks(configurations: &[Value]) -> Vec<WebhookEntry> {
    let mut configurations: Vec<&Value> = configurations.iter().collect();
    configurations.sort_by(|a, b| super::common::name_of(a).cmp(super::common::name_of(b)));
    configurations
        .into_iter()
        .flat_map(|c| {
            let name = super::common::name_of(c).to_string();
            c.get("webhooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(move |(index, webhook)| WebhookEntry { configuration: name.clone(), index, webhook })
        })
        .collect()
}

fn labels_of(object: Option<&Value>) -> Option<&Map<String, Value>> {
    object?.pointer("/metadata/labels").and_then(Value::as_object)
}

#[cfg(test)]
mod tests;
