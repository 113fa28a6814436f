//! Servers for webhook/bench/run.sh (not a product binary).
//!
//! * `bench_server certs DIR` — CA + serving cert for localhost / 127.0.0.1.
//! * `bench_server product ADDR HEALTH_ADDR CERT KEY` — the product's webhook (router, TLS
//!   server, health port with /metrics), with a consumer draining the signal queue as the
//!   controller would.
//! * `bench_server floor ADDR CERT KEY` — the floor: a minimal axum + rustls server that reads
//!   the body and answers a constant allow without parsing anything.
//! * `bench_server constant-allow` — prints that answer (nginx returns the same bytes).
//!
//! Both servers stop on SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use eviction_autoscaler_shared::admission::admission_queue;
use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_webhook::{Metrics, ServeSettings, WebhookState, router, serve, serve_health};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const CONSTANT_ALLOW: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11","allowed":true}}"#;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["certs", dir] => {
            eviction_autoscaler_webhook::certs::generate(
                &PathBuf::from(dir),
                &["localhost".to_owned()],
                &["127.0.0.1".parse()?],
            )?;
            Ok(())
        }
        ["product", addr, health, cert, key] => product(addr.parse()?, health.parse()?, cert, key).await,
        ["floor", addr, cert, key] => floor(addr.parse()?, cert, key).await,
        ["constant-allow"] => {
            println!("{CONSTANT_ALLOW}");
            Ok(())
        }
        _ => {
            Err("usage: bench_server certs DIR | product ADDR HEALTH_ADDR CERT KEY | floor ADDR CERT KEY | constant-allow"
                .into())
        }
    }
}

async fn stopped() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

async fn product(addr: SocketAddr, health: SocketAddr, cert: &str, key: &str) -> Result<(), BoxError> {
    let metrics = Metrics::new();
    let mut registry = Registry::with_prefix("eviction_autoscaler");
    metrics.register(&mut registry);
    let readiness = Readiness::new();
    readiness.set_caches_synced(true);
    let (queue, receiver) = admission_queue(1024, 64);
    let mut receiver = receiver.signals;
    // Drain like the controller does (batches); BENCH_NO_DRAIN=1 lets the queue fill (then every
    // signal is dropped and counted), to see what delivery itself costs.
    if std::env::var_os("BENCH_NO_DRAIN").is_none() {
        tokio::spawn(async move {
            let mut batch = Vec::new();
            while receiver.next_batch(&mut batch).await {
                batch.clear();
            }
        });
    } else {
        std::mem::forget(receiver);
    }
    let app = router(WebhookState::new(Arc::new(queue), metrics.clone()));
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut stop_webhook = stop_tx.subscribe();
    let mut stop_health = stop_tx.subscribe();
    tokio::spawn(async move {
        stopped().await;
        let _ = stop_tx.send(());
    });
    let webhook = serve(ServeSettings::new(addr, cert, key), app, metrics, readiness.clone(), async move {
        let _ = stop_webhook.recv().await;
    });
    let health = serve_health(health, Arc::new(registry), readiness, async move {
        let _ = stop_health.recv().await;
    });
    tokio::try_join!(webhook, health)?;
    Ok(())
}

async fn floor(addr: SocketAddr, cert: &str, key: &str) -> Result<(), BoxError> {
    let chain = rustls_pemfile::certs(&mut std::fs::read(cert)?.as_slice()).collect::<Result<Vec<_>, _>>()?;
    let key = rustls_pemfile::private_key(&mut std::fs::read(key)?.as_slice())?.ok_or("no key")?;
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let app = Router::new().fallback(post(|_body: Bytes| async {
        ([(http::header::CONTENT_TYPE, "application/json")], CONSTANT_ALLOW)
    }));
    let listener = TcpListener::bind(addr).await?;
    let stop = stopped();
    tokio::pin!(stop);
    loop {
        let (tcp, _) = tokio::select! {
            _ = &mut stop => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        tcp.set_nodelay(true)?;
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            if let Ok(tls) = acceptor.accept(tcp).await {
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                    .await;
            }
        });
    }
}
