//! An admission webhook of the test's own: a TLS server on loopback (its own CA, a certificate
//! for 127.0.0.1) that answers each AdmissionReview with what the test's handler decides, and
//! its registration as a ValidatingWebhookConfiguration. For faults only another party can
//! make for real, e.g. a write that changes the object while the product's own write is being
//! admitted, so the apiserver answers that one with a genuine 409 Conflict.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Decides the `response` of one review (`uid` is filled in): `{"allowed": true}`, or a refusal
/// with its `status`.
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Value> + Send + Sync>;

/// The running webhook; dropping it stops the server.
pub struct TestWebhook {
    addr: SocketAddr,
    ca_pem: String,
    task: JoinHandle<()>,
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestWebhook {
    /// Starts the server on `127.0.0.1:0`; `handler` gets each review's `request`.
    pub async fn start(handler: Handler) -> TestWebhook {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "test-webhook-ca");
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
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, handler) = (acceptor.clone(), handler.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request| answer(request, handler.clone()));
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        TestWebhook { addr, ca_pem: ca.pem(), task }
    }

    /// The ValidatingWebhookConfiguration `name` calling this server for `operations` on
    /// Deployments (`failurePolicy: Fail`, so a broken server shows as a failed test).
    pub fn configuration(&self, name: &str, operations: &[&str]) -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": format!("{name}.test.example.com"),
                "clientConfig": {
                    "url": format!("https://{}/", self.addr),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
                },
                "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": operations,
                           "resources": ["deployments"]}],
                "failurePolicy": "Fail",
                "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v1"],
            }],
        })
    }
}

async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    handler: Handler,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let bytes = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let review: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let uid = review.pointer("/request/uid").cloned().unwrap_or(Value::Null);
    let mut response = handler(review["request"].clone()).await;
    response["uid"] = uid;
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
    Ok(hyper::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("response"))
}
