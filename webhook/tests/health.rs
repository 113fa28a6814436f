//! The plain-HTTP health port: liveness, readiness from the shared flags, OpenMetrics.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use common::{fixture, sample};
use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_webhook::{Metrics, WebhookState, router, serve_health_on};
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tower::ServiceExt;

async fn get(addr: SocketAddr, path: &str) -> (StatusCode, String, String) {
    let tcp = TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect: {e}"));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap_or_else(|e| panic!("handshake: {e}"));
    tokio::spawn(connection);
    let request = Request::get(path)
        .header(header::HOST, "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let response = sender.send_request(request).await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    (status, content_type, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn readyz_follows_the_readiness_flags_and_metrics_move() {
    let metrics = Metrics::new();
    let mut registry = Registry::with_prefix("eviction_autoscaler");
    metrics.register(&mut registry);
    let readiness = Readiness::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve_health_on(listener, Arc::new(registry), readiness.clone(), async move {
        let _ = stopped.await;
    }));

    assert_eq!(get(addr, "/healthz").await.0, StatusCode::OK);
    let (status, _, body) = get(addr, "/readyz").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "not ready: certificate not loaded, caches not synced\n")
    );
    readiness.set_cert_loaded(true);
    let (status, _, body) = get(addr, "/readyz").await;
    assert_eq!((status, body.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "not ready: caches not synced\n"));
    readiness.set_caches_synced(true);
    let (status, _, body) = get(addr, "/readyz").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    // A certificate Secret problem is told; the loaded certificate still serves, so still ready.
    readiness.set_cert_problem(Some("webhook certificate Secret ops/eas-tls: spoiled".into()));
    let (status, _, body) = get(addr, "/readyz").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "ok\nwarning: webhook certificate Secret ops/eas-tls: spoiled\n")
    );
    readiness.set_cert_loaded(false);
    let (status, _, body) = get(addr, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.ends_with("warning: webhook certificate Secret ops/eas-tls: spoiled\n"), "{body}");
    readiness.set_cert_problem(None);

    let (status, content_type, before) = get(addr, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert!(before.ends_with("# EOF\n"), "{before}");
    for family in [
        "webhook_requests",
        "webhook_request_duration_seconds",
        "webhook_signals_emitted",
        "webhook_signals_dropped",
        "webhook_dry_runs_ignored",
        "webhook_cert_reloads",
        "webhook_cert_reload_failures",
    ] {
        assert!(
            before.contains(&format!("# HELP eviction_autoscaler_{family} ")),
            "{family} missing:\n{before}"
        );
    }
    assert_eq!(sample(&before, "eviction_autoscaler_webhook_signals_emitted_total"), 0.0);

    // One eviction and one dry run through the router move the served numbers.
    let app = router(WebhookState::new(common::RecordingHandler::new(), metrics.clone()));
    for name in ["eviction-v1.json", "eviction-dry-run-review.json"] {
        let request = Request::post("/validate-eviction")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(fixture(name)))
            .unwrap_or_else(|e| panic!("{e}"));
        let response = app.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
        assert_eq!(response.status(), StatusCode::OK);
    }
    let (_, _, after) = get(addr, "/metrics").await;
    assert_eq!(sample(&after, "eviction_autoscaler_webhook_signals_emitted_total"), 1.0);
    assert_eq!(sample(&after, "eviction_autoscaler_webhook_dry_runs_ignored_total"), 1.0);
    assert_eq!(
        sample(
            &after,
            r#"eviction_autoscaler_webhook_requests_total{path="/validate-eviction",result="allowed"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            &after,
            r#"eviction_autoscaler_webhook_request_duration_seconds_count{path="/validate-eviction"}"#
        ),
        2.0
    );

    let _ = stop.send(());
    server.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}"));
}
