//! The warning a `kubernetes.io/tls` Secret gets when its `tls.crt` and `tls.key` are not a key
//! pair (the registry's `warningsForSecret`: the error of Go's `tls.X509KeyPair`), as far as
//! the PEM blocks tell: which blocks are there, in upstream's wording. The certificate and key
//! themselves are not parsed, nor checked to match.

use base64::Engine as _;
use serde_json::Value;

/// The warning for `secret`, if it is a TLS Secret whose pair Go would refuse at the PEM level.
pub(super) fn warning(secret: &Value) -> Option<String> {
    if secret["type"].as_str() != Some("kubernetes.io/tls") {
        return None;
    }
    let data = |key: &str| {
        let encoded = secret["data"][key].as_str().unwrap_or_default();
        base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default()
    };
    pair_error(&data("tls.crt"), &data("tls.key"))
}

/// `tls.X509KeyPair`'s errors about missing or misplaced PEM blocks.
fn pair_error(cert: &[u8], key: &[u8]) -> Option<String> {
    let cert_types = block_types(cert);
    let skipped: Vec<&str> = cert_types.iter().map(String::as_str).filter(|t| *t != "CERTIFICATE").collect();
    if skipped.len() == cert_types.len() {
        return Some(match skipped.as_slice() {
            [] => "tls: failed to find any PEM data in certificate input".into(),
            [only] if only.ends_with("PRIVATE KEY") => "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched".into(),
            _ => format!(
                "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the following types: [{}]",
                skipped.join(" ")
            ),
        });
    }
    let mut skipped = Vec::new();
    for kind in block_types(key) {
        if kind == "PRIVATE KEY" || kind.ends_with(" PRIVATE KEY") {
            return None;
        }
        skipped.push(kind);
    }
    Some(match skipped.as_slice() {
        [] => "tls: failed to find any PEM data in key input".into(),
        [only] if only == "CERTIFICATE" => {
            "tls: found a certificate rather than a key in the PEM for the private key".into()
        }
        _ => format!(
            "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input after skipping PEM blocks of the following types: [{}]",
            skipped.join(" ")
        ),
    })
}

/// The types of the PEM blocks in `text` (`-----BEGIN X-----` … `-----END X-----`), in order.
fn block_types(text: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let mut types = Vec::new();
    let mut rest = text.as_ref();
    while let Some(begin) = rest.find("-----BEGIN ") {
        let after = &rest[begin + 11..];
        let Some(close) = after.find("-----") else { break };
        let kind = &after[..close];
        let end = format!("-----END {kind}-----");
        let Some(stop) = after.find(&end) else { break };
        types.push(kind.to_owned());
        rest = &after[stop + end.len()..];
    }
    types
}

#[cfg(test)]
mod tests {
    use super::pair_error;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

    #[test]
    fn missing_or_switched_blocks_are_worded_as_go_words_them() {
        let cases = [
            ("cert", "key", Some("tls: failed to find any PEM data in certificate input")),
            (
                KEY,
                CERT,
                Some(
                    "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched",
                ),
            ),
            (CERT, "key", Some("tls: failed to find any PEM data in key input")),
            (CERT, CERT, Some("tls: found a certificate rather than a key in the PEM for the private key")),
            (CERT, KEY, None),
            (CERT, "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----", None),
        ];
        for (cert, key, want) in cases {
            assert_eq!(pair_error(cert.as_bytes(), key.as_bytes()).as_deref(), want, "{cert:?} {key:?}");
        }
    }
}
