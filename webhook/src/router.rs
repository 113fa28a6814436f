//! The admission endpoints. Every well-formed review is allowed, without any API call;
//! evictions become [`Signal`]s offered to the [`AdmissionHandler`] at once, Deployments and
//! PDBs are decoded and handed to it on a spawned task. While a node drains an eviction may be
//! held: answered only once the controller says its budget is open, or by the apiserver's
//! deadline less [`EVICTION_HOLD_MARGIN`], whichever comes first ([`eviction_hold`]). Client mistakes get a 4xx with a
//! `metav1.Status` body naming the problem: client-go (the apiserver's webhook client) logs a
//! Status's message, and only a generic line for any other body.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use eviction_autoscaler_shared::admission::{AdmissionHandler, EvictionHold, HoldEnd, Signal};
use eviction_autoscaler_shared::config::EVICTION_HOLD_MARGIN;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Semaphore, oneshot};

use crate::metrics::{Endpoint, Metrics, Outcome};
use crate::review::{
    Envelope, EvictionRequest, FullEnvelope, ObjectRequest, REVIEW_API_VERSION, REVIEW_KIND, TypeView,
    allow_response,
};

/// Largest request body accepted (the apiserver's own object limit is 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Most admitted objects decoded for the controller at once: each holds its review (up to
/// [`MAX_BODY_BYTES`]) until handed over, so a burst is bounded to ~100 MiB. Beyond it an object
/// is dropped and counted; its review is still allowed at once, and the controller acts on it
/// from its watch a moment later.
pub const MAX_OBJECTS_IN_FLIGHT: usize = 32;

/// The most of an oversized body read and dropped before its 413 ([`discard`]).
const DISCARD_AT_MOST: usize = 4 * MAX_BODY_BYTES;

/// The longest an oversized body is read before its 413 ([`discard`]).
const DISCARD_FOR: Duration = Duration::from_secs(5);

/// The apiserver's webhook timeout when a call carries no `?timeout=` (its default
/// `timeoutSeconds`; the apiserver always sends one).
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The group the apiserver's API Priority and Fairness exempts (its `exempt` FlowSchema).
const EXEMPT_GROUP: &str = "system:masters";

/// What the handlers share: the admission handler and the metrics.
///
/// One `Arc` around all of it: axum clones the state for every request, and cloning the
/// parts one by one would cost a dozen contended atomic increments per admission.
#[derive(Clone)]
pub struct WebhookState(Arc<Shared>);

struct Shared {
    handler: Arc<dyn AdmissionHandler>,
    metrics: Metrics,
    /// Admitted objects being decoded for the handler ([`MAX_OBJECTS_IN_FLIGHT`]).
    in_flight: Arc<Semaphore>,
}

impl WebhookState {
    /// State for [`router`].
    pub fn new(handler: Arc<dyn AdmissionHandler>, metrics: Metrics) -> Self {
        Self::with_objects_in_flight(handler, metrics, MAX_OBJECTS_IN_FLIGHT)
    }

    /// Like [`WebhookState::new`], with at most `limit` admitted objects in flight.
    pub fn with_objects_in_flight(
        handler: Arc<dyn AdmissionHandler>,
        metrics: Metrics,
        limit: usize,
    ) -> Self {
        Self(Arc::new(Shared { handler, metrics, in_flight: Arc::new(Semaphore::new(limit)) }))
    }
}

/// The webhook's routes: `POST /validate-eviction`, `/validate-deployment`, `/validate-pdb`.
pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route("/validate-eviction", post(validate_eviction))
        .route("/validate-deployment", post(validate_deployment))
        .route("/validate-pdb", post(validate_pdb))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// A client mistake: status, metric label and a one-line reason.
struct Rejection {
    status: StatusCode,
    outcome: Outcome,
    reason: String,
}

impl Rejection {
    fn bad_request(outcome: Outcome, reason: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, outcome, reason: reason.into() }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        tracing::debug!(status = %self.status, reason = %self.reason, "admission request rejected");
        // The apiserver's own StatusReason for each status we answer.
        let reason = match self.status {
            StatusCode::NOT_FOUND => "NotFound",
            StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
            StatusCode::PAYLOAD_TOO_LARGE => "RequestEntityTooLarge",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "UnsupportedMediaType",
            _ => "BadRequest",
        };
        let status = serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.reason, "reason": reason, "code": self.status.as_u16(),
        });
        let mut response = (self.status, status.to_string()).into_response();
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

type Handled = Result<(Outcome, Vec<u8>), Rejection>;

/// Runs one endpoint, records its result and duration, and builds the HTTP response.
fn finish(state: &Shared, path: Endpoint, started: Instant, handled: Handled) -> Response {
    let (outcome, response) = match handled {
        Ok((outcome, body)) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            (outcome, response)
        }
        Err(rejection) => (rejection.outcome, rejection.into_response()),
    };
    state.metrics.observe(path, outcome, started.elapsed().as_secs_f64());
    response
}

async fn validate_eviction(State(WebhookState(state)): State<WebhookState>, request: Request) -> Response {
    let started = Instant::now();
    let handled = handle_eviction(&state, request).await;
    finish(&state, Endpoint::Eviction, started, handled)
}

async fn validate_deployment(State(WebhookState(state)): State<WebhookState>, request: Request) -> Response {
    let started = Instant::now();
    let handled = handle_object(&state, request, HandedOver::Deployment).await;
    finish(&state, Endpoint::Deployment, started, handled)
}

async fn validate_pdb(State(WebhookState(state)): State<WebhookState>, request: Request) -> Response {
    let started = Instant::now();
    let handled = handle_object(&state, request, HandedOver::Pdb).await;
    finish(&state, Endpoint::Pdb, started, handled)
}

async fn unknown_path(State(WebhookState(state)): State<WebhookState>, request: Request) -> Response {
    let started = Instant::now();
    let path: String = request.uri().path().chars().take(100).collect();
    let rejection = Rejection {
        status: StatusCode::NOT_FOUND,
        outcome: Outcome::unknown_path,
        reason: format!(
            "no such path {path:?}; the webhook serves /validate-eviction, /validate-deployment and /validate-pdb"
        ),
    };
    finish(&state, Endpoint::Other, started, Err(rejection))
}

async fn wrong_method(State(WebhookState(state)): State<WebhookState>, request: Request) -> Response {
    let started = Instant::now();
    let endpoint = Endpoint::from_path(request.uri().path());
    let rejection = Rejection {
        status: StatusCode::METHOD_NOT_ALLOWED,
        outcome: Outcome::wrong_method,
        reason: format!("method {} not allowed; admission reviews are POSTed", request.method()),
    };
    let mut response = finish(&state, endpoint, started, Err(rejection));
    response.headers_mut().insert(http::header::ALLOW, HeaderValue::from_static("POST"));
    response
}

async fn handle_eviction(state: &Shared, request: Request) -> Handled {
    let started = Instant::now();
    let call_timeout = call_timeout(request.uri().query());
    let body = read_body(request).await?;
    let review: Envelope<EvictionRequest> = decode(&body)?;
    let request = checked_request(review.api_version, review.kind, review.request)?;
    let uid = required_uid(request.uid.as_deref())?;
    let object = request.object.as_ref();
    if let Some(object) = object {
        check_type(object.api_version.as_deref(), object.kind.as_deref(), ObjectKind::Eviction)?;
    }
    let response = allow_response(uid);

    if request.operation.as_deref().is_some_and(|op| op != "CREATE") {
        return Ok((Outcome::ignored, response));
    }
    // `kubectl drain --dry-run=server` marks the dry run only inside the Eviction.
    let dry_run_in_options = object
        .and_then(|o| o.delete_options.as_ref())
        .and_then(|d| d.dry_run.as_ref())
        .is_some_and(|list| list.0);
    if request.dry_run == Some(true) || dry_run_in_options {
        state.metrics.dry_run_ignored();
        return Ok((Outcome::dry_run, response));
    }
    let meta = object.and_then(|o| o.metadata.as_ref());
    let pod = non_empty(meta.and_then(|m| m.name.as_ref())).or(non_empty(request.name.as_ref()));
    // The apiserver fills the Eviction's namespace from the URL, but older clients may not.
    let namespace =
        non_empty(meta.and_then(|m| m.namespace.as_ref())).or(non_empty(request.namespace.as_ref()));
    let (Some(pod), Some(namespace)) = (pod, namespace) else {
        tracing::warn!(uid, "eviction review names no pod or namespace; nothing to signal");
        return Ok((Outcome::ignored, response));
    };
    let user = request.user_info.as_ref();
    let mut signal = Signal::new(
        namespace,
        pod,
        jiff::Timestamp::now(),
        user.and_then(|u| u.username.as_deref()).unwrap_or_default(),
    );
    // Never past the apiserver's deadline: a hold that outlives it fails the call, and kubectl
    // drain treats the timeout as fatal for the pod where it retries a 429.
    let answer_by =
        call_timeout.checked_sub(EVICTION_HOLD_MARGIN).filter(|h| !h.is_zero()).map(|hold| started + hold);
    // The answer channel only while holding: the hot path allocates nothing for it.
    let held = answer_by.filter(|_| state.handler.holding()).map(|answer_by| {
        let exempt =
            user.and_then(|u| u.groups.as_ref()).is_some_and(|g| g.iter().any(|g| g == EXEMPT_GROUP));
        let (answer, answered) = oneshot::channel();
        signal.hold = Some(EvictionHold { answer_by, exempt, answer });
        (answer_by, answered)
    });
    if !state.handler.eviction(signal) {
        state.metrics.signal_dropped();
        tracing::debug!(namespace, pod, "signal lane full; eviction signal dropped");
        return Ok((Outcome::allowed, response));
    }
    state.metrics.signal_emitted();
    let Some((answer_by, answered)) = held else { return Ok((Outcome::allowed, response)) };
    match hold(answered, answer_by).await {
        Some(end) => {
            state.metrics.hold_ended(end, started.elapsed().as_secs_f64());
            Ok((Outcome::held, response))
        }
        None => Ok((Outcome::allowed, response)),
    }
}

/// Waits for the controller's answer to a held eviction, until `answer_by` at the latest
/// (then [`HoldEnd::Expired`]). `None`: the controller did not hold it (the answer was dropped).
async fn hold(answered: oneshot::Receiver<HoldEnd>, answer_by: Instant) -> Option<HoldEnd> {
    match tokio::time::timeout_at(answer_by, answered).await {
        Ok(Ok(end)) => Some(end),
        Ok(Err(_)) => None,
        Err(_) => Some(HoldEnd::Expired),
    }
}

/// The apiserver's timeout for this call, from the `?timeout=` it adds to every webhook call
/// (min(`timeoutSeconds`, what is left of the request's own deadline), a Go duration).
fn call_timeout(query: Option<&str>) -> Duration {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("timeout="))
        .and_then(parse_go_duration)
        .unwrap_or(DEFAULT_CALL_TIMEOUT)
}

/// A Go `time.Duration` string as the apiserver writes it (`10s`, `1m0s`, `9.5s`, `300ms`).
fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = 0.0_f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_end);
        let number: f64 = number.parse().ok()?;
        let unit_end = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = tail;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The object a review carries, for checking its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ObjectKind {
    Eviction,
    Deployment,
    Pdb,
}

impl ObjectKind {
    fn accepts(self, api_version: &str, kind: &str) -> bool {
        match self {
            Self::Eviction => matches!(api_version, "policy/v1" | "policy/v1beta1") && kind == "Eviction",
            Self::Deployment => api_version == "apps/v1" && kind == "Deployment",
            Self::Pdb => api_version == "policy/v1" && kind == "PodDisruptionBudget",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Self::Eviction => "policy/v1 or policy/v1beta1 Eviction",
            Self::Deployment => "apps/v1 Deployment",
            Self::Pdb => "policy/v1 PodDisruptionBudget",
        }
    }
}

/// The objects whose admission is handed to the controller (an eviction is a [`Signal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HandedOver {
    Deployment,
    Pdb,
}

impl HandedOver {
    fn kind(self) -> ObjectKind {
        match self {
            Self::Deployment => ObjectKind::Deployment,
            Self::Pdb => ObjectKind::Pdb,
        }
    }

    fn on(self, operation: &str) -> bool {
        match self {
            Self::Deployment => operation == "CREATE",
            Self::Pdb => matches!(operation, "CREATE" | "UPDATE"),
        }
    }
}

async fn handle_object(state: &Shared, request: Request, handed_over: HandedOver) -> Handled {
    let body = read_body(request).await?;
    let review: Envelope<ObjectRequest> = decode(&body)?;
    let request = checked_request(review.api_version, review.kind, review.request)?;
    let uid = required_uid(request.uid.as_deref())?;
    if let Some(TypeView { api_version, kind: object_kind }) = &request.object {
        check_type(api_version.as_deref(), object_kind.as_deref(), handed_over.kind())?;
    }
    let response = allow_response(uid);
    let operation = request.operation.as_deref().unwrap_or_default();
    if !handed_over.on(operation) || request.object.is_none() {
        return Ok((Outcome::ignored, response));
    }
    if request.dry_run == Some(true) {
        state.metrics.dry_run_ignored();
        return Ok((Outcome::dry_run, response));
    }
    match handed_over {
        HandedOver::Deployment => {
            deliver::<Deployment>(state, body.clone(), |handler, object| handler.deployment_created(object))
        }
        HandedOver::Pdb => {
            deliver::<PodDisruptionBudget>(state, body.clone(), |handler, object| handler.pdb_written(object))
        }
    }
    Ok((Outcome::allowed, response))
}

/// Decodes the full object and calls the handler on a spawned task, off the request path;
/// drops it (counted) when [`MAX_OBJECTS_IN_FLIGHT`] are already on their way.
fn deliver<T: DeserializeOwned + Send + 'static>(
    state: &Shared,
    body: Bytes,
    hand_over: fn(&dyn AdmissionHandler, T),
) {
    let Ok(permit) = Arc::clone(&state.in_flight).try_acquire_owned() else {
        state.metrics.object_dropped();
        tracing::debug!("too many admitted objects in flight; this one is left to the controller's watch");
        return;
    };
    let handler = Arc::clone(&state.handler);
    let metrics = state.metrics.clone();
    tokio::spawn(async move {
        let _permit = permit;
        match serde_json::from_slice::<FullEnvelope<T>>(&body) {
            Ok(review) => hand_over(handler.as_ref(), review.request.object),
            Err(error) => {
                metrics.object_undecodable();
                tracing::warn!(%error, "admitted object could not be decoded for the handler");
            }
        }
    });
}

/// Checks the content type and reads at most [`MAX_BODY_BYTES`].
async fn read_body(request: Request) -> Result<Bytes, Rejection> {
    let content_type = request.headers().get(CONTENT_TYPE);
    if !content_type.is_some_and(is_json) {
        let got = content_type.map_or(Cow::Borrowed("no Content-Type"), |v| {
            Cow::Owned(format!("{:?}", String::from_utf8_lossy(v.as_bytes())))
        });
        return Err(Rejection {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            outcome: Outcome::wrong_content_type,
            reason: format!("content type must be application/json, got {got}"),
        });
    }
    let too_large = || Rejection {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        outcome: Outcome::too_large,
        reason: format!("request body is larger than {MAX_BODY_BYTES} bytes"),
    };
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut body = request.into_body();
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        discard(body).await;
        return Err(too_large());
    }
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| {
            Rejection::bad_request(Outcome::body_error, format!("cannot read the request body: {error}"))
        })?;
        let Ok(data) = frame.into_data() else { continue }; // trailers
        if collected.len() + data.len() > MAX_BODY_BYTES {
            discard(body).await;
            return Err(too_large());
        }
        collected.extend_from_slice(&data);
    }
    Ok(Bytes::from(collected))
}

/// Reads and drops what is left of an oversized `body` before the 413 goes out, within
/// [`DISCARD_AT_MOST`] and [`DISCARD_FOR`]: over HTTP/2 an answer sent while the client is still
/// sending ends with a reset of its stream, which some clients (curl 7.88) report instead of
/// the answer. Past either bound the stream is reset anyway.
async fn discard(mut body: Body) {
    let mut left = DISCARD_AT_MOST;
    let _ = tokio::time::timeout(DISCARD_FOR, async {
        while let Some(Ok(frame)) = body.frame().await {
            let Some(data) = frame.data_ref() else { continue };
            let Some(rest) = left.checked_sub(data.len()) else { return };
            left = rest;
        }
    })
    .await;
}

fn is_json(value: &HeaderValue) -> bool {
    let Ok(value) = value.to_str() else { return false };
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

fn decode<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Rejection> {
    // One UTF-8 check of the whole body is cheaper than serde_json's check of every string
    // it borrows (~20 % of the decoding time of an eviction review).
    let text = std::str::from_utf8(body).map_err(|error| {
        Rejection::bad_request(
            Outcome::not_json,
            format!("body is not JSON: invalid UTF-8 at byte {}", error.valid_up_to()),
        )
    })?;
    serde_json::from_str(text).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => {
            Rejection::bad_request(Outcome::malformed, format!("body is not an AdmissionReview: {error}"))
        }
        _ => Rejection::bad_request(Outcome::not_json, format!("body is not JSON: {error}")),
    })
}

/// Checks the envelope type and returns the request.
fn checked_request<R>(
    api_version: Option<Cow<'_, str>>,
    kind: Option<Cow<'_, str>>,
    request: Option<R>,
) -> Result<R, Rejection> {
    let api_version = api_version.unwrap_or_default();
    let kind = kind.unwrap_or_default();
    if api_version != REVIEW_API_VERSION || kind != REVIEW_KIND {
        return Err(Rejection::bad_request(
            Outcome::wrong_type,
            format!(
                "expected {REVIEW_API_VERSION} {REVIEW_KIND}, got apiVersion {api_version:?} kind {kind:?}"
            ),
        ));
    }
    request.ok_or_else(|| Rejection::bad_request(Outcome::missing_request, "AdmissionReview has no request"))
}

fn required_uid(uid: Option<&str>) -> Result<&str, Rejection> {
    uid.filter(|uid| !uid.is_empty())
        .ok_or_else(|| Rejection::bad_request(Outcome::missing_uid, "request.uid is missing"))
}

/// Rejects an object whose declared type is not the endpoint's (a misregistered webhook).
fn check_type(api_version: Option<&str>, kind: Option<&str>, expected: ObjectKind) -> Result<(), Rejection> {
    let (Some(api_version), Some(kind)) = (api_version, kind) else { return Ok(()) };
    if expected.accepts(api_version, kind) {
        return Ok(());
    }
    Err(Rejection::bad_request(
        Outcome::wrong_object,
        format!("request.object is {api_version} {kind}, expected {}", expected.expected()),
    ))
}

fn non_empty<'a>(value: Option<&'a Cow<'_, str>>) -> Option<&'a str> {
    value.map(|v| v.as_ref()).filter(|v| !v.is_empty())
}
