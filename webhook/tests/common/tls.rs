//! A running webhook server and TLS clients for the network tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_webhook::certs::GeneratedCerts;
use eviction_autoscaler_webhook::{Error, Metrics, ServeSettings, WebhookServer, WebhookState, router};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{RecordingHandler, fixture};

pub struct Running {
    pub addr: SocketAddr,
    pub metrics: Metrics,
    pub readiness: Readiness,
    pub handler: Arc<RecordingHandler>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), Error>>>,
}

impl Running {
    /// Triggers shutdown and waits for the server to return.
    pub async fn stop(mut self) -> Result<(), Error> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| panic!("server task: {e}")),
            None => Ok(()),
        }
    }

    /// Triggers shutdown without waiting.
    pub fn begin_stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }

    pub async fn join(mut self) -> Result<(), Error> {
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| panic!("server task: {e}")),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

pub fn settings(cert: &Path, key: &Path) -> ServeSettings {
    let mut settings = ServeSettings::new(([127, 0, 0, 1], 0).into(), cert, key);
    settings.reload_interval = Duration::from_millis(100);
    settings
}

pub async fn start(settings: ServeSettings) -> Running {
    start_with(settings, None).await
}

/// Starts the server with `app` instead of the webhook router when given.
pub async fn start_with(settings: ServeSettings, app: Option<axum::Router>) -> Running {
    let handler = RecordingHandler::new();
    let metrics = Metrics::new();
    let readiness = Readiness::new();
    let app = app.unwrap_or_else(|| router(WebhookState::new(handler.clone(), metrics.clone())));
    let server = WebhookServer::bind(settings, metrics.clone(), readiness.clone())
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = server.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
    let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(app, async move {
        let _ = shutdown_rx.await;
    }));
    Running { addr, metrics, readiness, handler, shutdown: Some(shutdown_tx), task: Some(task) }
}

/// Generates a CA + serving cert for localhost / 127.0.0.1 into `dir`.
pub fn generate_into(dir: &Path) -> GeneratedCerts {
    eviction_autoscaler_webhook::certs::generate(
        dir,
        &["localhost".to_owned()],
        &["127.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))],
    )
    .unwrap_or_else(|e| panic!("generate: {e}"))
}

pub fn generate_pem() -> GeneratedCerts {
    eviction_autoscaler_webhook::certs::generate_pem(&["localhost".to_owned()], &[])
        .unwrap_or_else(|e| panic!("generate: {e}"))
}

pub fn der_of(pem: &str) -> CertificateDer<'static> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no certificate in PEM"))
}

pub fn client_config(
    cas: &[&str],
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        roots.add(der_of(ca)).unwrap_or_else(|e| panic!("CA: {e}"));
    }
    let mut config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .unwrap_or_else(|e| panic!("versions: {e}"))
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

pub async fn connect(addr: SocketAddr, config: Arc<ClientConfig>) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap_or_else(|e| panic!("{e}"));
    TlsConnector::from(config).connect(name, tcp).await
}

/// The leaf certificate the server presented.
pub fn served_leaf(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec())
        .unwrap_or_default()
}

pub type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

pub async fn http1(stream: TlsStream<TcpStream>) -> Sender {
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap_or_else(|e| panic!("h1 handshake: {e}"));
    tokio::spawn(connection);
    sender
}

pub async fn http2(stream: TlsStream<TcpStream>) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap_or_else(|e| panic!("h2 handshake: {e}"));
    tokio::spawn(connection);
    sender
}

pub fn eviction_request() -> Request<Full<Bytes>> {
    Request::post("/validate-eviction")
        .header(http::header::HOST, "localhost")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(fixture("eviction-v1.json"))))
        .unwrap_or_else(|e| panic!("{e}"))
}

pub async fn read_reply(response: http::Response<hyper::body::Incoming>) -> (StatusCode, String) {
    let status = response.status();
    let body = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    (status, String::from_utf8_lossy(&body).into_owned())
}

pub async fn post_eviction(sender: &mut Sender) -> hyper::Result<(StatusCode, String)> {
    sender.ready().await?;
    let response = sender.send_request(eviction_request()).await?;
    Ok(read_reply(response).await)
}

/// The kubelet's Secret-volume layout: `dir/..<version>/{tls.crt,tls.key}`, `dir/..data` →
/// that version, `dir/tls.crt` → `..data/tls.crt`.
pub struct SecretVolume {
    pub dir: PathBuf,
}

impl SecretVolume {
    pub fn new(dir: &Path, first: &GeneratedCerts) -> Self {
        let volume = Self { dir: dir.to_owned() };
        volume.publish("..2026_11_29_16_00_00.000000001", first);
        for file in ["tls.crt", "tls.key"] {
            std::os::unix::fs::symlink(format!("..data/{file}"), dir.join(file))
                .unwrap_or_else(|e| panic!("symlink {file}: {e}"));
        }
        volume
    }

    /// Writes a new version directory and atomically repoints `..data` at it, removing the
    /// old one, as the kubelet's atomic writer does.
    pub fn publish(&self, version: &str, certs: &GeneratedCerts) {
        self.publish_raw(version, certs.cert_pem.as_bytes(), certs.key_pem.as_bytes());
    }

    pub fn publish_raw(&self, version: &str, cert: &[u8], key: &[u8]) {
        let version_dir = self.dir.join(version);
        std::fs::create_dir(&version_dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
        std::fs::write(version_dir.join("tls.crt"), cert).unwrap_or_else(|e| panic!("write: {e}"));
        std::fs::write(version_dir.join("tls.key"), key).unwrap_or_else(|e| panic!("write: {e}"));
        let old = std::fs::read_link(self.dir.join("..data")).ok();
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(version, &tmp).unwrap_or_else(|e| panic!("symlink: {e}"));
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap_or_else(|e| panic!("rename: {e}"));
        if let Some(old) = old {
            std::fs::remove_dir_all(self.dir.join(old)).unwrap_or_else(|e| panic!("rm old: {e}"));
        }
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("tls.crt")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join("tls.key")
    }
}
