//! What the fuzz targets share: the webhook's router on one runtime, the oracle every answer
//! must pass, and the controller's decisions run on what the webhook admitted.

use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use axum::Router;
use axum::body::Body;
use eviction_autoscaler_controller::pdb::{NamespaceView, plan_deployment, plan_pdb, plan_pdb_admission};
use eviction_autoscaler_controller::surge::{self, Observed};
use eviction_autoscaler_shared::admission::{AdmissionHandler, Signal};
use eviction_autoscaler_shared::budget::{allows_disruption_at, min_replicas_to_open};
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_webhook::{Metrics, WebhookState, router};
use http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use tower::ServiceExt as _;

/// The statuses the webhook may answer: 200 with an allowing review, or a client mistake.
const ANSWERS: [StatusCode; 6] = [
    StatusCode::OK,
    StatusCode::BAD_REQUEST,
    StatusCode::NOT_FOUND,
    StatusCode::METHOD_NOT_ALLOWED,
    StatusCode::PAYLOAD_TOO_LARGE,
    StatusCode::UNSUPPORTED_MEDIA_TYPE,
];

struct Webhook {
    runtime: tokio::runtime::Runtime,
    app: Router,
}

/// The router with a handler that runs the controller's decisions on every admitted object,
/// as the controller would on receiving it.
fn webhook() -> &'static Webhook {
    static WEBHOOK: OnceLock<Webhook> = OnceLock::new();
    WEBHOOK.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let app = router(WebhookState::new(Arc::new(Decide), Metrics::new()));
        Webhook { runtime, app }
    })
}

/// A webhook answer.
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

/// POSTs (or, with `method`, sends) `body` to `path` and checks the answer against the oracle:
/// a status from [`ANSWERS`]; a 200 is an AdmissionReview that allows, echoing a non-empty
/// uid; anything else is a `metav1.Status` with that code and a message naming the problem.
pub fn call(method: &str, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Answer {
    let webhook = webhook();
    let mut request = Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        request = request.header(http::header::CONTENT_TYPE, content_type);
    }
    let Ok(request) = request.body(Body::from(body)) else {
        // Not a request hyper would ever hand the router (e.g. a path with spaces).
        return Answer { status: StatusCode::BAD_REQUEST, body: Value::Null };
    };
    let (status, bytes) = webhook.runtime.block_on(async {
        let response = webhook.app.clone().oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        let bytes = response.into_body().collect().await.expect("a buffered body").to_bytes();
        // Let the spawned decoding of an admitted object run (and panic here, if it would).
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        (status, bytes)
    });
    assert!(ANSWERS.contains(&status), "unexpected status {status}");
    let body: Value = serde_json::from_slice(&bytes).expect("every answer is JSON");
    if status == StatusCode::OK {
        assert_eq!(body["apiVersion"], "admission.k8s.io/v1", "{body}");
        assert_eq!(body["kind"], "AdmissionReview", "{body}");
        assert_eq!(body["response"]["allowed"], true, "{body}");
        assert!(body["response"]["uid"].as_str().is_some_and(|uid| !uid.is_empty()), "{body}");
    } else {
        assert_eq!(body["kind"], "Status", "{body}");
        assert_eq!(body["code"], status.as_u16(), "{body}");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    }
    Answer { status, body }
}

/// The default configuration with every namespace enabled and default PDBs on.
pub fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let mut config = Config::resolve(&SettingsArgs::default(), None).expect("the defaults are valid");
        config.enabled_by_default = true;
        config.pdb_create = true;
        config
    })
}

/// Runs the controller's decisions for a Deployment and a PDB in one namespace.
pub fn decide(deployment: &Deployment, pdbs: &[PodDisruptionBudget]) {
    let namespace = Namespace {
        metadata: ObjectMeta { name: deployment.metadata.namespace.clone(), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    let deployments = std::slice::from_ref(deployment);
    let view = NamespaceView { namespace: &namespace, pdbs, deployments };
    let _ = plan_deployment(deployment, None, &view, config(), "crd-uid");
    for pdb in pdbs {
        let _ = plan_pdb(pdb, deployments);
        let _ = plan_pdb_admission(pdb, false, &view);
        check_budget(pdb);
    }
    let observed = Observed {
        deployment: deployment.clone(),
        namespace_enabled: true,
        pdbs: pdbs.to_vec(),
        any_node_draining: true,
        new_signal: true,
        ..Observed::default()
    };
    let _ = surge::plan(&observed, config(), jiff::Timestamp::UNIX_EPOCH);
}

/// `min_replicas_to_open` is the least replica count at which the budget opens.
pub fn check_budget(pdb: &PodDisruptionBudget) {
    let Some(spec) = &pdb.spec else { return };
    if let Ok(Some(min)) = min_replicas_to_open(spec) {
        assert_eq!(allows_disruption_at(spec, min), Ok(true), "opens at {min}: {spec:?}");
        if min > 1 {
            assert_eq!(
                allows_disruption_at(spec, min - 1),
                Ok(false),
                "already open at {}: {spec:?}",
                min - 1
            );
        }
    }
}

/// The admission handler of the fuzzed router: the controller's decisions on each object.
struct Decide;

impl AdmissionHandler for Decide {
    fn eviction(&self, signal: Signal) -> bool {
        assert!(!signal.pod.is_empty() && !signal.namespace.is_empty(), "{signal:?}");
        true
    }
    fn deployment_created(&self, deployment: Deployment) {
        decide(&deployment, &[]);
    }
    fn pdb_written(&self, pdb: PodDisruptionBudget) {
        decide(&Deployment::default(), &[pdb]);
    }
}

/// An int-or-string as users write `maxSurge`, `minAvailable` and the like: an integer, a
/// percentage, or any text.
#[derive(Arbitrary, Debug)]
pub enum IntOrPercent {
    Int(i32),
    Percent(i32),
    Text(String),
}

impl IntOrPercent {
    pub fn value(&self) -> IntOrString {
        match self {
            Self::Int(n) => IntOrString::Int(*n),
            Self::Percent(n) => IntOrString::String(format!("{n}%")),
            Self::Text(s) => IntOrString::String(s.clone()),
        }
    }
}
