//! The plain-HTTP health port: `/healthz`, `/readyz` and `/metrics` (OpenMetrics text).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use eviction_autoscaler_shared::health::Readiness;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::Error;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone)]
struct HealthState {
    registry: Arc<Registry>,
    readiness: Readiness,
}

/// The health routes, for serving or for tests.
pub fn health_router(registry: Arc<Registry>, readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(HealthState { registry, readiness })
}

async fn readyz(State(state): State<HealthState>) -> Response {
    let missing = state.readiness.missing();
    // A certificate problem is told either way; a replica serving a loaded certificate stays ready.
    let problem = state.readiness.cert_problem().map(|p| format!("warning: {p}\n")).unwrap_or_default();
    if missing.is_empty() {
        (StatusCode::OK, format!("ok\n{problem}")).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {}\n{problem}", missing.join(", ")))
            .into_response()
    }
}

async fn metrics(State(state): State<HealthState>) -> Response {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &state.registry) {
        Ok(()) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot encode metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response()
        }
    }
}

/// Opens the health port (port 0: the system picks one; `local_addr` tells which).
pub async fn bind_health(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr).await.map_err(|source| Error::Bind { addr, source })
}

/// Serves the health routes on `addr` until `shutdown` completes.
pub async fn serve_health(
    addr: SocketAddr,
    registry: Arc<Registry>,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    serve_health_on(bind_health(addr).await?, registry, readiness, shutdown).await
}

/// Serves the health routes on an already bound listener until `shutdown` completes.
pub async fn serve_health_on(
    listener: TcpListener,
    registry: Arc<Registry>,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    axum::serve(listener, health_router(registry, readiness))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(Error::HealthServer)
}
