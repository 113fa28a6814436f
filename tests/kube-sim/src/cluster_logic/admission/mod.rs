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
