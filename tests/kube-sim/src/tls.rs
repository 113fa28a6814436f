//! A self-signed CA, a server certificate for 127.0.0.1/localhost, the rustls config and the
//! kubeconfig that trusts the CA.

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Certificates of one server instance.
#[derive(Debug)]
pub struct Certs {
    /// CA certificate, PEM.
    pub ca_pem: String,
    /// Server certificate, DER.
    pub server_der: CertificateDer<'static>,
    /// Server key, PKCS#8 DER.
    pub server_key_der: Vec<u8>,
}

/// Generating certificates failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot generate certificates: {0}")]
pub struct CertError(String);

fn e(err: impl std::fmt::Display) -> CertError {
    CertError(err.to_string())
}

/// Generates a CA and a server certificate signed by it.
pub fn generate() -> Result<Certs, CertError> {
    let ca_key = KeyPair::generate().map_err(e)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca_params.distinguished_name.push(DnType::CommonName, "kube-sim-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().map_err(e)?;
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "kube-sim".to_string()]).map_err(e)?;
    params.subject_alt_names.push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    let server_cert = params.signed_by(&server_key, &issuer).map_err(e)?;
    Ok(Certs {
        ca_pem: ca_cert.pem(),
        server_der: server_cert.der().clone(),
        server_key_der: server_key.serialize_der(),
    })
}

/// The rustls server config (ring provider, ALPN h2 + http/1.1).
pub fn server_config(certs: &Certs) -> Result<Arc<rustls::ServerConfig>, CertError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certs.server_key_der.clone()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(e)?
        .with_no_client_auth()
        .with_single_cert(vec![certs.server_der.clone()], key)
        .map_err(e)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Writes a kubeconfig for `url` trusting `ca_pem`, authenticating with `token`, context
/// namespace `default` (the admin kubeconfig).
pub fn write_kubeconfig(path: &Path, url: &str, ca_pem: &str, token: &str) -> std::io::Result<()> {
    write_kubeconfig_as(path, url, ca_pem, "kube-sim", token, "default")
}

/// Writes a kubeconfig for `url` trusting `ca_pem`, whose user `user_name` authenticates with
/// `token`, with context namespace `namespace`.
pub fn write_kubeconfig_as(
    path: &Path,
    url: &str,
    ca_pem: &str,
    user_name: &str,
    token: &str,
    namespace: &str,
) -> std::io::Result<()> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    // Plain YAML scalars: names, namespaces and tokens are DNS labels/ASCII without ": ".
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: {user_name}\n  user:\n    token: {token}\ncontexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: {user_name}\n    namespace: {namespace}\ncurrent-context: kube-sim\npreferences: {{}}\n"
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}
