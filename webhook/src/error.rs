//! The crate's one error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can stop the webhook from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    /// The bound address could not be read back.
    #[error("cannot read the listening address: {0}")]
    LocalAddr(std::io::Error),
    /// A certificate or key file could not be read.
    #[error("cannot read {path}: {source}")]
    ReadFile { path: PathBuf, source: std::io::Error },
    /// The certificate/key pair is unusable (bad PEM, no certificate, no key, mismatch).
    #[error("unusable TLS certificate {cert} with key {key}: {reason}")]
    InvalidCertificate { cert: PathBuf, key: PathBuf, reason: String },
    /// The in-memory (self-managed Secret) certificate/key pair is unusable.
    #[error("unusable TLS certificate from the Secret: {reason}")]
    InvalidInMemoryCertificate { reason: String },
    /// The self-managed certificate Secret could not be set up.
    #[error("self-managed certificate: {0}")]
    SelfManaged(String),
    /// rustls refused the server configuration.
    #[error("cannot build the TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// A name given for a generated certificate is not a valid DNS name or IP address.
    #[error("invalid certificate subject name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    /// Certificate generation failed.
    #[error("cannot generate certificates: {0}")]
    CertGeneration(#[from] rcgen::Error),
    /// A generated file could not be written.
    #[error("cannot write {path}: {source}")]
    WriteFile { path: PathBuf, source: std::io::Error },
    /// The plain-HTTP health server failed.
    #[error("health server failed: {0}")]
    HealthServer(std::io::Error),
}
