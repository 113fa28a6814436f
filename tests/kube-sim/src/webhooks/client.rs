//! The HTTPS call to one webhook: `POST <url>?timeout=<N>s` with the AdmissionReview, TLS
//! verified against the webhook's `caBundle`, the whole exchange bounded by `timeoutSeconds`.
//! A `clientConfig.service` is reached through the `--service-endpoint` routes, with the
//! server name `<name>.<namespace>.svc` as upstream. Connections are kept alive and reused,
//! as the apiserver's cached webhook clients do.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use crate::cluster_logic::admission::WebhookTarget;
use crate::controllers::ServiceRoutes;

/// Where to connect, the TLS server name and the request path (with query).
struct Destination {
    addr: SocketAddr,
    server_name: String,
    host_header: String,
    path: String,
}

async fn destination(
    target: &WebhookTarget,
    routes: &ServiceRoutes,
    timeout: u64,
) -> Result<Destination, String> {
    match target {
        WebhookTarget::Service { namespace, name, port, path } => {
            let host = format!("{name}.{namespace}.svc");
            let routed = routes
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&(namespace.clone(), name.clone()))
                .copied();
            let addr =
                routed.ok_or_else(|| format!("dial tcp: lookup {host} on 127.0.0.53:53: no such host"))?;
            let path = if path.is_empty() { "/".to_string() } else { path.clone() };
            Ok(Destination {
                addr,
                server_name: host.clone(),
                host_header: format!("{host}:{port}"),
                path: format!("{path}?timeout={timeout}s"),
            })
        }
        WebhookTarget::Url(url) => {
            let rest = url
                .strip_prefix("https://")
                .ok_or_else(|| format!("unsupported protocol scheme in {url:?}"))?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (
                    h.trim_matches(|c| c == '[' || c == ']'),
                    p.parse::<u16>().map_err(|e| format!("invalid port in {url:?}: {e}"))?,
                ),
                _ => (authority, 443),
            };
            let addr = tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| format!("dial tcp: lookup {host}: {e}"))?
                .next()
                .ok_or_else(|| format!("dial tcp: lookup {host}: no such host"))?;
            Ok(Destination {
                addr,
                server_name: host.to_string(),
                host_header: authority.to_string(),
                path: format!("{path}?timeout={timeout}s"),
            })
        }
    }
}

fn tls_config(ca_bundle: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if !ca_bundle.is_empty() {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca_bundle.trim())
            .map_err(|e| format!("could not get REST client: invalid caBundle: {e}"))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("could not get REST client: invalid caBundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("could not get REST client: invalid caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What a kept-alive connection was opened for: a different caBundle or server name must not
/// reuse it.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ConnectionKey {
    addr: SocketAddr,
    server_name: String,
    ca_bundle: String,
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Idle kept-alive connections to webhooks. The apiserver caches one REST client per webhook
/// and reuses its connections; opening a TLS connection per call would make every admitted
/// write slower than on a real cluster.
#[derive(Default)]
pub struct Connections(Mutex<HashMap<ConnectionKey, Vec<Sender>>>);

impl Connections {
    fn take_idle(&self, key: &ConnectionKey) -> Option<Sender> {
        let mut idle = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let senders = idle.get_mut(key)?;
        while let Some(sender) = senders.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn put_idle(&self, key: ConnectionKey, sender: Sender) {
        let mut idle = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        idle.entry(key).or_default().push(sender);
    }
}

async fn connect(destination: &Destination, ca_bundle: &str) -> Result<Sender, String> {
    let config = tls_config(ca_bundle)?;
    let addr = destination.addr;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!("dial tcp {addr}: connect: connection refused"),
        _ => format!("dial tcp {addr}: {e}"),
    })?;
    let server_name = ServerName::try_from(destination.server_name.clone())
        .map_err(|e| format!("invalid server name: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    // Ends by itself when the sender is dropped or the server closes the connection.
    tokio::spawn(connection);
    Ok(sender)
}

fn request(destination: &Destination, body: Bytes) -> Result<http::Request<Full<Bytes>>, String> {
    http::Request::post(&destination.path)
        .header(http::header::HOST, &destination.host_header)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(body))
        .map_err(|e| e.to_string())
}

async fn exchange(
    connections: &Connections,
    destination: &Destination,
    ca_bundle: &str,
    review: &Value,
) -> Result<(u16, Vec<u8>), String> {
    let key = ConnectionKey {
        addr: destination.addr,
        server_name: destination.server_name.clone(),
        ca_bundle: ca_bundle.to_string(),
    };
    let body = Bytes::from(serde_json::to_vec(review).map_err(|e| e.to_string())?);
    // A kept-alive connection the server closed in the meantime fails without an answer; like
    // Go's transport (which replays such requests), retry once on a fresh connection.
    let reused = match connections.take_idle(&key) {
        Some(mut sender) => match sender.ready().await {
            Ok(()) => match sender.try_send_request(request(destination, body.clone())?).await {
                Ok(response) => Some((sender, response)),
                Err(mut failed) => {
                    let error = failed.error();
                    let closed = error.is_closed() || error.is_incomplete_message() || error.is_canceled();
                    if failed.take_message().is_none() && !closed {
                        return Err(failed.into_error().to_string());
                    }
                    None
                }
            },
            Err(_) => None,
        },
        None => None,
    };
    let (sender, response) = match reused {
        Some(sent) => sent,
        None => {
            let mut sender = connect(destination, ca_bundle).await?;
            let response =
                sender.send_request(request(destination, body)?).await.map_err(|e| e.to_string())?;
            (sender, response)
        }
    };
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    connections.put_idle(key, sender);
    Ok((status, bytes.to_vec()))
}

/// POSTs `review` to the webhook; returns the HTTP status and body, or the transport error
/// detail (`context deadline exceeded` after `timeout_seconds`).
pub async fn post(
    connections: &Connections,
    target: &WebhookTarget,
    routes: &ServiceRoutes,
    ca_bundle: &str,
    timeout_seconds: u64,
    review: &Value,
) -> Result<(u16, Vec<u8>), String> {
    let work = async {
        let destination = destination(target, routes, timeout_seconds).await?;
        exchange(connections, &destination, ca_bundle, review).await
    };
    match tokio::time::timeout(Duration::from_secs(timeout_seconds), work).await {
        Ok(result) => result,
        Err(_) => Err("context deadline exceeded".into()),
    }
}
