//! `certs::generate`: files, permissions and refusals (the TLS tests use the output for real).

use std::net::IpAddr;

use eviction_autoscaler_webhook::certs::{generate, generate_pem};

#[test]
fn writes_ca_cert_and_private_key_readable_only_by_the_owner() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = dir.path().join("nested/certs");
    let ip: IpAddr = "10.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"));
    let generated = generate(&out, &["eviction-autoscaler.eviction-autoscaler.svc".to_owned()], &[ip])
        .unwrap_or_else(|e| panic!("{e}"));
    for (file, pem) in
        [("ca.crt", &generated.ca_pem), ("tls.crt", &generated.cert_pem), ("tls.key", &generated.key_pem)]
    {
        let written = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(&written, pem, "{file}");
    }
    assert!(generated.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    assert!(generated.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert_ne!(generated.ca_pem, generated.cert_pem, "the serving cert is not the CA");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(out.join("tls.key")).map(|m| m.permissions().mode()).unwrap_or_default();
    assert_eq!(mode & 0o077, 0, "tls.key must not be group/world readable, mode {mode:o}");
}

#[test]
fn refuses_bad_names_and_empty_subjects() {
    let error = generate_pem(&["not a hostname\u{0}".to_owned()], &[])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.starts_with("invalid certificate subject name"), "{error}");
    let error = generate_pem(&[], &[]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("at least one DNS name or IP address"), "{error}");
    assert!(generate_pem(&[], &["127.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))]).is_ok());
}
