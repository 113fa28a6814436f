//! Serving certificate: loaded from PEM files (or received in memory from the self-managed
//! Secret), served through a resolver that can be swapped while connections are open, and
//! reloaded by polling the files' content (or on every new pair from the channel).
//!
//! Polling (rather than inotify) is deliberate: the kubelet updates a Secret volume by swapping
//! the `..data` symlink to a new directory, so a watch on the old file sees only a delete and
//! then nothing. Reading through the path every interval follows the symlink to whatever is
//! current. A bad new pair is reported once and the previous certificate keeps serving.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, version};
use tokio::sync::watch;

use crate::Error;
use crate::metrics::Metrics;

/// The certificate currently served; new handshakes pick up a swap at once.
#[derive(Debug)]
pub(crate) struct CertResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertResolver {
    fn new(key: CertifiedKey) -> Self {
        Self { current: RwLock::new(Arc::new(key)) }
    }

    fn replace(&self, key: CertifiedKey) {
        let mut current = self.current.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Arc::new(key);
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        Some(Arc::clone(&current))
    }
}

/// The provider used everywhere in this crate: ring, never aws-lc.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.2 and 1.3 only, ALPN h2 then http/1.1.
pub(crate) fn server_config(resolver: Arc<CertResolver>) -> Result<ServerConfig, Error> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&version::TLS13, &version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Parses a PEM certificate chain and private key and checks that they belong together.
pub(crate) fn parse_pair(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, String> {
    let chain = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate file is not valid PEM: {e}"))?;
    if chain.is_empty() {
        return Err("certificate file holds no CERTIFICATE block".into());
    }
    let key = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| format!("key file is not valid PEM: {e}"))?
        .ok_or("key file holds no private key")?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| format!("certificate and key: {e}"))
}

/// A serving certificate chain and its private key as PEM, held in memory (the self-managed
/// Secret's `tls.crt` and `tls.key`). `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct PemPair {
    /// PEM certificate chain, leaf first.
    pub cert: Vec<u8>,
    /// PEM private key.
    pub key: Vec<u8>,
}

impl std::fmt::Debug for PemPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PemPair").field("cert_bytes", &self.cert.len()).finish_non_exhaustive()
    }
}

/// Builds the resolver from the channel's current pair.
pub(crate) fn load_from_channel(pairs: &watch::Receiver<PemPair>) -> Result<Arc<CertResolver>, Error> {
    let pair = pairs.borrow().clone();
    let key =
        parse_pair(&pair.cert, &pair.key).map_err(|reason| Error::InvalidInMemoryCertificate { reason })?;
    Ok(Arc::new(CertResolver::new(key)))
}

/// Installs every new pair from the channel until its sender is gone; a bad pair is reported
/// and the previous certificate keeps serving.
pub(crate) async fn follow_channel(
    mut pairs: watch::Receiver<PemPair>,
    resolver: Arc<CertResolver>,
    metrics: Metrics,
) {
    while pairs.changed().await.is_ok() {
        let pair = pairs.borrow_and_update().clone();
        match parse_pair(&pair.cert, &pair.key) {
            Ok(key) => {
                resolver.replace(key);
                metrics.cert_reloaded();
                tracing::info!("serving certificate from the Secret installed");
            }
            Err(reason) => {
                metrics.cert_reload_failed();
                tracing::error!(%reason, "new certificate from the Secret is unusable; still serving the previous certificate");
            }
        }
    }
}

/// The files a certificate comes from, and what was last seen in them.
pub(crate) struct CertFiles {
    cert: PathBuf,
    key: PathBuf,
    last_seen: Seen,
}

#[derive(PartialEq, Eq)]
enum Seen {
    Content { cert: Vec<u8>, key: Vec<u8> },
    Unreadable(String),
}

async fn read(path: &Path) -> Result<Vec<u8>, Error> {
    tokio::fs::read(path).await.map_err(|source| Error::ReadFile { path: path.to_owned(), source })
}

impl CertFiles {
    /// Loads the initial pair; failing here stops startup with a message naming the files.
    pub(crate) async fn load(cert: PathBuf, key: PathBuf) -> Result<(Self, Arc<CertResolver>), Error> {
        let cert_pem = read(&cert).await?;
        let key_pem = read(&key).await?;
        let pair = parse_pair(&cert_pem, &key_pem).map_err(|reason| Error::InvalidCertificate {
            cert: cert.clone(),
            key: key.clone(),
            reason,
        })?;
        let files = Self { cert, key, last_seen: Seen::Content { cert: cert_pem, key: key_pem } };
        Ok((files, Arc::new(CertResolver::new(pair))))
    }

    /// Re-reads both files; when they changed, swaps in the new pair or reports why not.
    async fn poll(&mut self, resolver: &CertResolver, metrics: &Metrics) {
        let seen = match (read(&self.cert).await, read(&self.key).await) {
            (Ok(cert), Ok(key)) => Seen::Content { cert, key },
            (Err(error), _) | (_, Err(error)) => Seen::Unreadable(error.to_string()),
        };
        if seen == self.last_seen {
            return;
        }
        match &seen {
            Seen::Content { cert, key } => match parse_pair(cert, key) {
                Ok(pair) => {
                    resolver.replace(pair);
                    metrics.cert_reloaded();
                    tracing::info!(cert = %self.cert.display(), "serving certificate reloaded");
                }
                Err(reason) => {
                    metrics.cert_reload_failed();
                    tracing::error!(
                        cert = %self.cert.display(), key = %self.key.display(), %reason,
                        "new certificate files are unusable; still serving the previous certificate"
                    );
                }
            },
            Seen::Unreadable(reason) => {
                metrics.cert_reload_failed();
                tracing::error!(%reason, "certificate files unreadable; still serving the previous certificate");
            }
        }
        self.last_seen = seen;
    }

    /// Polls forever every `interval` (the caller aborts the task at shutdown).
    pub(crate) async fn watch(mut self, resolver: Arc<CertResolver>, metrics: Metrics, interval: Duration) {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(10)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await; // the first tick is immediate; the files were just read
        loop {
            ticker.tick().await;
            self.poll(&resolver, &metrics).await;
        }
    }
}
