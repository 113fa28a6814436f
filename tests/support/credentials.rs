//! The real control plane's credentials: its CA and serving certificate, the ServiceAccount
//! signing keys, static tokens, and kubeconfigs that use them.

use std::io::Read as _;
use std::path::Path;

use serde_json::json;

use super::cluster::write;

pub(crate) struct Pki {
    pub(crate) ca_pem: String,
}

/// A CA, the apiserver's serving certificate (IP SAN 127.0.0.1), and the ServiceAccount
/// signing key pair, written into `dir`.
pub(crate) fn write_pki(dir: &Path) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "test-cluster-ca");
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().expect("serving key");
    let mut params = CertificateParams::new(vec![
        "localhost".to_owned(),
        "kubernetes".to_owned(),
        "kubernetes.default.svc".to_owned(),
    ])
    .expect("serving params");
    params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    params.distinguished_name.push(rcgen::DnType::CommonName, "kube-apiserver");
    let serving = params.signed_by(&key, &issuer).expect("serving certificate");

    let sa = KeyPair::generate().expect("ServiceAccount key");
    write(&dir.join("ca.crt"), &ca.pem());
    write(&dir.join("apiserver.crt"), &serving.pem());
    write(&dir.join("apiserver.key"), &key.serialize_pem());
    write(&dir.join("sa.key"), &sa.serialize_pem());
    write(&dir.join("sa.pub"), &sa.public_key_pem());
    Pki { ca_pem: ca.pem() }
}

pub(crate) fn kubeconfig(server: &str, ca_pem: &str, user: &str, token: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        "current-context": "test"
    })
    .to_string()
}

/// A random 128-bit token, in hex.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).expect("/dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
