//! The webhook over real TLS on loopback: protocol versions, ALPN, certificate reload through a
//! Secret-volume symlink swap, bad certificates, slow clients and graceful shutdown.

mod common;

use std::time::Duration;

use common::tls::{
    SecretVolume, client_config, connect, der_of, eviction_request, generate_into, generate_pem, http1,
    http2, post_eviction, read_reply, served_leaf, settings, start, start_with,
};
use common::{eventually, metrics_text, sample};
use http::StatusCode;
use rustls::version::{TLS12, TLS13};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const UID: &str = "0b6d4a0e-6b3e-4c47-9a67-4d6a5d9a8b11";

fn assert_allowed_reply(reply: &(StatusCode, String)) {
    assert_eq!(reply.0, StatusCode::OK, "body: {}", reply.1);
    assert!(reply.1.contains(&format!(r#""uid":"{UID}","allowed":true"#)), "body: {}", reply.1);
}

#[tokio::test]
async fn clients_connect_over_tls_1_2_and_1_3_with_http1_and_h2() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let certs = generate_into(dir.path());
    let server = start(settings(&dir.path().join("tls.crt"), &dir.path().join("tls.key"))).await;
    assert!(server.readiness.cert_loaded());

    for (version, expected) in
        [(&TLS12, rustls::ProtocolVersion::TLSv1_2), (&TLS13, rustls::ProtocolVersion::TLSv1_3)]
    {
        let config = client_config(&[&certs.ca_pem], &[version], &[b"http/1.1"]);
        let stream = connect(server.addr, config).await.unwrap_or_else(|e| panic!("{expected:?}: {e}"));
        assert_eq!(stream.get_ref().1.protocol_version(), Some(expected));
        let mut sender = http1(stream).await;
        let reply = post_eviction(&mut sender).await.unwrap_or_else(|e| panic!("{e}"));
        assert_allowed_reply(&reply);
    }

    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"h2", b"http/1.1"]);
    let stream = connect(server.addr, config).await.unwrap_or_else(|e| panic!("h2: {e}"));
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let mut sender = http2(stream).await;
    let response = sender.send_request(eviction_request()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_allowed_reply(&read_reply(response).await);

    let mut signals = 0;
    while server.handler.take_signal().is_some() {
        signals += 1;
    }
    assert_eq!(signals, 3, "one signal per eviction over every protocol");
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

/// An oversized review is refused with 413 and its reason over both protocols: the
/// apiserver's client speaks HTTP/2, where a refusal must not be a reset stream without a status.
#[tokio::test]
async fn an_oversized_review_gets_413_with_its_reason_over_http1_and_h2() {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let certs = generate_into(dir.path());
    let server = start(settings(&dir.path().join("tls.crt"), &dir.path().join("tls.key"))).await;
    let oversized = || {
        let body = vec![b' '; eviction_autoscaler_webhook::MAX_BODY_BYTES + 512 * 1024];
        http::Request::post("/validate-deployment")
            .header(http::header::HOST, "localhost")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let expect_413 = |protocol: &str, reply: (StatusCode, String)| {
        assert_eq!(reply.0, StatusCode::PAYLOAD_TOO_LARGE, "{protocol}: {}", reply.1);
        assert!(reply.1.contains("request body is larger than"), "{protocol}: the reason: {}", reply.1);
    };

    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"http/1.1"]);
    let mut sender = http1(connect(server.addr, config).await.unwrap_or_else(|e| panic!("{e}"))).await;
    let response = sender.send_request(oversized()).await.unwrap_or_else(|e| panic!("HTTP/1.1: {e}"));
    expect_413("HTTP/1.1", read_reply(response).await);

    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"h2"]);
    let mut sender = http2(connect(server.addr, config).await.unwrap_or_else(|e| panic!("{e}"))).await;
    let response = sender.send_request(oversized()).await.unwrap_or_else(|e| panic!("h2: {e}"));
    assert_eq!(response.version(), http::Version::HTTP_2);
    expect_413("h2", read_reply(response).await);
    // The connection still serves the next review.
    let response = sender.send_request(eviction_request()).await.unwrap_or_else(|e| panic!("h2 after: {e}"));
    assert_allowed_reply(&read_reply(response).await);

    // Streamed, with no length declared: the limit is found while reading.
    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"h2"]);
    let stream = connect(server.addr, config).await.unwrap_or_else(|e| panic!("{e}"));
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap_or_else(|e| panic!("h2 handshake: {e}"));
    tokio::spawn(connection);
    let chunks = (0..64).map(|_| {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![b' '; 64 * 1024])))
    });
    let request = http::Request::post("/validate-deployment")
        .header(http::header::HOST, "localhost")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(http_body_util::StreamBody::new(futures::stream::iter(chunks)))
        .unwrap_or_else(|e| panic!("{e}"));
    let response = sender.send_request(request).await.unwrap_or_else(|e| panic!("h2 streamed: {e}"));
    expect_413("h2, streamed", read_reply(response).await);
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

/// A TLS 1.1-only ClientHello, built by hand (the local OpenSSL refuses to send one).
fn tls11_client_hello() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend([0x03, 0x02]); // client_version TLS 1.1
    body.extend([0x42; 32]); // random
    body.push(0); // empty session id
    let suites: [u8; 8] = [0xc0, 0x13, 0xc0, 0x09, 0x00, 0x2f, 0x00, 0x35]; // CBC-SHA suites of TLS 1.1
    body.extend((suites.len() as u16).to_be_bytes());
    body.extend(suites);
    body.extend([1, 0]); // compression: null
    let mut extensions = Vec::new();
    let host = b"localhost";
    let mut sni = Vec::new();
    sni.extend(((host.len() + 3) as u16).to_be_bytes());
    sni.push(0); // host_name
    sni.extend((host.len() as u16).to_be_bytes());
    sni.extend(host);
    extensions.extend([0x00, 0x00]);
    extensions.extend((sni.len() as u16).to_be_bytes());
    extensions.extend(sni);
    extensions.extend([0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x17]); // supported_groups: P-256
    extensions.extend([0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]); // ec_point_formats: uncompressed
    body.extend((extensions.len() as u16).to_be_bytes());
    body.extend(extensions);

    let mut handshake = vec![0x01]; // ClientHello
    handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend(body);
    let mut record = vec![0x16, 0x03, 0x01]; // handshake record, TLS 1.0 record version
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

#[tokio::test]
async fn tls_1_1_client_hello_is_refused_with_a_fatal_alert() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    generate_into(dir.path());
    let server = start(settings(&dir.path().join("tls.crt"), &dir.path().join("tls.key"))).await;

    let mut tcp = TcpStream::connect(server.addr).await.unwrap_or_else(|e| panic!("{e}"));
    tcp.write_all(&tls11_client_hello()).await.unwrap_or_else(|e| panic!("{e}"));
    let mut reply = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut reply))
        .await
        .unwrap_or_else(|_| panic!("no answer to a TLS 1.1 hello"))
        .unwrap_or_else(|e| panic!("read: {e}"));
    assert_eq!(reply[0], 0x15, "an alert record, got {reply:02x?}");
    assert_eq!(&reply[3..5], &[0, 2], "alert length");
    assert_eq!(reply[5], 2, "fatal, got {reply:02x?}");
    // rustls answers a hello without `signature_algorithms` (TLS ≤ 1.1 never sends it) so.
    assert_eq!(reply[6], 40, "handshake_failure alert, got {reply:02x?}");
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn certificate_swapped_through_the_data_symlink_is_served_and_open_connections_keep_working() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let first = generate_pem();
    let second = generate_pem();
    let volume = SecretVolume::new(dir.path(), &first);
    let server = start(settings(&volume.cert(), &volume.key())).await;
    let trust_both = client_config(&[&first.ca_pem, &second.ca_pem], &[&TLS13], &[b"http/1.1"]);

    let open = connect(server.addr, trust_both.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(served_leaf(&open), der_of(&first.cert_pem).as_ref());
    let mut open = http1(open).await;
    assert_allowed_reply(&post_eviction(&mut open).await.unwrap_or_else(|e| panic!("{e}")));

    volume.publish("..2026_11_29_17_00_00.000000002", &second);
    let new_leaf = der_of(&second.cert_pem).as_ref().to_vec();
    let mut served_new = false;
    // Reload interval is 100 ms; allow generous slack on a loaded machine.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let fresh = connect(server.addr, trust_both.clone()).await.unwrap_or_else(|e| panic!("{e}"));
        if served_leaf(&fresh) == new_leaf {
            served_new = true;
            let mut fresh = http1(fresh).await;
            assert_allowed_reply(&post_eviction(&mut fresh).await.unwrap_or_else(|e| panic!("{e}")));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_new, "the swapped certificate was not served within 5 s");
    assert_eq!(server.metrics.cert_reloads(), 1);
    assert_eq!(server.metrics.cert_reload_failures(), 0);

    // The connection opened before the swap still serves requests.
    assert_allowed_reply(&post_eviction(&mut open).await.unwrap_or_else(|e| panic!("old connection: {e}")));
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn a_bad_new_certificate_keeps_the_old_one_and_is_counted() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let first = generate_pem();
    let other = generate_pem();
    let volume = SecretVolume::new(dir.path(), &first);
    let server = start(settings(&volume.cert(), &volume.key())).await;
    let config = client_config(&[&first.ca_pem], &[&TLS12, &TLS13], &[b"http/1.1"]);

    // Garbage, then a certificate with someone else's key: each is one failure.
    volume.publish_raw("..v2", b"-----BEGIN CERTIFICATE-----\nnot base64\n", first.key_pem.as_bytes());
    assert!(eventually(Duration::from_secs(5), || server.metrics.cert_reload_failures() == 1).await);
    volume.publish_raw("..v3", first.cert_pem.as_bytes(), other.key_pem.as_bytes());
    assert!(eventually(Duration::from_secs(5), || server.metrics.cert_reload_failures() == 2).await);
    // Unchanged bad files are not reported again on every poll.
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(server.metrics.cert_reload_failures(), 2);
    assert_eq!(server.metrics.cert_reloads(), 0);
    let text = metrics_text(&server.metrics);
    assert_eq!(sample(&text, "eviction_autoscaler_webhook_cert_reload_failures_total"), 2.0);

    let stream =
        connect(server.addr, config).await.unwrap_or_else(|e| panic!("old cert must still serve: {e}"));
    assert_eq!(served_leaf(&stream), der_of(&first.cert_pem).as_ref());
    assert!(server.readiness.cert_loaded());
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn an_unusable_certificate_at_start_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    std::fs::write(&cert, "garbage").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&key, "garbage").unwrap_or_else(|e| panic!("{e}"));
    let readiness = eviction_autoscaler_shared::health::Readiness::new();
    let error = match eviction_autoscaler_webhook::WebhookServer::bind(
        settings(&cert, &key),
        eviction_autoscaler_webhook::Metrics::new(),
        readiness.clone(),
    )
    .await
    {
        Ok(_) => panic!("a garbage certificate must not start the server"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains(&cert.display().to_string()), "{error}");
    assert!(error.contains("no CERTIFICATE block"), "{error}");
    assert!(!readiness.cert_loaded());

    let missing = dir.path().join("absent.crt");
    let error = eviction_autoscaler_webhook::WebhookServer::bind(
        settings(&missing, &key),
        eviction_autoscaler_webhook::Metrics::new(),
        readiness,
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.starts_with(&format!("cannot read {}", missing.display())), "{error}");
}

#[tokio::test]
async fn a_client_that_never_sends_headers_is_disconnected() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let certs = generate_into(dir.path());
    let mut settings = settings(&dir.path().join("tls.crt"), &dir.path().join("tls.key"));
    settings.header_read_timeout = Duration::from_millis(300);
    let server = start(settings).await;
    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"http/1.1"]);
    let mut stream = connect(server.addr, config).await.unwrap_or_else(|e| panic!("{e}"));
    stream
        .write_all(b"POST /validate-eviction HTTP/1.1\r\nHost: loc")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stream.flush().await.unwrap_or_else(|e| panic!("{e}"));
    let mut buf = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "a slow client must be cut off by the header-read timeout");
    server.stop().await.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_and_stops_accepting() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let certs = generate_into(dir.path());
    // A handler that says when it has started, then waits for the whole body.
    let entered = std::sync::Arc::new(tokio::sync::Notify::new());
    let app = axum::Router::new().route(
        "/slow",
        axum::routing::post({
            let entered = entered.clone();
            move |body: axum::body::Bytes| async move {
                entered.notify_one();
                format!("got {} bytes", body.len())
            }
        }),
    );
    // `Bytes` resolves only once the body is complete, so notify from a layer that runs first.
    let app = app.layer(axum::middleware::from_fn({
        let entered = entered.clone();
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let entered = entered.clone();
            async move {
                entered.notify_one();
                next.run(request).await
            }
        }
    }));
    let mut server =
        start_with(settings(&dir.path().join("tls.crt"), &dir.path().join("tls.key")), Some(app)).await;
    let addr = server.addr;
    let readiness = server.readiness.clone();
    let config = client_config(&[&certs.ca_pem], &[&TLS13], &[b"http/1.1"]);
    let mut stream = connect(addr, config.clone()).await.unwrap_or_else(|e| panic!("{e}"));

    // Headers and half the body are in; the rest arrives only after shutdown began.
    stream
        .write_all(b"POST /slow HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n12345")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stream.flush().await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::timeout(Duration::from_secs(5), entered.notified())
        .await
        .unwrap_or_else(|_| panic!("the request never reached the handler"));

    server.begin_stop();
    assert!(
        eventually(Duration::from_secs(5), || !readiness.cert_loaded()).await,
        "not ready while stopping"
    );
    assert!(
        tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(addr))
            .await
            .map_or(true, |r| r.is_err()),
        "no new connections after shutdown began"
    );
    stream.write_all(b"67890").await.unwrap_or_else(|e| panic!("{e}"));
    stream.flush().await.unwrap_or_else(|e| panic!("{e}"));
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply))
        .await
        .unwrap_or_else(|_| panic!("the in-flight request was not finished"))
        .unwrap_or_else(|e| panic!("{e}"));
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.ends_with("got 10 bytes"), "{reply}");

    tokio::time::timeout(Duration::from_secs(11), server.join())
        .await
        .unwrap_or_else(|_| panic!("server did not return within the grace period"))
        .unwrap_or_else(|e| panic!("{e}"));
}
