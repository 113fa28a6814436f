//! An admission webhook that never answers: a TLS server on loopback, serving the test's
//! certificate (the product's CA signed it), that completes each handshake and then holds the
//! connection without a word until the test drops it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use super::Env;

/// The stalled server; dropping it closes every connection.
pub struct StalledWebhook {
    /// Where it listens.
    pub addr: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl StalledWebhook {
    /// TLS handshakes completed so far: the apiserver has called it (and waits) once this is
    /// above zero.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

/// What the apiserver does with a call to the stalled webhook.
#[derive(Clone, Copy, Debug)]
pub struct Stall {
    /// `failurePolicy`: `Fail` refuses the write when the call times out, `Ignore` lets it land.
    pub failure_policy: &'static str,
    /// `timeoutSeconds`: how long the apiserver waits (1–30).
    pub timeout_seconds: u32,
    /// The operation held: `UPDATE` (what a surge or a revert is) or `CREATE`.
    pub operation: &'static str,
    /// Only the product's requests (a `matchConditions` on the user): any other client's update
    /// of the object passes, so a call seen here is the product's.
    pub only_product: bool,
}

impl Stall {
    /// Every update refused after the longest wait the apiserver allows.
    pub const REFUSE_AFTER_30S: Stall =
        Stall { failure_policy: "Fail", timeout_seconds: 30, operation: "UPDATE", only_product: true };
}

impl Drop for StalledWebhook {
    fn drop(&mut self) {
        self.task.abort(); // its JoinSet of held connections goes with it
    }
}

impl Env {
    /// Registers a validating webhook `name` for `stall`'s operation on the Deployments
    /// labelled `selector`, with its failure policy and timeout, served by a server that never
    /// answers.
    pub async fn register_stalled_webhook(
        &self,
        name: &str,
        selector: Value,
        stall: Stall,
    ) -> StalledWebhook {
        let certs = self.dir.path().join("certs");
        let read = |file: &str| std::fs::read(certs.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let chain = rustls_pemfile::certs(&mut read("tls.crt").as_slice())
            .collect::<Result<Vec<_>, _>>()
            .expect("tls.crt");
        let key =
            rustls_pemfile::private_key(&mut read("tls.key").as_slice()).expect("tls.key").expect("a key");
        let config =
            rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key).expect("TLS");
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        let task = tokio::spawn(async move {
            let mut held = JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counted) = (acceptor.clone(), counted.clone());
                held.spawn(async move {
                    let stream = acceptor.accept(tcp).await;
                    if stream.is_ok() {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    let _stream = stream;
                    std::future::pending::<()>().await;
                });
            }
        });
        let bundle = base64::engine::general_purpose::STANDARD.encode(read("ca.crt"));
        let (namespace, account) = super::PRODUCT_ACCOUNT;
        let product = format!("request.userInfo.username == 'system:serviceaccount:{namespace}:{account}'");
        let conditions =
            if stall.only_product { json!([{"name": "product", "expression": product}]) } else { json!([]) };
        self.apply_json(&json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": format!("{name}.stalled.test"),
                "clientConfig": {"url": format!("https://{addr}/"), "caBundle": bundle},
                "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": [stall.operation],
                           "resources": ["deployments", "deployments/scale"]}],
                "objectSelector": selector,
                "matchConditions": conditions,
                "failurePolicy": stall.failure_policy,
                "timeoutSeconds": stall.timeout_seconds,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        }))
        .await;
        StalledWebhook { addr, handshakes, task }
    }
}
