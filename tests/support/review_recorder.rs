//! An admission webhook that records every AdmissionReview it receives, as it received it:
//! a TLS server on loopback (its own CA, certificate for 127.0.0.1) that answers each review
//! by what its URL path asks for. Several servers may call the same recorder, each under its
//! own path prefix, so their reviews can be compared (`tests/e2e_differential`).
//!
//! The answer follows the path's segments: `deny` refuses with code 403 and a message,
//! `mutate` adds the annotation `mutated: "yes"` (a JSONPatch `add` of `/metadata/annotations`,
//! so the object must have none), `warn` adds a warning; anything else allows.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One review as received: the request's path and query, and the AdmissionReview body.
#[derive(Clone, Debug)]
pub struct Received {
    /// `/prefix/rest?timeout=10s`.
    pub path_and_query: String,
    /// The AdmissionReview (or the body as a string when it was not JSON).
    pub review: Value,
}

/// The recorder; dropping it stops the server.
pub struct ReviewRecorder {
    addr: SocketAddr,
    ca_pem: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Drop for ReviewRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReviewRecorder {
    /// Starts the server on `127.0.0.1:0`.
    pub async fn start() -> ReviewRecorder {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "review-recorder-ca");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("serving key");
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("serving params");
        params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        let serving = params.signed_by(&key, &issuer).expect("serving certificate");
        let key_der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("key DER");
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![serving.der().clone()], key_der)
            .expect("TLS");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log) = (acceptor.clone(), log.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request| answer(request, log.clone()));
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        ReviewRecorder { addr, ca_pem: ca.pem(), received, task }
    }

    /// The URL for calls under `prefix` (`https://127.0.0.1:PORT/prefix`).
    pub fn url(&self, prefix: &str) -> String {
        format!("https://{}/{prefix}", self.addr)
    }

    /// The CA that signed the serving certificate, base64-encoded PEM (a webhook's `caBundle`).
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// Removes and returns the reviews received under `prefix`, in order of arrival.
    pub fn take(&self, prefix: &str) -> Vec<Received> {
        let start = format!("/{prefix}");
        let mut all = self.received.lock().expect("recorder lock");
        let (taken, kept): (Vec<Received>, Vec<Received>) =
            all.drain(..).partition(|r| r.path_and_query.starts_with(&start));
        *all = kept;
        taken
    }
}

async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    log: Arc<Mutex<Vec<Received>>>,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let path_and_query = request.uri().path_and_query().map(ToString::to_string).unwrap_or_default();
    let segments: Vec<String> = request.uri().path().split('/').map(str::to_owned).collect();
    let bytes = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let review = serde_json::from_slice::<Value>(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let uid = review.pointer("/request/uid").cloned().unwrap_or(Value::Null);
    log.lock().expect("recorder lock").push(Received { path_and_query, review });
    let has = |s: &str| segments.iter().any(|x| x == s);
    let mut response = BTreeMap::from([("uid".to_owned(), uid), ("allowed".to_owned(), json!(!has("deny")))]);
    if has("deny") {
        response.insert("status".into(), json!({"code": 403, "message": "refused by the review recorder"}));
    }
    if has("mutate") {
        let patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}}]);
        let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        response.insert("patchType".into(), json!("JSONPatch"));
        response.insert("patch".into(), json!(patch));
    }
    if has("warn") {
        response.insert("warnings".into(), json!(["a warning from the review recorder"]));
    }
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
    Ok(hyper::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("response"))
}
