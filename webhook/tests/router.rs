//! Router tests without a network: recorded AdmissionReviews through `oneshot`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use common::{RecordingHandler, eventually, fixture, metrics_text, sample};
use eviction_autoscaler_webhook::{MAX_BODY_BYTES, Metrics, WebhookState, router};
use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use tower::ServiceExt;

struct Harness {
    app: Router,
    handler: Arc<RecordingHandler>,
    metrics: Metrics,
}

fn harness_with_capacity(capacity: usize) -> Harness {
    let handler = RecordingHandler::with_signal_capacity(capacity);
    let metrics = Metrics::new();
    let app = router(WebhookState::new(handler.clone(), metrics.clone()));
    Harness { app, handler, metrics }
}

fn harness() -> Harness {
    harness_with_capacity(16)
}

struct Reply {
    status: StatusCode,
    content_type: String,
    body: String,
}

async fn send(app: &Router, method: Method, path: &str, content_type: Option<&str>, body: Body) -> Reply {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    let request = request.body(body).unwrap_or_else(|e| panic!("request: {e}"));
    let response = app.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    Reply { status, content_type, body: String::from_utf8_lossy(&bytes).into_owned() }
}

async fn post(app: &Router, path: &str, body: impl Into<Body>) -> Reply {
    send(app, Method::POST, path, Some("application/json"), body.into()).await
}

fn allowed(uid: &str) -> String {
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{"uid":"{uid}","allowed":true}}}}"#
    )
}

fn assert_allowed(reply: &Reply, uid: &str) {
    assert_eq!(reply.status, StatusCode::OK, "body: {}", reply.body);
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(reply.body, allowed(uid));
}

#[tokio::test]
async fn policy_v1_eviction_is_allowed_and_signalled() {
    let h = harness();
    let reply = post(&h.app, "/validate-eviction", fixture("eviction-v1.json")).await;
    assert_allowed(&reply, "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11");
    let signal = h.handler.take_signal().unwrap_or_else(|| panic!("no signal emitted"));
    assert_eq!(signal.namespace, "prod");
    assert_eq!(signal.pod, "web-7d4b9c6f5-x2kq9");
    assert_eq!(signal.user, "system:serviceaccount:ops:drainer");
    let age = jiff::Timestamp::now().duration_since(signal.at);
    assert!(age.as_secs_f64() >= 0.0 && age.as_secs_f64() < 5.0, "signal time is now, was {age:?} ago");
    assert!(h.handler.take_signal().is_none(), "exactly one signal per eviction");
    assert_eq!(h.metrics.signals_emitted(), 1);
    let text = metrics_text(&h.metrics);
    assert_eq!(
        sample(
            &text,
            r#"eviction_autoscaler_webhook_requests_total{path="/validate-eviction",result="allowed"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            r#"eviction_autoscaler_webhook_request_duration_seconds_count{path="/validate-eviction"}"#
        ),
        1.0
    );
}

#[tokio::test]
async fn policy_v1beta1_eviction_is_allowed_and_signalled() {
    let h = harness();
    let reply = post(&h.app, "/validate-eviction", fixture("eviction-v1beta1.json")).await;
    assert_allowed(&reply, "8d2f8f0c-53c4-4a55-8f57-0d6e1c0b7a02");
    let signal = h.handler.take_signal().unwrap_or_else(|| panic!("no signal emitted"));
    assert_eq!((signal.namespace.as_str(), signal.pod.as_str()), ("shop", "api-5f6c7b8d9-qwert"));
    assert_eq!(signal.user, "kubernetes-admin");
}

#[tokio::test]
async fn eviction_without_namespace_takes_it_from_the_request() {
    let h = harness();
    let reply = post(&h.app, "/validate-eviction", fixture("eviction-no-namespace.json")).await;
    assert_allowed(&reply, "3a9e4b7c-1d2e-4f60-8a71-b2c3d4e5f601");
    let signal = h.handler.take_signal().unwrap_or_else(|| panic!("no signal emitted"));
    assert_eq!((signal.namespace.as_str(), signal.pod.as_str()), ("batch", "worker-0"));
}

#[tokio::test]
async fn dry_run_in_the_review_is_allowed_without_a_signal() {
    let h = harness();
    let reply = post(&h.app, "/validate-eviction", fixture("eviction-dry-run-review.json")).await;
    assert_allowed(&reply, "7e1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c04");
    assert!(h.handler.take_signal().is_none(), "a dry run must not signal");
    assert_eq!(h.metrics.dry_runs_ignored(), 1);
    assert_eq!(h.metrics.signals_emitted(), 0);
}

#[tokio::test]
async fn dry_run_only_in_delete_options_is_allowed_without_a_signal() {
    let h = harness();
    let reply = post(&h.app, "/validate-eviction", fixture("eviction-dry-run-delete-options.json")).await;
    assert_allowed(&reply, "c4d5e6f7-0812-4a3b-9c4d-5e6f708192a5");
    assert!(h.handler.take_signal().is_none(), "kubectl drain --dry-run=server must not signal");
    assert_eq!(h.metrics.dry_runs_ignored(), 1);
    let text = metrics_text(&h.metrics);
    assert_eq!(
        sample(
            &text,
            r#"eviction_autoscaler_webhook_requests_total{path="/validate-eviction",result="dry_run"}"#
        ),
        1.0
    );
}

#[tokio::test]
async fn full_signal_queue_drops_and_counts_but_still_allows() {
    let h = harness_with_capacity(1);
    let first = post(&h.app, "/validate-eviction", fixture("eviction-v1.json")).await;
    assert_allowed(&first, "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11");
    let second = post(&h.app, "/validate-eviction", fixture("eviction-v1beta1.json")).await;
    assert_allowed(&second, "8d2f8f0c-53c4-4a55-8f57-0d6e1c0b7a02");
    assert_eq!(h.metrics.signals_emitted(), 1);
    assert_eq!(h.metrics.signals_dropped(), 1);
    assert_eq!(h.handler.take_signal().map(|s| s.pod), Some("web-7d4b9c6f5-x2kq9".into()));
    assert!(h.handler.take_signal().is_none());
}

#[tokio::test]
async fn deployment_create_is_allowed_and_handed_to_the_handler() {
    let h = harness();
    let reply = post(&h.app, "/validate-deployment", fixture("deployment-create.json")).await;
    assert_allowed(&reply, "e2a1c9b8-7d6f-4e5a-9b3c-2d1e0f9a8b76");
    assert!(eventually(Duration::from_secs(5), || !h.handler.deployment_names().is_empty()).await);
    let deployments = h.handler.deployments.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(deployments.len(), 1);
    assert_eq!(deployments[0].metadata.name.as_deref(), Some("web"));
    assert_eq!(deployments[0].metadata.uid.as_deref(), Some("4f1d2c3b-5a69-4788-9a0b-1c2d3e4f5a6b"));
    assert_eq!(deployments[0].spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert!(h.handler.pdb_names().is_empty());
}

#[tokio::test]
async fn dry_run_and_non_create_deployments_are_not_handed_over() {
    let h = harness();
    let text = String::from_utf8_lossy(&fixture("deployment-create.json")).into_owned();
    let dry = text.replace(r#""dryRun": false"#, r#""dryRun": true"#);
    let update = text.replace(r#""operation": "CREATE""#, r#""operation": "UPDATE""#);
    let renamed = text.replace(r#""name": "web", "namespace""#, r#""name": "second", "namespace""#);
    assert_allowed(&post(&h.app, "/validate-deployment", dry).await, "e2a1c9b8-7d6f-4e5a-9b3c-2d1e0f9a8b76");
    assert_allowed(
        &post(&h.app, "/validate-deployment", update).await,
        "e2a1c9b8-7d6f-4e5a-9b3c-2d1e0f9a8b76",
    );
    // A real create afterwards: once it arrives, nothing else was delivered before it.
    assert_allowed(
        &post(&h.app, "/validate-deployment", renamed).await,
        "e2a1c9b8-7d6f-4e5a-9b3c-2d1e0f9a8b76",
    );
    assert!(eventually(Duration::from_secs(5), || !h.handler.deployment_names().is_empty()).await);
    assert_eq!(h.handler.deployment_names(), ["second"]);
    assert_eq!(h.metrics.dry_runs_ignored(), 1);
}

#[tokio::test]
async fn pdb_create_and_update_are_allowed_and_handed_to_the_handler() {
    let h = harness();
    let reply = post(&h.app, "/validate-pdb", fixture("pdb-create.json")).await;
    assert_allowed(&reply, "9b8a7c6d-5e4f-4321-8fed-cba987654321");
    let update = String::from_utf8_lossy(&fixture("pdb-create.json"))
        .replace(r#""operation": "CREATE""#, r#""operation": "UPDATE""#)
        .replace("9b8a7c6d-5e4f-4321-8fed-cba987654321", "update-uid");
    assert_allowed(&post(&h.app, "/validate-pdb", update).await, "update-uid");
    assert!(eventually(Duration::from_secs(5), || h.handler.pdb_names().len() == 2).await);
    assert_eq!(h.handler.pdb_names(), ["web-pdb", "web-pdb"]);
    let pdbs = h.handler.pdbs.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(pdbs[0].metadata.uid.as_deref(), Some("0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9"));
    assert!(h.handler.deployment_names().is_empty());
}

/// Name, method, path, content type, body; expected status, reason line, result label.
type Case =
    (&'static str, Method, &'static str, Option<&'static str>, Body, StatusCode, &'static str, &'static str);

/// Each kind of client mistake: exact status, exact reason, and its counter.
#[tokio::test]
async fn malformed_requests_get_a_4xx_with_a_reason_and_are_counted() {
    let h = harness();
    let eviction = fixture("eviction-v1.json");
    let huge = vec![b' '; MAX_BODY_BYTES + 1];
    let cases: Vec<Case> = vec![
        (
            "not JSON",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("not-json.txt")),
            StatusCode::BAD_REQUEST,
            "body is not JSON: expected ident at line 1 column 2",
            "not_json",
        ),
        (
            "empty body",
            Method::POST,
            "/validate-pdb",
            Some("application/json"),
            Body::empty(),
            StatusCode::BAD_REQUEST,
            "body is not JSON: EOF while parsing a value at line 1 column 0",
            "not_json",
        ),
        (
            // JSON is UTF-8 (RFC 8259 §8.1); the byte offset names where it broke.
            "not UTF-8",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(b"{\"apiVersion\":\"admission.k8s.io/v1\xff\"}".to_vec()),
            StatusCode::BAD_REQUEST,
            "body is not JSON: invalid UTF-8 at byte 34",
            "not_json",
        ),
        (
            "JSON but not an object",
            Method::POST,
            "/validate-deployment",
            Some("application/json"),
            Body::from("42"),
            StatusCode::BAD_REQUEST,
            "body is not an AdmissionReview: invalid type: integer `42`, expected struct Envelope at line 1 column 2",
            "malformed",
        ),
        (
            "wrong apiVersion",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("wrong-api-version.json")),
            StatusCode::BAD_REQUEST,
            r#"expected admission.k8s.io/v1 AdmissionReview, got apiVersion "admission.k8s.io/v1beta1" kind "AdmissionReview""#,
            "wrong_type",
        ),
        (
            "wrong kind",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("wrong-kind.json")),
            StatusCode::BAD_REQUEST,
            r#"expected admission.k8s.io/v1 AdmissionReview, got apiVersion "admission.k8s.io/v1" kind "Eviction""#,
            "wrong_type",
        ),
        (
            "missing request",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("missing-request.json")),
            StatusCode::BAD_REQUEST,
            "AdmissionReview has no request",
            "missing_request",
        ),
        (
            "missing uid",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("missing-uid.json")),
            StatusCode::BAD_REQUEST,
            "request.uid is missing",
            "missing_uid",
        ),
        (
            "a Deployment sent to the eviction path",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from(fixture("deployment-create.json")),
            StatusCode::BAD_REQUEST,
            "request.object is apps/v1 Deployment, expected policy/v1 or policy/v1beta1 Eviction",
            "wrong_object",
        ),
        (
            "text/plain",
            Method::POST,
            "/validate-eviction",
            Some("text/plain"),
            Body::from(eviction.clone()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            r#"content type must be application/json, got "text/plain""#,
            "wrong_content_type",
        ),
        (
            "no content type",
            Method::POST,
            "/validate-eviction",
            None,
            Body::from(eviction.clone()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content type must be application/json, got no Content-Type",
            "wrong_content_type",
        ),
        (
            "body over 3 MiB without a length",
            Method::POST,
            "/validate-eviction",
            Some("application/json"),
            Body::from_stream(futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(huge))])),
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body is larger than 3145728 bytes",
            "too_large",
        ),
        (
            "unknown path",
            Method::POST,
            "/mutate",
            Some("application/json"),
            Body::from(eviction.clone()),
            StatusCode::NOT_FOUND,
            r#"no such path "/mutate"; the webhook serves /validate-eviction, /validate-deployment and /validate-pdb"#,
            "unknown_path",
        ),
        (
            "GET on a webhook path",
            Method::GET,
            "/validate-eviction",
            None,
            Body::empty(),
            StatusCode::METHOD_NOT_ALLOWED,
            "method GET not allowed; admission reviews are POSTed",
            "wrong_method",
        ),
    ];
    let mut expected_counts = std::collections::HashMap::<&str, f64>::new();
    for (name, method, path, content_type, body, status, reason, result) in cases {
        let reply = send(&h.app, method, path, content_type, body).await;
        assert_eq!(reply.status, status, "{name}: body {}", reply.body);
        // A metav1.Status, whose message client-go reports (the apiserver's logs show it).
        let body: serde_json::Value =
            serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(body["kind"], "Status", "{name}: {body}");
        assert_eq!(body["status"], "Failure", "{name}: {body}");
        assert_eq!(body["message"], reason, "{name}");
        assert_eq!(body["code"], status.as_u16(), "{name}");
        assert_eq!(reply.content_type, "application/json", "{name}");
        *expected_counts.entry(result).or_default() += 1.0;
    }
    let text = metrics_text(&h.metrics);
    for (result, count) in expected_counts {
        let total: f64 = text
            .lines()
            .filter(|l| {
                l.starts_with("eviction_autoscaler_webhook_requests_total{")
                    && l.contains(&format!("result=\"{result}\""))
            })
            .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum();
        assert_eq!(total, count, "counter for {result}");
    }
    assert_eq!(h.metrics.signals_emitted(), 0, "no malformed request signals");
}

#[tokio::test]
async fn a_declared_oversize_body_is_refused_without_being_buffered() {
    let h = harness();
    let request = Request::builder()
        .method(Method::POST)
        .uri("/validate-eviction")
        .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
        .header(header::CONTENT_LENGTH, (MAX_BODY_BYTES + 1).to_string())
        .body(Body::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    let response = h.app.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn json_content_type_with_parameters_is_accepted() {
    let h = harness();
    let reply = send(
        &h.app,
        Method::POST,
        "/validate-eviction",
        Some("Application/JSON; charset=utf-8"),
        Body::from(fixture("eviction-v1.json")),
    )
    .await;
    assert_allowed(&reply, "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11");
}

/// Holds every Deployment handed over until opened.
#[derive(Default)]
struct GatedHandler {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    handed: std::sync::atomic::AtomicUsize,
}

impl eviction_autoscaler_shared::admission::AdmissionHandler for GatedHandler {
    fn eviction(&self, _: eviction_autoscaler_shared::admission::Signal) -> bool {
        true
    }
    fn deployment_created(&self, _: k8s_openapi::api::apps::v1::Deployment) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|p| p.into_inner());
        }
        self.handed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn pdb_written(&self, _: k8s_openapi::api::policy::v1::PodDisruptionBudget) {}
}

/// A burst of admitted objects never waits and never holds unbounded memory: past the
/// in-flight bound each review is still allowed at once, its object dropped and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_past_the_in_flight_bound_is_allowed_at_once_and_the_excess_counted() {
    let handler = Arc::new(GatedHandler::default());
    let metrics = Metrics::new();
    let app = router(WebhookState::with_objects_in_flight(handler.clone(), metrics.clone(), 2));
    for _ in 0..5 {
        let reply = post(&app, "/validate-deployment", fixture("deployment-create.json")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert!(reply.body.contains(r#""allowed":true"#), "{}", reply.body);
    }
    assert_eq!(metrics.objects_dropped(), 3, "two in flight (held by the handler), three dropped");
    assert_eq!(sample(&metrics_text(&metrics), "eviction_autoscaler_webhook_objects_dropped_total"), 3.0);

    *handler.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
    handler.opened.notify_all();
    let handed = || handler.handed.load(std::sync::atomic::Ordering::SeqCst);
    assert!(eventually(Duration::from_secs(5), || handed() == 2).await, "the two in flight were handed over");
}
