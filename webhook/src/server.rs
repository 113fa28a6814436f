//! The TLS accept loop: tokio-rustls handshakes, hyper-util auto (HTTP/1.1 and h2), TCP_NODELAY
//! on every connection, a header-read timeout, certificate reload, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use eviction_autoscaler_shared::health::Readiness;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::Error;
use crate::metrics::Metrics;
use crate::tls::{CertFiles, CertResolver, PemPair, follow_channel, load_from_channel, server_config};

/// Where and how the webhook serves.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// Listening address (port 0 picks a free port; see [`WebhookServer::local_addr`]).
    pub addr: SocketAddr,
    /// PEM certificate chain, leaf first (not read when `memory_certs` is set).
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// How often the two files are re-read for a new certificate.
    pub reload_interval: Duration,
    /// A client must send its request headers within this time.
    pub header_read_timeout: Duration,
    /// A client must finish the TLS handshake within this time.
    pub handshake_timeout: Duration,
    /// At shutdown, in-flight requests get this long to finish.
    pub shutdown_grace: Duration,
    /// When set, the certificate comes from this channel (the self-managed Secret) instead of
    /// the files; every new pair is installed at once.
    pub memory_certs: Option<watch::Receiver<PemPair>>,
}

impl ServeSettings {
    /// Settings with the defaults: reload every 10 s, 5 s to send headers or finish the
    /// handshake, 10 s to drain at shutdown.
    pub fn new(addr: SocketAddr, cert_file: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> Self {
        Self {
            addr,
            cert_file: cert_file.into(),
            key_file: key_file.into(),
            reload_interval: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            memory_certs: None,
        }
    }

    /// Serves the pairs sent on `pairs` instead of reading the files.
    #[must_use]
    pub fn with_memory_certs(mut self, pairs: watch::Receiver<PemPair>) -> Self {
        self.memory_certs = Some(pairs);
        self
    }
}

/// Where the served certificate comes from after startup.
enum CertSource {
    Files(CertFiles),
    Memory(watch::Receiver<PemPair>),
}

/// A bound webhook server with its certificate loaded, ready to [`run`](Self::run).
pub struct WebhookServer {
    listener: TcpListener,
    settings: ServeSettings,
    source: CertSource,
    resolver: Arc<CertResolver>,
    metrics: Metrics,
    readiness: Readiness,
}

impl WebhookServer {
    /// Loads the certificate (an unusable one is an error naming the files, or the Secret),
    /// marks it loaded in `readiness`, and binds the address.
    pub async fn bind(
        settings: ServeSettings,
        metrics: Metrics,
        readiness: Readiness,
    ) -> Result<Self, Error> {
        let (source, resolver) = match &settings.memory_certs {
            Some(pairs) => (CertSource::Memory(pairs.clone()), load_from_channel(pairs)?),
            None => {
                let (files, resolver) =
                    CertFiles::load(settings.cert_file.clone(), settings.key_file.clone()).await?;
                (CertSource::Files(files), resolver)
            }
        };
        let listener = TcpListener::bind(settings.addr)
            .await
            .map_err(|source| Error::Bind { addr: settings.addr, source })?;
        readiness.set_cert_loaded(true);
        Ok(Self { listener, settings, source, resolver, metrics, readiness })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(Error::LocalAddr)
    }

    /// Serves `app` until `shutdown` completes; then stops accepting, lets in-flight requests
    /// finish within the grace period and returns.
    pub async fn run(self, app: Router, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let Self { listener, settings, source, resolver, metrics, readiness } = self;
        let acceptor = TlsAcceptor::from(Arc::new(server_config(Arc::clone(&resolver))?));
        let reloader = match source {
            CertSource::Files(files) => {
                tokio::spawn(files.watch(resolver, metrics, settings.reload_interval))
            }
            CertSource::Memory(pairs) => tokio::spawn(follow_channel(pairs, resolver, metrics)),
        };

        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new()).header_read_timeout(settings.header_read_timeout);
        builder.http2().timer(TokioTimer::new());
        let builder = Arc::new(builder);

        let (stop_tx, stop_rx) = watch::channel(());
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((tcp, peer)) => {
                        connections.spawn(serve_connection(
                            tcp,
                            peer,
                            acceptor.clone(),
                            Arc::clone(&builder),
                            app.clone(),
                            stop_rx.clone(),
                            settings.handshake_timeout,
                        ));
                    }
                    Err(error) => {
                        // e.g. out of file descriptors: back off instead of spinning.
                        tracing::warn!(%error, "accepting a webhook connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }

        drop(listener);
        readiness.set_cert_loaded(false);
        reloader.abort();
        let _ = stop_tx.send(());
        let in_flight = connections.len();
        tracing::info!(in_flight, "webhook stopped accepting; finishing in-flight requests");
        let drained = tokio::time::timeout(settings.shutdown_grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                remaining = connections.len(),
                "connections still open after the shutdown grace period; closing them"
            );
            connections.abort_all();
        }
        Ok(())
    }
}

/// Binds, loads the certificate and serves until `shutdown` completes.
pub async fn serve(
    settings: ServeSettings,
    app: Router,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    WebhookServer::bind(settings, metrics, readiness).await?.run(app, shutdown).await
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    builder: Arc<auto::Builder<TokioExecutor>>,
    app: Router,
    mut stop: watch::Receiver<()>,
    handshake_timeout: Duration,
) {
    // Small responses must not wait for Nagle's algorithm behind delayed ACKs.
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let deadline = tokio::time::Instant::now() + handshake_timeout;
    let handshake = tokio::time::timeout_at(deadline, acceptor.accept(tcp));
    let tls = tokio::select! {
        result = handshake => match result {
            Ok(Ok(tls)) => tls,
            Ok(Err(error)) => {
                tracing::debug!(%peer, %error, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
        _ = stop.changed() => return,
    };
    let connection = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(app));
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        _ = stop.changed() => {
            // Finish the request in flight (h1) or the open streams (h2), then close.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!(%peer, %error, "webhook connection ended with an error");
    }
}
