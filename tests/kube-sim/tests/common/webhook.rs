//! A tiny admission webhook for tests: HTTPS (axum + rustls) with its own CA, serving any
//! path; records every AdmissionReview it receives and answers as told (allow, deny, patch,
//! or stall).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Request, State};
use base64::Engine as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

/// How the webhook answers.
#[derive(Clone, Debug)]
pub enum Answer {
    /// `allowed: true`.
    Allow,
    /// `allowed: false` with this `status`.
    Deny(Value),
    /// `allowed: true` with this JSONPatch (array of operations).
    Patch(Value),
    /// Wait this long, then allow.
    Stall(Duration),
}

/// One received call.
#[derive(Clone, Debug)]
pub struct Call {
    /// Path and query (`/validate?timeout=5s`).
    pub uri: String,
    /// `Content-Type` header.
    pub content_type: String,
    /// The AdmissionReview.
    pub review: Value,
}

#[derive(Clone)]
struct Shared {
    answer: Arc<Mutex<Answer>>,
    calls: Arc<Mutex<Vec<Call>>>,
}

/// A running test webhook. Dropping it stops it.
pub struct TestWebhook {
    pub addr: SocketAddr,
    /// base64 of the CA PEM, for `clientConfig.caBundle`.
    pub ca_bundle: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Shared>, request: Request) -> Json<Value> {
    let uri = request.uri().to_string();
    let content_type =
        request.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let uid = review["request"]["uid"].clone();
    shared.calls.lock().expect("lock").push(Call { uri, content_type, review });
    let answer = shared.answer.lock().expect("lock").clone();
    let response = match answer {
        Answer::Allow => json!({"uid": uid, "allowed": true}),
        Answer::Deny(status) => json!({"uid": uid, "allowed": false, "status": status}),
        Answer::Patch(ops) => json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(ops.to_string())}),
        Answer::Stall(delay) => {
            tokio::time::sleep(delay).await;
            json!({"uid": uid, "allowed": true})
        }
    };
    Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

impl TestWebhook {
    /// Starts on 127.0.0.1 with a certificate for `dns_name` (e.g. `guard-webhook.guard.svc`).
    pub async fn start(dns_name: &str, answer: Answer) -> Self {
        let ca_key = KeyPair::generate().expect("key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec![dns_name.to_string(), "localhost".to_string()]).expect("params");
        params.subject_alt_names.push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
        let cert = params.signed_by(&key, &issuer).expect("cert");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("tls versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("tls config");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let shared = Shared { answer: Arc::new(Mutex::new(answer)), calls: Arc::new(Mutex::new(Vec::new())) };
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else { return };
                    let service = TowerToHyperService::new(app);
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_cert.pem());
        Self { addr, ca_bundle, shared, task }
    }

    /// Changes the answer.
    pub fn answer(&self, answer: Answer) {
        *self.shared.answer.lock().expect("lock") = answer;
    }

    /// The calls received so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.calls.lock().expect("lock").clone()
    }
}

/// A ValidatingWebhookConfiguration for `pods/eviction` CREATE through service
/// `guard/guard-webhook` (path `/validate-eviction`, port 443).
pub fn eviction_guard(ca_bundle: &str, failure_policy: &str, timeout_seconds: u32) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: eviction-guard\nwebhooks:\n- name: eviction.guard.example.com\n  rules:\n  - operations: [\"CREATE\"]\n    apiGroups: [\"\"]\n    apiVersions: [\"v1\"]\n    resources: [\"pods/eviction\"]\n    scope: Namespaced\n  clientConfig:\n    service: {{namespace: guard, name: guard-webhook, path: /validate-eviction, port: 443}}\n    caBundle: {ca_bundle}\n  admissionReviewVersions: [\"v1\"]\n  sideEffects: None\n  failurePolicy: {failure_policy}\n  timeoutSeconds: {timeout_seconds}\n"
    )
}
