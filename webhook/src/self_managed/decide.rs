//! What to do with the certificate Secret, given its content and the time: no I/O, no
//! randomness, so every case is unit-tested with fixed times.
//!
//! The Secret holds `ca.crt` (the CA bundle: the signing CA first, then older CAs still
//! trusted), `ca.key` (the signing CA's key), `tls.crt` and `tls.key` (the serving pair).
//! A certificate is renewed when less than a third of its lifetime is left. A CA is rotated in
//! two steps so that no webhook call fails: a new CA is put first in `ca.crt` (next to the old
//! one), and the serving certificate switches to it only once every webhook's `caBundle`
//! has held it long enough for apiservers to see it ([`switch_grace`]: they read webhook
//! configurations through informers, a little behind the object).

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use x509_parser::prelude::{FromDer as _, GeneralName, X509Certificate};

use crate::tls::{parse_pair, provider};

/// The Secret's keys.
pub const TLS_CRT: &str = "tls.crt";
/// The serving key.
pub const TLS_KEY: &str = "tls.key";
/// The CA bundle (what the webhooks' `caBundle` must equal).
pub const CA_CRT: &str = "ca.crt";
/// The signing CA's key.
pub const CA_KEY: &str = "ca.key";

/// The Secret's data, by key (only the four keys above matter).
#[derive(Clone, Copy, Default)]
pub struct SecretData<'a> {
    pub tls_crt: Option<&'a [u8]>,
    pub tls_key: Option<&'a [u8]>,
    pub ca_crt: Option<&'a [u8]>,
    pub ca_key: Option<&'a [u8]>,
}

/// What every webhook configuration currently publishes, as far as we know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Published {
    /// There is no webhook configuration: nobody relies on the bundle.
    NoConfiguration,
    /// The `caBundle` of each webhook (PEM bytes; empty when blank), and since when (Unix
    /// seconds) they have been seen as they are.
    Bundles { bundles: Vec<Vec<u8>>, since: i64 },
    /// Not known (it could not be read).
    Unknown,
}

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Serve the Secret's pair; look again at `recheck_at` (Unix seconds) at the latest.
    Use { recheck_at: i64 },
    /// There is no Secret: create one with a new CA and serving certificate.
    Create,
    /// The CA part is unusable: replace everything with a new CA and serving certificate.
    Replace { reason: String },
    /// Issue a new serving certificate from the signing CA (the first in `ca.crt`).
    Renew { reason: String },
    /// The signing CA is ageing: put a new CA first in `ca.crt`, keep the serving pair.
    AddNextCa { reason: String },
    /// The serving certificate must move to the new CA, but some webhook's `caBundle` does not
    /// hold it yet, or apiservers may not have seen it yet (then: look again `until`, Unix
    /// seconds); serve the current pair meanwhile.
    WaitForBundle { reason: String, until: Option<i64> },
}

/// The names and lifetimes certificates must have.
#[derive(Clone, Debug)]
pub struct Wanted {
    /// DNS names the serving certificate must carry; the first is used to verify it.
    pub dns_names: Vec<String>,
    /// Lifetime of a serving certificate, in seconds.
    pub serving_validity: i64,
    /// Lifetime of a CA, in seconds.
    pub ca_validity: i64,
}

/// Backdating of `notBefore`: absorbs clock skew between replicas and the API server, without
/// eating much of a short lifetime.
pub fn backdate(validity: i64) -> i64 {
    (validity / 10).min(3600)
}

/// How long every `caBundle` must have held a new CA before the serving certificate moves to
/// it, for a CA whose certificate spans `span` seconds: a minute (apiservers see a changed
/// `caBundle` within seconds), less for test CAs that live only seconds, never zero.
pub fn switch_grace(span: i64) -> i64 {
    (span / 30).clamp(1, 60)
}

/// Unix seconds at which a certificate valid `not_before..not_after` is due for renewal: when
/// a third of its lifetime is left.
pub fn renew_at(not_before: i64, not_after: i64) -> i64 {
    not_after - (not_after - not_before) / 3
}

/// Decides what to do with the Secret (`None`: it does not exist) at `now` (Unix seconds).
pub fn decide(secret: Option<SecretData<'_>>, now: i64, wanted: &Wanted, published: &Published) -> Action {
    let Some(secret) = secret else {
        return Action::Create;
    };
    let ca = match SigningCa::read(secret, now) {
        Ok(ca) => ca,
        Err(reason) => return Action::Replace { reason },
    };
    let ca_due = renew_at(ca.not_before, ca.not_after);
    if now >= ca_due {
        return Action::AddNextCa {
            reason: format!("the CA expires in {}s, less than a third of its lifetime", ca.not_after - now),
        };
    }
    let serving = match Serving::read(secret, wanted) {
        Ok(serving) => serving,
        Err(reason) => return Action::Renew { reason },
    };
    if let Err(error) = verify(&serving.der, &ca.first, &wanted.dns_names, now) {
        if verify(&serving.der, &ca.bundle, &wanted.dns_names, now).is_ok() {
            // Signed by an older CA still in the bundle: switch once the new CA is published
            // and apiservers have had time to pick the new bundle up.
            if !published.holds(&ca.first[0]) {
                let reason = "the new CA is not yet in every webhook's caBundle".into();
                return Action::WaitForBundle { reason, until: None };
            }
            let switch_at = match published {
                Published::Bundles { since, .. } => {
                    since.saturating_add(switch_grace(ca.not_after - ca.not_before))
                }
                _ => now,
            };
            if now < switch_at {
                let reason = format!(
                    "every caBundle holds the new CA; the serving certificate moves to it in {}s, \
                     once every apiserver has seen the new bundle",
                    switch_at - now
                );
                return Action::WaitForBundle { reason, until: Some(switch_at) };
            }
            return Action::Renew { reason: "moving the serving certificate to the new CA".into() };
        }
        return Action::Renew { reason: format!("tls.crt does not verify against ca.crt: {error}") };
    }
    let serving_due = renew_at(serving.not_before, serving.not_after);
    if now >= serving_due {
        return Action::Renew {
            reason: format!(
                "the serving certificate expires in {}s, less than a third of its lifetime",
                serving.not_after - now
            ),
        };
    }
    Action::Use { recheck_at: serving_due.min(ca_due) }
}

impl Published {
    /// Whether every webhook's bundle trusts `ca` (so a certificate it signs verifies).
    fn holds(&self, ca: &CertificateDer<'_>) -> bool {
        match self {
            Self::NoConfiguration => true,
            Self::Unknown => false,
            Self::Bundles { bundles, .. } => bundles.iter().all(|bundle| {
                certificates(bundle).is_ok_and(|certs| certs.iter().any(|c| c.as_ref() == ca.as_ref()))
            }),
        }
    }
}

/// The bundle for a new CA: the new one first, then the old ones not yet expired at `now`.
pub fn bundle_with_next_ca(new_ca_pem: &str, old_bundle: &[u8], now: i64) -> String {
    let mut bundle = new_ca_pem.trim_end().to_owned();
    bundle.push('\n');
    for cert in certificates(old_bundle).unwrap_or_default() {
        let alive = X509Certificate::from_der(cert.as_ref())
            .is_ok_and(|(_, parsed)| parsed.validity().not_after.timestamp() > now);
        if alive {
            bundle.push_str(&pem_of(cert.as_ref()));
        }
    }
    bundle
}

/// The signing CA's common name, which a certificate it issues names as its issuer.
pub fn ca_common_name(ca_crt: &[u8]) -> Option<String> {
    let first = certificates(ca_crt).ok()?.into_iter().next()?;
    let (_, parsed) = X509Certificate::from_der(first.as_ref()).ok()?;
    let name = parsed.subject().iter_common_name().next()?.as_str().ok()?.to_owned();
    Some(name)
}

/// When the signing CA (the first of `ca_crt`) expires, in Unix seconds.
pub fn ca_not_after(ca_crt: &[u8]) -> Option<i64> {
    let first = certificates(ca_crt).ok()?.into_iter().next()?;
    let (_, parsed) = X509Certificate::from_der(first.as_ref()).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

/// Checks that `cert_pem` is a serving certificate for `dns_names` that verifies against the
/// first CA of `ca_crt` at `now`.
pub fn verifies_against_signing_ca(
    cert_pem: &[u8],
    ca_crt: &[u8],
    dns_names: &[String],
    now: i64,
) -> Result<(), String> {
    let leaf = certificates(cert_pem)?.into_iter().next().ok_or("no certificate")?;
    let first = certificates(ca_crt)?.into_iter().take(1).collect::<Vec<_>>();
    verify(&leaf, &first, dns_names, now)
}

struct SigningCa {
    /// The signing CA alone.
    first: Vec<CertificateDer<'static>>,
    /// Every CA in `ca.crt`.
    bundle: Vec<CertificateDer<'static>>,
    not_before: i64,
    not_after: i64,
}

impl SigningCa {
    fn read(secret: SecretData<'_>, now: i64) -> Result<Self, String> {
        let ca_crt = secret.ca_crt.ok_or("the Secret has no ca.crt")?;
        let ca_key = secret.ca_key.ok_or("the Secret has no ca.key")?;
        let bundle = certificates(ca_crt).map_err(|e| format!("ca.crt: {e}"))?;
        let first = bundle.first().ok_or("ca.crt holds no certificate")?.clone();
        let (_, parsed) = X509Certificate::from_der(first.as_ref())
            .map_err(|e| format!("ca.crt is not a certificate: {e}"))?;
        if !parsed.is_ca() {
            return Err("the first certificate of ca.crt is not a CA".into());
        }
        let not_before = parsed.validity().not_before.timestamp();
        let not_after = parsed.validity().not_after.timestamp();
        if now >= not_after {
            return Err("the CA in ca.crt has expired".into());
        }
        if now < not_before {
            return Err("the CA in ca.crt is not valid yet".into());
        }
        let key_text = std::str::from_utf8(ca_key).map_err(|_| "ca.key is not PEM text")?;
        let key = rcgen::KeyPair::from_pem(key_text).map_err(|e| format!("ca.key: {e}"))?;
        if rcgen::PublicKeyData::subject_public_key_info(&key) != parsed.public_key().raw {
            return Err("ca.key does not belong to the first certificate of ca.crt".into());
        }
        Ok(Self { first: vec![first], bundle, not_before, not_after })
    }
}

struct Serving {
    der: CertificateDer<'static>,
    not_before: i64,
    not_after: i64,
}

impl Serving {
    fn read(secret: SecretData<'_>, wanted: &Wanted) -> Result<Self, String> {
        let cert = secret.tls_crt.ok_or("the Secret has no tls.crt")?;
        let key = secret.tls_key.ok_or("the Secret has no tls.key")?;
        parse_pair(cert, key).map_err(|e| format!("tls.crt/tls.key: {e}"))?;
        let der = certificates(cert)
            .map_err(|e| format!("tls.crt: {e}"))?
            .into_iter()
            .next()
            .ok_or("tls.crt holds no certificate")?;
        let (_, parsed) = X509Certificate::from_der(der.as_ref()).map_err(|e| format!("tls.crt: {e}"))?;
        let names: Vec<&str> = match parsed.subject_alternative_name() {
            Ok(Some(san)) => san
                .value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(dns) => Some(*dns),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let missing: Vec<&str> =
            wanted.dns_names.iter().map(String::as_str).filter(|w| !names.contains(w)).collect();
        if !missing.is_empty() {
            return Err(format!("tls.crt is not valid for {}", missing.join(", ")));
        }
        let not_before = parsed.validity().not_before.timestamp();
        let not_after = parsed.validity().not_after.timestamp();
        Ok(Self { der, not_before, not_after })
    }
}

/// Every certificate in a PEM text.
pub(crate) fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE block".into());
    }
    Ok(certs)
}

fn pem_of(der: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// Verifies a serving certificate as a webhook client would: chain to `roots`, the first
/// wanted name, at `now`.
fn verify(
    leaf: &CertificateDer<'_>,
    roots: &[CertificateDer<'static>],
    dns_names: &[String],
    now: i64,
) -> Result<(), String> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).map_err(|e| format!("CA certificate: {e}"))?;
    }
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| e.to_string())?;
    let name = dns_names.first().ok_or("no DNS name wanted")?;
    let server_name = ServerName::try_from(name.clone()).map_err(|e| format!("{name}: {e}"))?;
    let now = UnixTime::since_unix_epoch(std::time::Duration::from_secs(u64::try_from(now).unwrap_or(0)));
    verifier.verify_server_cert(leaf, &[], &server_name, &[], now).map(|_| ()).map_err(|e| e.to_string())
}
