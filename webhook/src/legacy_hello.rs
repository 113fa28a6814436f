//! Answers a ClientHello that offers only TLS 1.0/1.1 with a `protocol_version` alert.
//!
//! RFC 5246 §E.1 says a server that supports only versions above the client's MUST send
//! `protocol_version`. rustls instead sends `handshake_failure` for such a hello, because it
//! first requires the `signature_algorithms` extension, which TLS ≤ 1.1 clients never send.
//! So the first record is peeked (not consumed) before the handshake: a modern hello goes to
//! rustls untouched, a legacy-only one gets the right alert and the connection is closed.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const HANDSHAKE: u8 = 0x16;
const CLIENT_HELLO: u8 = 0x01;
const TLS12: u16 = 0x0303;
const SUPPORTED_VERSIONS: u16 = 0x002b;
const MAX_RECORD: usize = 5 + (1 << 14);

/// What the first bytes of a connection say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Hello {
    /// Not enough bytes yet to decide; this many are needed.
    NeedMore(usize),
    /// Only versions below TLS 1.2 are offered; the client's version, for the alert record.
    LegacyOnly(u16),
    /// Anything else (a TLS 1.2/1.3 hello, or not a hello at all): rustls decides.
    PassThrough,
}

/// Classifies the start of a connection.
pub(crate) fn classify(bytes: &[u8]) -> Hello {
    // Record header (5) + handshake header (4) + client_version (2).
    if bytes.len() < 11 {
        return Hello::NeedMore(11);
    }
    if bytes[0] != HANDSHAKE || bytes[5] != CLIENT_HELLO {
        return Hello::PassThrough;
    }
    let client_version = u16::from_be_bytes([bytes[9], bytes[10]]);
    if client_version >= TLS12 {
        return Hello::PassThrough;
    }
    let record_len = usize::from(u16::from_be_bytes([bytes[3], bytes[4]]));
    let record_end = 5 + record_len;
    if record_end > MAX_RECORD {
        return Hello::PassThrough;
    }
    if bytes.len() < record_end {
        return Hello::NeedMore(record_end);
    }
    // A supported_versions extension overrides client_version (RFC 8446 §4.2.1).
    match has_supported_versions(&bytes[11..record_end]) {
        Some(false) => Hello::LegacyOnly(client_version),
        // Present, or a hello split over records / malformed: leave it to rustls.
        Some(true) | None => Hello::PassThrough,
    }
}

/// Splits `n` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
    *rest = tail;
    Some(head)
}

fn take_u8(rest: &mut &[u8]) -> Option<usize> {
    take(rest, 1).map(|b| usize::from(b[0]))
}

fn take_u16(rest: &mut &[u8]) -> Option<usize> {
    take(rest, 2).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
}

/// Walks the ClientHello after client_version; `None` if it does not parse.
fn has_supported_versions(mut rest: &[u8]) -> Option<bool> {
    let rest = &mut rest;
    take(rest, 32)?; // random
    let session_id_len = take_u8(rest)?;
    take(rest, session_id_len)?;
    let suites_len = take_u16(rest)?;
    take(rest, suites_len)?;
    let compression_len = take_u8(rest)?;
    take(rest, compression_len)?;
    if rest.is_empty() {
        return Some(false); // no extensions at all
    }
    let extensions_len = take_u16(rest)?;
    let mut extensions = take(rest, extensions_len)?;
    while !extensions.is_empty() {
        let kind = take_u16(&mut extensions)?;
        let len = take_u16(&mut extensions)?;
        if kind == usize::from(SUPPORTED_VERSIONS) {
            return Some(true);
        }
        take(&mut extensions, len)?;
    }
    Some(false)
}

/// Peeks at the connection; returns true when it answered a legacy-only hello (the caller
/// then drops the connection).
pub(crate) async fn refuse_legacy_hello(tcp: &mut TcpStream, deadline: tokio::time::Instant) -> bool {
    let mut buf = vec![0u8; 11];
    loop {
        let peeked = match tokio::time::timeout_at(deadline, tcp.peek(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return false, // closed or slow: rustls handles it
            Ok(Ok(n)) => n,
        };
        match classify(&buf[..peeked]) {
            Hello::PassThrough => return false,
            Hello::LegacyOnly(version) => {
                let [major, minor] = version.to_be_bytes();
                // Alert record: fatal (2), protocol_version (70).
                let alert = [0x15, major, minor, 0x00, 0x02, 0x02, 70];
                let _ = tcp.write_all(&alert).await;
                let _ = tcp.shutdown().await;
                return true;
            }
            Hello::NeedMore(needed) => {
                if peeked >= needed || tokio::time::Instant::now() >= deadline {
                    return false;
                }
                if buf.len() < needed {
                    buf.resize(needed, 0);
                } else {
                    // Part of the record is here; peek returns at once, so wait a moment.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(client_version: [u8; 2], extensions: &[u8]) -> Vec<u8> {
        let mut body = client_version.to_vec();
        body.extend([7; 32]);
        body.push(0);
        body.extend([0, 2, 0x00, 0x2f]);
        body.extend([1, 0]);
        body.extend((extensions.len() as u16).to_be_bytes());
        body.extend(extensions);
        let mut handshake = vec![1];
        handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
        handshake.extend(body);
        let mut record = vec![0x16, 3, 1];
        record.extend((handshake.len() as u16).to_be_bytes());
        record.extend(handshake);
        record
    }

    #[test]
    fn tls11_hello_without_supported_versions_is_legacy_only() {
        let bytes = hello([3, 2], &[0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]);
        assert_eq!(classify(&bytes), Hello::LegacyOnly(0x0302));
        assert_eq!(classify(&bytes[..20]), Hello::NeedMore(bytes.len()));
        assert_eq!(classify(&bytes[..5]), Hello::NeedMore(11));
    }

    #[test]
    fn modern_and_versioned_hellos_pass_through() {
        assert_eq!(classify(&hello([3, 3], &[])), Hello::PassThrough);
        let with_versions = hello([3, 1], &[0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]);
        assert_eq!(classify(&with_versions), Hello::PassThrough);
        assert_eq!(classify(b"GET / HTTP/1.1\r\nHost: x\r\n"), Hello::PassThrough);
    }

    #[test]
    fn truncated_legacy_hello_passes_through_instead_of_panicking() {
        let mut bytes = hello([3, 2], &[0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]);
        let len = bytes.len();
        bytes[3..5].copy_from_slice(&((len - 5) as u16).to_be_bytes());
        bytes.truncate(len - 3);
        bytes[3..5].copy_from_slice(&((len - 8) as u16).to_be_bytes());
        assert_eq!(classify(&bytes), Hello::PassThrough);
    }
}
