//! Held evictions through the router (`oneshot`, no network): the answer waits for the
//! controller, never past the apiserver's deadline less the margin, and says how it ended.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use common::{fixture, metrics_text, sample};
use eviction_autoscaler_shared::admission::{AdmissionHandler, EvictionHold, HoldEnd, Signal};
use eviction_autoscaler_webhook::{Metrics, WebhookState, router};
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tokio::time::Instant;
use tower::ServiceExt;

/// Keeps every hold it is handed, as the controller's registry would; `holding` says whether
/// the webhook should attach one.
struct Holder {
    holding: bool,
    holds: Mutex<Vec<EvictionHold>>,
}

impl AdmissionHandler for Holder {
    fn eviction(&self, signal: Signal) -> bool {
        if let Some(hold) = signal.hold {
            self.holds.lock().unwrap_or_else(|p| p.into_inner()).push(hold);
        }
        true
    }
    fn holding(&self) -> bool {
        self.holding
    }
    fn deployment_created(&self, _: Deployment) {}
    fn pdb_written(&self, _: PodDisruptionBudget) {}
}

impl Holder {
    fn take(&self) -> Option<EvictionHold> {
        self.holds.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }
}

fn setup(holding: bool) -> (axum::Router, Arc<Holder>, Metrics) {
    let holder = Arc::new(Holder { holding, holds: Mutex::default() });
    let metrics = Metrics::new();
    (router(WebhookState::new(holder.clone(), metrics.clone())), holder, metrics)
}

/// POSTs `review` to `/validate-eviction?timeout=…` on a task; the reply's status and body.
fn evict(
    app: &axum::Router,
    timeout: &str,
    review: Vec<u8>,
) -> tokio::task::JoinHandle<(StatusCode, String)> {
    let request = Request::post(format!("/validate-eviction?timeout={timeout}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(review))
        .unwrap_or_else(|e| panic!("request: {e}"));
    let app = app.clone();
    tokio::spawn(async move {
        let response = app.oneshot(request).await.unwrap_or_else(|e| match e {});
        let status = response.status();
        let body = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

/// Lets the spawned request run until it has handed its signal over.
async fn handed_over(holder: &Holder) -> EvictionHold {
    for _ in 0..1000 {
        if let Some(hold) = holder.take() {
            return hold;
        }
        tokio::task::yield_now().await;
    }
    panic!("no hold handed over");
}

fn admin_review() -> Vec<u8> {
    let text = String::from_utf8(fixture("eviction-v1.json")).expect("UTF-8 fixture");
    text.replace(r#""groups": ["system:serviceaccounts""#, r#""groups": ["system:masters""#).into_bytes()
}

#[tokio::test(start_paused = true)]
async fn a_held_eviction_is_allowed_when_the_controller_says_its_budget_opened() {
    let (app, holder, metrics) = setup(true);
    let started = Instant::now();
    let reply = evict(&app, "15s", fixture("eviction-v1.json"));
    let hold = handed_over(&holder).await;
    assert_eq!(hold.answer_by - started, Duration::from_secs(10), "15 s call timeout less the 5 s margin");
    assert!(!hold.exempt, "a service account's requests take a priority level's seats");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!reply.is_finished(), "held until answered");
    hold.answer.send(HoldEnd::Opened).expect("the webhook waits");
    let (status, body) = reply.await.expect("the request task");
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""allowed":true"#), "{body}");

    let text = metrics_text(&metrics);
    assert_eq!(sample(&text, r#"eviction_autoscaler_webhook_evictions_held_total{outcome="opened"}"#), 1.0);
    assert_eq!(sample(&text, "eviction_autoscaler_webhook_eviction_hold_duration_seconds_count"), 1.0);
    assert_eq!(
        sample(&text, r#"eviction_autoscaler_webhook_eviction_hold_duration_seconds_bucket{le="2.0"}"#),
        0.0
    );
    assert_eq!(
        sample(&text, r#"eviction_autoscaler_webhook_eviction_hold_duration_seconds_bucket{le="3.0"}"#),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            r#"eviction_autoscaler_webhook_requests_total{path="/validate-eviction",result="held"}"#
        ),
        1.0
    );
}

#[tokio::test(start_paused = true)]
async fn a_hold_never_outlives_the_apiservers_deadline_less_the_margin() {
    let (app, holder, metrics) = setup(true);
    let started = Instant::now();
    let reply = evict(&app, "7.5s", admin_review());
    let hold = handed_over(&holder).await;
    assert!(hold.exempt, "system:masters is exempt from API Priority and Fairness");
    let (status, body) = reply.await.expect("the request task");
    assert_eq!(started.elapsed(), Duration::from_millis(2500), "7.5 s less 5 s, though never answered");
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""allowed":true"#), "allowed: the apiserver's own check decides: {body}");
    let text = metrics_text(&metrics);
    assert_eq!(sample(&text, r#"eviction_autoscaler_webhook_evictions_held_total{outcome="expired"}"#), 1.0);
    drop(hold);
}

#[tokio::test(start_paused = true)]
async fn what_is_not_held_is_allowed_at_once() {
    // The controller dropped the hold: not worth holding.
    let (app, holder, metrics) = setup(true);
    let started = Instant::now();
    let reply = evict(&app, "15s", fixture("eviction-v1.json"));
    drop(handed_over(&holder).await);
    let (status, _) = reply.await.expect("the request task");
    assert_eq!((status, started.elapsed()), (StatusCode::OK, Duration::ZERO));
    let text = metrics_text(&metrics);
    assert_eq!(sample(&text, "eviction_autoscaler_webhook_eviction_hold_duration_seconds_count"), 0.0);

    // No node draining: no hold is attached at all.
    let (app, holder, _) = setup(false);
    let (status, _) = evict(&app, "15s", fixture("eviction-v1.json")).await.expect("the request task");
    assert_eq!(status, StatusCode::OK);
    assert!(holder.take().is_none());

    // A call timeout with no room for a hold past the margin.
    let (app, holder, _) = setup(true);
    let (status, _) = evict(&app, "5s", fixture("eviction-v1.json")).await.expect("the request task");
    assert_eq!(status, StatusCode::OK);
    assert!(holder.take().is_none(), "5 s leaves nothing past the margin");
}

#[tokio::test(start_paused = true)]
async fn every_way_a_hold_ends_is_counted_by_name() {
    let (app, holder, metrics) = setup(true);
    for end in [HoldEnd::Shed, HoldEnd::Stopped, HoldEnd::Shutdown, HoldEnd::Expired] {
        let reply = evict(&app, "1m0s", fixture("eviction-v1.json"));
        let hold = handed_over(&holder).await;
        assert_eq!(hold.answer_by - Instant::now(), Duration::from_secs(55), "a Go duration with minutes");
        hold.answer.send(end).expect("the webhook waits");
        assert_eq!(reply.await.expect("the request task").0, StatusCode::OK);
    }
    let text = metrics_text(&metrics);
    for outcome in ["shed", "stopped", "shutdown", "expired"] {
        let series = format!(r#"eviction_autoscaler_webhook_evictions_held_total{{outcome="{outcome}"}}"#);
        assert_eq!(sample(&text, &series), 1.0, "{outcome}");
    }
}
