//! The self-managed certificate Secret, as anyone with write access to the namespace can leave
//! it: each of `tls.crt`, `tls.key`, `ca.crt` and `ca.key` valid, truncated, bit-flipped,
//! another key's content, random DER in a PEM block, random bytes or absent. The decision is
//! always an action (use, renew, replace…), never a panic.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use eviction_autoscaler_webhook::certs::{CA_COMMON_NAME, IssuedPem, issue_serving, new_ca};
use eviction_autoscaler_webhook::self_managed::decide::{Action, Published, SecretData, Wanted, decide};
use libfuzzer_sys::fuzz_target;

const T0: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

struct Valid {
    ca: IssuedPem,
    serving: IssuedPem,
}

fn wanted() -> Wanted {
    Wanted {
        dns_names: vec!["eas.ops.svc".into(), "eas".into()],
        serving_validity: 300 * DAY,
        ca_validity: 3000 * DAY,
    }
}

/// One valid Secret content, made once: a CA and a serving certificate it signed.
fn valid() -> &'static Valid {
    static VALID: OnceLock<Valid> = OnceLock::new();
    VALID.get_or_init(|| {
        let ca = new_ca(T0, T0 + 3000 * DAY).expect("a CA");
        let serving = issue_serving(CA_COMMON_NAME, &ca.key_pem, &wanted().dns_names, T0, T0 + 300 * DAY)
            .expect("a serving pair");
        Valid { ca, serving }
    })
}

#[derive(Arbitrary, Debug)]
enum Field {
    Absent,
    Valid,
    Truncated(u16),
    Flipped {
        at: u16,
        bits: u8,
    },
    /// The content of another key (`0..4`: tls.crt, tls.key, ca.crt, ca.key).
    Other(u8),
    /// Random bytes inside a PEM block of this label.
    Pem {
        label: u8,
        der: Vec<u8>,
    },
    Bytes(Vec<u8>),
}

const LABELS: [&str; 4] = ["CERTIFICATE", "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"];

fn pem(label: &str, der: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut body = String::new();
    for chunk in der.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            body.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
        body.push_str(&"=".repeat(3 - chunk.len()));
    }
    format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n").into_bytes()
}

impl Field {
    fn bytes(&self, own: usize) -> Option<Vec<u8>> {
        let v = valid();
        let contents = [&v.serving.cert_pem, &v.serving.key_pem, &v.ca.cert_pem, &v.ca.key_pem];
        let valid = contents[own].as_bytes().to_vec();
        Some(match self {
            Self::Absent => return None,
            Self::Valid => valid,
            Self::Truncated(at) => valid[..usize::from(*at) % (valid.len() + 1)].to_vec(),
            Self::Flipped { at, bits } => {
                let mut bytes = valid;
                let i = usize::from(*at) % bytes.len();
                bytes[i] ^= bits;
                bytes
            }
            Self::Other(i) => contents[usize::from(*i) % 4].as_bytes().to_vec(),
            Self::Pem { label, der } => pem(LABELS[usize::from(*label) % LABELS.len()], der),
            Self::Bytes(bytes) => bytes.clone(),
        })
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    tls_crt: Field,
    tls_key: Field,
    ca_crt: Field,
    ca_key: Field,
    /// Seconds after T0 (may be before it, or far past every expiry).
    now: i32,
    published: Option<Vec<Field>>,
}

fuzz_target!(|input: Input| {
    let tls_crt = input.tls_crt.bytes(0);
    let tls_key = input.tls_key.bytes(1);
    let ca_crt = input.ca_crt.bytes(2);
    let ca_key = input.ca_key.bytes(3);
    let data = SecretData {
        tls_crt: tls_crt.as_deref(),
        tls_key: tls_key.as_deref(),
        ca_crt: ca_crt.as_deref(),
        ca_key: ca_key.as_deref(),
    };
    let published = match &input.published {
        None => Published::NoConfiguration,
        Some(bundles) => Published::Bundles {
            bundles: bundles.iter().map(|f| f.bytes(2).unwrap_or_default()).collect(),
            since: T0,
        },
    };
    let now = T0 + i64::from(input.now);
    let action = decide(Some(data), now, &wanted(), &published);
    let all_valid = [&input.tls_crt, &input.tls_key, &input.ca_crt, &input.ca_key]
        .iter()
        .all(|f| matches!(f, Field::Valid));
    // A fresh, intact Secret is used as it is.
    if all_valid
        && (0..DAY).contains(&i64::from(input.now))
        && matches!(published, Published::NoConfiguration)
    {
        assert!(matches!(action, Action::Use { .. }), "{action:?}");
    }
});
