//! Development and test certificates: a CA and a serving certificate signed by it (rcgen,
//! ECDSA P-256), for `eviction-autoscaler certs` and the tests. Production uses cert-manager
//! or the self-managed Secret.

use std::net::IpAddr;
use std::path::Path;

use jiff::ToSpan as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SanType,
};

use crate::Error;

/// PEM texts of a generated CA and serving certificate.
#[derive(Clone, Debug)]
pub struct GeneratedCerts {
    /// The CA certificate (what goes into a webhook's `caBundle`).
    pub ca_pem: String,
    /// The serving certificate, signed by the CA.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub key_pem: String,
}

/// Creates a CA (valid 10 years) and a serving certificate for `dns_names` and `ip_addrs`
/// (valid 1 year), both valid from yesterday (UTC) to tolerate clock skew.
pub fn generate_pem(dns_names: &[String], ip_addrs: &[IpAddr]) -> Result<GeneratedCerts, Error> {
    if dns_names.is_empty() && ip_addrs.is_empty() {
        return Err(Error::InvalidName {
            name: String::new(),
            reason: "give at least one DNS name or IP address".into(),
        });
    }
    // Whole UTC days: validity starts yesterday, which also absorbs clock skew.
    let today = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).date();
    let yesterday = today.saturating_sub(1.day());

    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca_params.distinguished_name = name("eviction-autoscaler CA");
    ca_params.not_before = ymd!(yesterday);
    ca_params.not_after = ymd!(today.saturating_add(10.years()));
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::default();
    params.subject_alt_names = dns_names
        .iter()
        .map(|dns| {
            let invalid = |reason: String| Error::InvalidName { name: dns.clone(), reason };
            // rcgen accepts any ASCII; check DNS syntax so a typo fails here, not at handshake.
            rustls::pki_types::DnsName::try_from(dns.as_str()).map_err(|e| invalid(e.to_string()))?;
            dns.as_str().try_into().map(SanType::DnsName).map_err(|e: rcgen::Error| invalid(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    params.subject_alt_names.extend(ip_addrs.iter().map(|ip| SanType::IpAddress(*ip)));
    let common_name =
        dns_names.first().cloned().or_else(|| ip_addrs.first().map(IpAddr::to_string)).unwrap_or_default();
    params.distinguished_name = name(&common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = ymd!(yesterday);
    params.not_after = ymd!(today.saturating_add(1.year()));
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;

    Ok(GeneratedCerts { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// A certificate and its private key, PEM.
#[derive(Clone)]
pub struct IssuedPem {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The common name of the CAs made here; a serving certificate names it as its issuer.
pub const CA_COMMON_NAME: &str = "eviction-autoscaler CA";

/// A self-signed CA valid from `not_before` to `not_after` (Unix seconds).
pub fn new_ca(not_before: i64, not_after: i64) -> Result<IssuedPem, Error> {
    let params = ca_params(CA_COMMON_NAME, not_before, not_after);
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok(IssuedPem { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// A serving certificate for `dns_names`, valid from `not_before` to `not_after` (Unix
/// seconds), signed by the CA whose subject common name is `ca_common_name` and whose key is
/// `ca_key_pem`. The caller checks the result against the CA certificate: a CA whose subject
/// is more than a common name would not be named correctly as the issuer.
pub fn issue_serving(
    ca_common_name: &str,
    ca_key_pem: &str,
    dns_names: &[String],
    not_before: i64,
    not_after: i64,
) -> Result<IssuedPem, Error> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    // The issuer only needs the CA's name and key; its validity here does not matter.
    let issuer = Issuer::new(ca_params(ca_common_name, not_before, not_after), ca_key);
    let mut params = CertificateParams::default();
    params.subject_alt_names = dns_names
        .iter()
        .map(|dns| {
            dns.as_str()
                .try_into()
                .map(SanType::DnsName)
                .map_err(|e: rcgen::Error| Error::InvalidName { name: dns.clone(), reason: e.to_string() })
        })
        .collect::<Result<Vec<_>, _>>()?;
    params.distinguished_name = name(dns_names.first().map_or("eviction-autoscaler", String::as_str));
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    set_validity(&mut params, not_before, not_after);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(IssuedPem { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

fn ca_params(common_name: &str, not_before: i64, not_after: i64) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.distinguished_name = name(common_name);
    set_validity(&mut params, not_before, not_after);
    params
}

/// Sets validity from Unix seconds, clamped to 1970..=9999 (rcgen's time type panics beyond;
/// the settings keep real values far inside).
fn set_validity(params: &mut CertificateParams, not_before: i64, not_after: i64) {
    const LAST_SECOND_OF_9999: i64 = 253_402_300_799;
    let at = |seconds: i64| {
        let seconds = u64::try_from(seconds.clamp(0, LAST_SECOND_OF_9999)).unwrap_or(0);
        rcgen::date_time_ymd(1970, 1, 1) + std::time::Duration::from_secs(seconds)
    };
    params.not_before = at(not_before);
    params.not_after = at(not_after);
}

/// Writes `ca.crt`, `tls.crt` and `tls.key` (mode 0600) into `out_dir`, creating it.
pub fn generate(out_dir: &Path, dns_names: &[String], ip_addrs: &[IpAddr]) -> Result<GeneratedCerts, Error> {
    let generated = generate_pem(dns_names, ip_addrs)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|source| Error::WriteFile { path: out_dir.to_owned(), source })?;
    write(&out_dir.join("ca.crt"), &generated.ca_pem, false)?;
    write(&out_dir.join("tls.crt"), &generated.cert_pem, false)?;
    write(&out_dir.join("tls.key"), &generated.key_pem, true)?;
    Ok(generated)
}

fn write(path: &Path, text: &str, secret: bool) -> Result<(), Error> {
    let wrap = |source| Error::WriteFile { path: path.to_owned(), source };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut file = options.open(path).map_err(wrap)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(wrap)
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

/// A UTC calendar date as rcgen's date type; jiff dates are always valid calendar dates, so
/// `date_time_ymd` cannot hit its out-of-range panic.
macro_rules! ymd {
    ($date:expr) => {{
        let date: jiff::civil::Date = $date;
        rcgen::date_time_ymd(i32::from(date.year()), date.month().unsigned_abs(), date.day().unsigned_abs())
    }};
}
use ymd;
