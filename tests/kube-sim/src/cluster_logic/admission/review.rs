//! The webhook call: AdmissionReview request (§3.5), target URL and timeout (§3.4), response
//! verification and judging (§3.6, §3.7), failurePolicy and dry-run rules (§3.8).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::matching::{AdmissionAttributes, Invocation};
use super::{DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS};
use crate::cluster_logic::common::StatusResponse;

fn webhook_name(webhook: &Value) -> &str {
    webhook.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The webhook's `timeoutSeconds` (default 10, clamped to 1..=30).
pub fn timeout_seconds(webhook: &Value) -> u64 {
    webhook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, MAX_TIMEOUT_SECONDS)
}

/// The AdmissionReview version to send: the first of `admissionReviewVersions` the server
/// knows (`v1`, `v1beta1`), or the call error text when there is none.
pub fn review_version(webhook: &Value) -> Result<&'static str, String> {
    let versions = webhook.get("admissionReviewVersions").and_then(Value::as_array);
    versions
        .into_iter()
        .flatten()
        .find_map(|v| match v.as_str() {
            Some("v1") => Some("admission.k8s.io/v1"),
            Some("v1beta1") => Some("admission.k8s.io/v1beta1"),
            _ => None,
        })
        .ok_or_else(|| {
            call_error_text(
                webhook_name(webhook),
                "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)",
            )
        })
}

/// Where a webhook is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookTarget {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service` (port defaulted to 443, path `""` when unset).
    Service {
        /// Service namespace.
        namespace: String,
        /// Service name.
        name: String,
        /// Port.
        port: u16,
        /// Path (with leading `/`, or empty).
        path: String,
    },
}

impl WebhookTarget {
    /// The URL the apiserver POSTs to (and names in errors), with `?timeout=<N>s`.
    pub fn url(&self, timeout_seconds: u64) -> String {
        let base = match self {
            Self::Url(url) => url.clone(),
            Self::Service { namespace, name, port, path } => {
                format!("https://{name}.{namespace}.svc:{port}{path}")
            }
        };
        format!("{base}?timeout={timeout_seconds}s")
    }
}

/// The webhook's target, or the call error text for a malformed clientConfig.
pub fn webhook_target(webhook: &Value) -> Result<WebhookTarget, String> {
    let client = webhook.get("clientConfig").unwrap_or(&Value::Null);
    if let Some(url) = client.get("url").and_then(Value::as_str) {
        return Ok(WebhookTarget::Url(url.to_string()));
    }
    let Some(service) = client.get("service").filter(|s| s.is_object()) else {
        return Err(call_error_text(
            webhook_name(webhook),
            "could not get REST client: no clientConfig url or service",
        ));
    };
    let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let port = service.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(443);
    Ok(WebhookTarget::Service { namespace: text("namespace"), name: text("name"), port, path: text("path") })
}

fn gvk(kind: &super::matching::ResourceKind) -> Value {
    json!({"group": kind.group, "version": kind.version, "kind": kind.kind})
}

fn gvr(resource: &super::matching::ResourceRef) -> Value {
    json!({"group": resource.group, "version": resource.version, "resource": resource.resource})
}

/// The AdmissionReview request body (`CreateV1AdmissionReview`): `uid` is fresh per call;
/// `api_version` is from [`review_version`]. Empty `subResource`, `name` and `namespace` are
/// omitted; `object`/`oldObject`/`options` are `null` when absent.
pub fn admission_review(
    api_version: &str,
    uid: &str,
    invocation: &Invocation,
    attributes: &AdmissionAttributes,
) -> Value {
    let mut request = Map::new();
    request.insert("uid".into(), json!(uid));
    request.insert("kind".into(), gvk(&invocation.resource.kind));
    request.insert("resource".into(), gvr(&invocation.resource));
    if !attributes.subresource.is_empty() {
        request.insert("subResource".into(), json!(attributes.subresource));
    }
    request.insert("requestKind".into(), gvk(&attributes.resource.kind));
    request.insert("requestResource".into(), gvr(&attributes.resource));
    if !attributes.subresource.is_empty() {
        request.insert("requestSubResource".into(), json!(attributes.subresource));
    }
    if !attributes.name.is_empty() {
        request.insert("name".into(), json!(attributes.name));
    }
    if !attributes.namespace.is_empty() {
        request.insert("namespace".into(), json!(attributes.namespace));
    }
    request.insert("operation".into(), json!(attributes.operation.as_str()));
    request.insert("userInfo".into(), attributes.user_info.clone());
    request.insert("object".into(), attributes.object.clone().unwrap_or(Value::Null));
    request.insert("oldObject".into(), attributes.old_object.clone().unwrap_or(Value::Null));
    request.insert("dryRun".into(), json!(attributes.dry_run));
    request.insert("options".into(), attributes.options.clone());
    json!({"apiVersion": api_version, "kind": "AdmissionReview", "request": request})
}

/// `ErrCallingWebhook` text: `failed calling webhook "<name>": <reason>`.
pub fn call_error_text(webhook_name: &str, reason: &str) -> String {
    format!("failed calling webhook \"{webhook_name}\": {reason}")
}

/// The call error for a transport failure, e.g. `detail = "context deadline exceeded"` on
/// timeout or `"dial tcp 127.0.0.1:9443: connect: connection refused"`.
pub fn transport_error_text(webhook_name: &str, url: &str, detail: &str) -> String {
    call_error_text(webhook_name, &format!("failed to call webhook: Post \"{url}\": {detail}"))
}

/// 400 for a dry-run request to a webhook whose sideEffects are not None/NoneOnDryRun
/// (checked before the call, whatever the failurePolicy).
pub fn dry_run_unsupported(webhook: &Value, dry_run: bool) -> Option<StatusResponse> {
    let side_effects = webhook.get("sideEffects").and_then(Value::as_str).unwrap_or("Unknown");
    (dry_run && !matches!(side_effects, "None" | "NoneOnDryRun")).then(|| {
        let message = format!("admission webhook \"{}\" does not support dry run", webhook_name(webhook));
        StatusResponse::failure(400, "BadRequest", &message, None)
    })
}

/// What a webhook's answer means.
#[derive(Clone, Debug, PartialEq)]
pub enum WebhookVerdict {
    /// Allowed; `patch` is the decoded JSONPatch (mutating only, non-empty), to be applied.
    Allowed {
        /// RFC 6902 operations.
        patch: Option<Value>,
        /// `Warning` header texts.
        warnings: Vec<String>,
        /// `response.auditAnnotations`.
        audit_annotations: Map<String, Value>,
    },
    /// Explicitly denied: answer this (failurePolicy does not apply).
    Denied {
        /// The client-visible error.
        status: StatusResponse,
        /// `Warning` header texts.
        warnings: Vec<String>,
    },
    /// A call error (`failed calling webhook ...`): apply [`on_call_error`].
    CallError(String),
    /// An error that fails the request whatever the failurePolicy (a patch on DELETE).
    Reject(StatusResponse),
}

/// upstream `NewGenericServerResponse`'s message for a non-Status, non-2xx answer.
fn generic_server_message(code: u16, body: &str) -> String {
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => body.into(),
        404 => "the server could not find the requested resource".into(),
        405 => "the server does not allow this method on the requested resource".into(),
        409 => "the server reported a conflict".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        c if c >= 500 => format!("an error on the server ({body:?}) has prevented the request from succeeding"),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// Judges the HTTP answer of one webhook call (`http_status`, raw `body`) to the review with
/// `request_uid`, sent as `api_version`. `has_object` is false for DELETE (a patch is then
/// refused). Verification follows `VerifyAdmissionResponse`.
pub fn judge_response(
    webhook: &Value,
    mutating: bool,
    api_version: &str,
    request_uid: &str,
    has_object: bool,
    http_status: u16,
    body: &[u8],
) -> WebhookVerdict {
    let name = webhook_name(webhook);
    let call_error = |reason: String| WebhookVerdict::CallError(call_error_text(name, &reason));
    let parsed: Result<Value, _> = serde_json::from_slice(body);
    if !(200..300).contains(&http_status) {
        let status_message = parsed
            .as_ref()
            .ok()
            .filter(|v| v["kind"] == "Status")
            .and_then(|v| v["message"].as_str().map(String::from));
        let text = String::from_utf8_lossy(body);
        let message = status_message.unwrap_or_else(|| generic_server_message(http_status, text.trim()));
        return call_error(format!("failed to call webhook: {message}"));
    }
    let review = match parsed {
        Ok(review @ Value::Object(_)) => review,
        Ok(other) => return call_error(format!("failed to call webhook: unexpected response body {other}")),
        Err(e) => {
            return call_error(format!("failed to call webhook: couldn't decode the response body: {e}"));
        }
    };
    let invalid = |detail: String| call_error(format!("received invalid webhook response: {detail}"));
    let (got_version, got_kind) =
        (review["apiVersion"].as_str().unwrap_or(""), review["kind"].as_str().unwrap_or(""));
    if got_version != api_version || got_kind != "AdmissionReview" {
        let (group, version) = got_version.split_once('/').unwrap_or(("", got_version));
        return invalid(format!(
            "expected webhook response of {api_version}, Kind=AdmissionReview, got {group}/{version}, Kind={got_kind}"
        ));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return invalid("webhook response was absent".into());
    };
    let uid = response["uid"].as_str().unwrap_or("");
    if uid != request_uid {
        return invalid(format!("expected response.uid=\"{request_uid}\", got \"{uid}\""));
    }
    let patch = response.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty());
    let patch_type = response.get("patchType").filter(|p| !p.is_null());
    if mutating {
        match (patch, patch_type) {
            (Some(_), None) => {
                return invalid("webhook returned response.patch but not response.patchType".into());
            }
            (None, Some(_)) => {
                return invalid("webhook returned response.patchType but not response.patch".into());
            }
            (_, Some(t)) if t.as_str().is_some_and(str::is_empty) => {
                return invalid("webhook returned invalid response.patchType of \"\"".into());
            }
            _ => {}
        }
    } else if patch.is_some() {
        return invalid("validating webhook may not return response.patch".into());
    } else if patch_type.is_some() {
        return invalid("validating webhook may not return response.patchType".into());
    }
    let warnings: Vec<String> = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| w.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    if response["allowed"] != true {
        let status = response.get("status").cloned().unwrap_or(Value::Null);
        return WebhookVerdict::Denied { status: denial(name, &status), warnings };
    }
    let mut decoded_patch = None;
    if let (Some(patch), Some(patch_type)) = (patch, patch_type) {
        if patch_type != "JSONPatch" {
            return call_error(format!("unsupported patch type \"{}\"", patch_type.as_str().unwrap_or("")));
        }
        let ops = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()))
            .and_then(|v| if v.is_array() { Ok(v) } else { Err("the patch is not a JSON array".into()) });
        match ops {
            Err(e) => return call_error(format!("received undecodable patch in webhook response: {e}")),
            Ok(ops) if ops.as_array().is_some_and(|a| !a.is_empty()) => {
                if !has_object {
                    let message = format!(
                        "admission webhook \"{name}\" attempted to modify the object, which is not supported for this operation"
                    );
                    return WebhookVerdict::Reject(StatusResponse::failure(
                        500,
                        "InternalError",
                        &message,
                        None,
                    ));
                }
                decoded_patch = Some(ops);
            }
            Ok(_) => {}
        }
    }
    let audit_annotations =
        response.get("auditAnnotations").and_then(Value::as_object).cloned().unwrap_or_default();
    WebhookVerdict::Allowed { patch: decoded_patch, warnings, audit_annotations }
}

/// `ToStatusErr`: the client-visible error for `allowed: false` with `response.status`.
pub fn denial(webhook_name: &str, status: &Value) -> StatusResponse {
    let code =
        status.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).filter(|c| *c >= 400);
    let code = code.unwrap_or(400);
    let message = match (
        status["message"].as_str().filter(|m| !m.is_empty()),
        status["reason"].as_str().filter(|r| !r.is_empty()),
    ) {
        (Some(message), _) => format!("admission webhook \"{webhook_name}\" denied the request: {message}"),
        (None, Some(reason)) => format!("admission webhook \"{webhook_name}\" denied the request: {reason}"),
        (None, None) => {
            format!("admission webhook \"{webhook_name}\" denied the request without explanation")
        }
    };
    let reason = status["reason"].as_str().unwrap_or("");
    let details = status.get("details").filter(|d| !d.is_null()).cloned();
    StatusResponse::failure(code, reason, &message, details)
}

/// What a call error leads to under the webhook's failurePolicy.
#[derive(Clone, Debug, PartialEq)]
pub enum FailureOutcome {
    /// `Fail`: answer 500 `Internal error occurred: <call error>`.
    Reject(StatusResponse),
    /// `Ignore`: proceed as if allowed (object unchanged), recording this audit annotation.
    Ignore {
        /// `failed-open.{validating,mutation}.webhook.admission.k8s.io/round_<r>_index_<i>`.
        annotation_key: String,
        /// The webhook name.
        annotation_value: String,
    },
}

/// Applies failurePolicy to a call error. `round`/`index` identify the call (round 0 for
/// validating webhooks; `index` is the webhook's position among those called).
pub fn on_call_error(
    webhook: &Value,
    mutating: bool,
    round: usize,
    index: usize,
    error_text: &str,
) -> FailureOutcome {
    if webhook.get("failurePolicy").and_then(Value::as_str) == Some("Ignore") {
        let kind = if mutating { "mutation" } else { "validating" };
        return FailureOutcome::Ignore {
            annotation_key: format!(
                "failed-open.{kind}.webhook.admission.k8s.io/round_{round}_index_{index}"
            ),
            annotation_value: webhook_name(webhook).to_string(),
        };
    }
    FailureOutcome::Reject(StatusResponse::failure(
        500,
        "InternalError",
        &format!("Internal error occurred: {error_text}"),
        Some(json!({"causes": [{"message": error_text}]})),
    ))
}
