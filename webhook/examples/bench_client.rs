//! Open-loop HTTPS load generator for webhook/bench/run.sh (not a product binary).
//!
//! `bench_client --url https://127.0.0.1:PORT/validate-eviction [--url URL2 ...] --ca CA.crt
//!  --body FILE --rate 1000 --connections 10 --duration 10s [--warmup 1s] [--server-name localhost]`
//!
//! Each connection (HTTP/1.1 keep-alive over TLS 1.3) sends POSTs at fixed intended times,
//! rate/connections per second, the connections staggered evenly. A latency runs from the
//! INTENDED send time to the end of the response body, so a stall that delays later requests
//! shows up in the tail (coordinated-omission correction, as wrk2 does).
//!
//! With several `--url`s every target gets the whole rate at once, interleaved: each thread
//! holds one connection per target and visits them in turn, evenly spaced within its interval.
//! Every target then meets the same machine noise at the same moments, which is what makes a
//! side-by-side tail comparison meaningful on a small shared machine.
//!
//! Each connection thread has a current-thread tokio runtime and waits with
//! `std::thread::sleep`: tokio's timer rounds deadlines up to whole milliseconds, which would
//! add up to 1 ms of client-made delay to samples that are themselves ~1 ms.
//!
//! stdout, one line per target in `--url` order:
//! `url=.. requests=N errors=E p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=..`
//! (nearest-rank percentiles); details on stderr. Exits non-zero if any request failed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::runtime::Runtime;
use tokio_rustls::TlsConnector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage: bench_client --url https://HOST:PORT/PATH [--url ...] --ca CA.crt --body FILE \
--rate REQ_PER_S --connections N --duration 10s [--warmup 1s] [--server-name NAME]";

struct Target {
    url: String,
    addr: SocketAddr,
    host_header: String,
    path: String,
    server_name: ServerName<'static>,
    tls: TlsConnector,
    body: Bytes,
}

#[derive(Default)]
struct ConnectionResult {
    latencies_us: Vec<u32>,
    send_lags_us: Vec<u32>,
    non_200: u64,
    last_bad_status: Option<u16>,
    transport_errors: u64,
    first_transport_error: Option<String>,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("bench_client: error: {error}");
            ExitCode::from(2)
        }
    }
}

/// Ok(false) when the run completed but some requests failed.
fn run() -> Result<bool, BoxError> {
    let mut flags = std::collections::HashMap::new();
    let mut urls = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let known =
            ["--url", "--ca", "--body", "--rate", "--connections", "--duration", "--warmup", "--server-name"];
        if !known.contains(&flag.as_str()) {
            return Err(format!("unknown argument {flag:?}\n{USAGE}").into());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        if flag == "--url" {
            urls.push(value);
        } else {
            flags.insert(flag, value);
        }
    }
    let flag =
        |name: &str| flags.get(name).map(String::as_str).ok_or_else(|| format!("missing {name}\n{USAGE}"));
    if urls.is_empty() {
        return Err(format!("missing --url\n{USAGE}").into());
    }
    let rate: f64 = flag("--rate")?.parse().map_err(|e| format!("--rate: {e}"))?;
    let connections: u32 = flag("--connections")?.parse().map_err(|e| format!("--connections: {e}"))?;
    if !(rate.is_finite() && rate > 0.0) || connections == 0 {
        return Err("--rate and --connections must be positive".into());
    }
    let duration = parse_duration(flag("--duration")?).map_err(|e| format!("--duration: {e}"))?;
    let warmup = parse_duration(flags.get("--warmup").map_or("0s", String::as_str))
        .map_err(|e| format!("--warmup: {e}"))?;
    let body_path = flag("--body")?;
    let body = Bytes::from(std::fs::read(body_path).map_err(|e| format!("--body {body_path}: {e}"))?);
    let tls = tls_connector(flag("--ca")?)?;
    let targets = urls
        .iter()
        .map(|url| target(url, flags.get("--server-name"), &tls, &body))
        .collect::<Result<Vec<_>, _>>()?;
    let targets = Arc::new(targets);

    let interval = Duration::try_from_secs_f64(f64::from(connections) / rate)
        .ok()
        .filter(|interval| *interval >= Duration::from_micros(1))
        .ok_or("--rate / --connections must leave between 1 us and years between a connection's requests")?;
    // Connect everything first, so handshakes do not eat into the schedule.
    let mut prepared = Vec::new();
    for _ in 0..connections {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let mut senders = Vec::new();
        for target in targets.iter() {
            let sender = runtime
                .block_on(connect(target))
                .map_err(|e| format!("connecting to {}: {e}", target.addr))?;
            senders.push(sender);
        }
        prepared.push((runtime, senders));
    }
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start.checked_add(warmup).ok_or("--warmup is too long")?;
    let end = measure_from.checked_add(duration).ok_or("--duration is too long")?;
    let threads: Vec<_> = prepared
        .into_iter()
        .enumerate()
        .map(|(index, (runtime, senders))| {
            let targets = targets.clone();
            let first = start + Duration::from_secs_f64(index as f64 / rate);
            let schedule = Schedule { first, interval, measure_from, end };
            std::thread::spawn(move || drive(&runtime, senders, &targets, schedule))
        })
        .collect();
    let mut totals: Vec<ConnectionResult> = targets.iter().map(|_| ConnectionResult::default()).collect();
    for thread in threads {
        let parts = thread.join().map_err(|_| "a connection thread panicked")?;
        for (total, part) in totals.iter_mut().zip(parts) {
            total.latencies_us.extend(part.latencies_us);
            total.send_lags_us.extend(part.send_lags_us);
            total.non_200 += part.non_200;
            total.last_bad_status = total.last_bad_status.or(part.last_bad_status);
            total.transport_errors += part.transport_errors;
            if total.first_transport_error.is_none() {
                total.first_transport_error = part.first_transport_error;
            }
        }
    }
    let mut all_ok = true;
    for (total, target) in totals.into_iter().zip(targets.iter()) {
        all_ok &= report(&target.url, total, duration, rate, connections)?;
    }
    Ok(all_ok)
}

/// Where and what to send for one `--url`.
fn target(
    url_text: &str,
    server_name: Option<&String>,
    tls: &TlsConnector,
    body: &Bytes,
) -> Result<Target, BoxError> {
    let url: http::Uri = url_text.parse().map_err(|e| format!("--url {url_text}: {e}"))?;
    if url.scheme_str() != Some("https") {
        return Err(format!("--url {url_text} must start with https://").into());
    }
    let host = url.host().ok_or("--url has no host")?.trim_matches(['[', ']']).to_owned();
    let port = url.port_u16().unwrap_or(443);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .map_err(|e| format!("--url: cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("--url: {host} resolves to no address"))?;
    let name = server_name.cloned().unwrap_or_else(|| host.clone());
    Ok(Target {
        url: url_text.to_owned(),
        addr,
        host_header: url.authority().map_or(host.clone(), |a| a.to_string()),
        path: url.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
        server_name: ServerName::try_from(name.clone())
            .map_err(|e| format!("--server-name {name:?}: {e}"))?,
        tls: tls.clone(),
        body: body.clone(),
    })
}

fn report(
    url: &str,
    mut total: ConnectionResult,
    duration: Duration,
    rate: f64,
    connections: u32,
) -> Result<bool, BoxError> {
    if total.non_200 > 0 {
        let status = total.last_bad_status.map_or_else(String::new, |s| format!(" (e.g. HTTP {s})"));
        eprintln!("bench_client: error: {} responses were not 200{status}", total.non_200);
    }
    if let Some(first) = &total.first_transport_error {
        eprintln!("bench_client: error: {} transport errors; first: {first}", total.transport_errors);
    }
    let errors = total.non_200 + total.transport_errors;
    let (latencies, lags) = (&mut total.latencies_us, &mut total.send_lags_us);
    if latencies.is_empty() {
        return Err(format!("no successful request in the measured window ({errors} errors)").into());
    }
    latencies.sort_unstable();
    lags.sort_unstable();
    let requests = latencies.len() as u64 + errors;
    let seconds = duration.as_secs_f64();
    eprintln!(
        "bench_client: {url}: {requests} requests in {seconds:.1}s ({rate:.0} req/s asked, {:.0} done) \
         over {connections} connections; send lag behind schedule p99 {} us, max {} us",
        requests as f64 / seconds,
        nearest_rank(lags, 990),
        nearest_rank(lags, 1000),
    );
    // Percentiles are over the successful requests; errors make the exit status non-zero.
    println!(
        "url={url} requests={requests} errors={errors} p50_us={} p90_us={} p99_us={} p999_us={} max_us={}",
        nearest_rank(latencies, 500),
        nearest_rank(latencies, 900),
        nearest_rank(latencies, 990),
        nearest_rank(latencies, 999),
        nearest_rank(latencies, 1000),
    );
    Ok(errors == 0)
}

/// Nearest-rank percentile of sorted samples; `per_mille` 990 is p99.
fn nearest_rank(sorted: &[u32], per_mille: usize) -> u32 {
    let rank = (per_mille * sorted.len()).div_ceil(1000).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit_secs) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let value: f64 =
        number.parse().map_err(|_| format!("{text:?} is not a duration like 10s, 500ms or 1m"))?;
    Duration::try_from_secs_f64(value * unit_secs).map_err(|e| format!("{text:?}: {e}"))
}

fn tls_connector(ca_path: &str) -> Result<TlsConnector, BoxError> {
    let pem = std::fs::read(ca_path).map_err(|e| format!("--ca {ca_path}: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots
            .add(cert.map_err(|e| format!("--ca {ca_path}: {e}"))?)
            .map_err(|e| format!("--ca {ca_path}: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("--ca {ca_path}: no certificate in the file").into());
    }
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// One TLS connection with its HTTP/1.1 driver spawned on the current runtime.
async fn connect(target: &Target) -> Result<SendRequest<Full<Bytes>>, BoxError> {
    let tcp = tokio::net::TcpStream::connect(target.addr).await?;
    tcp.set_nodelay(true)?;
    let tls = target.tls.connect(target.server_name.clone(), tcp).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// When a connection thread sends: at `first`, `first + interval`, ... until `end`; only
/// sends from `measure_from` on are recorded.
#[derive(Clone, Copy)]
struct Schedule {
    first: Instant,
    interval: Duration,
    measure_from: Instant,
    end: Instant,
}

/// Runs one connection thread: each slot of `schedule` goes to the targets in turn, spread
/// evenly over the interval (target k at slot + k * interval / targets); one result per target.
fn drive(
    runtime: &Runtime,
    mut senders: Vec<SendRequest<Full<Bytes>>>,
    targets: &[Target],
    schedule: Schedule,
) -> Vec<ConnectionResult> {
    let mut results: Vec<ConnectionResult> = targets.iter().map(|_| ConnectionResult::default()).collect();
    let step = schedule.interval / u32::try_from(targets.len()).unwrap_or(1);
    let mut slot = schedule.first;
    while slot < schedule.end {
        for (k, ((sender, target), result)) in senders.iter_mut().zip(targets).zip(&mut results).enumerate() {
            let intended = slot + step * u32::try_from(k).unwrap_or(0);
            if let Some(wait) = intended.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let sent = Instant::now();
            let outcome = runtime.block_on(async {
                if sender.is_closed() {
                    *sender = connect(target).await?;
                }
                exchange(sender, target).await
            });
            let done = Instant::now();
            if intended >= schedule.measure_from {
                match outcome {
                    Ok(200) => {
                        result.latencies_us.push(micros(done - intended));
                        result.send_lags_us.push(micros(sent - intended));
                    }
                    Ok(status) => {
                        result.non_200 += 1;
                        result.last_bad_status = Some(status);
                    }
                    Err(error) => {
                        result.transport_errors += 1;
                        result.first_transport_error.get_or_insert_with(|| error.to_string());
                    }
                }
            }
        }
        slot += schedule.interval;
    }
    results
}

/// One POST; returns the status once the whole response body has arrived.
async fn exchange(sender: &mut SendRequest<Full<Bytes>>, target: &Target) -> Result<u16, BoxError> {
    sender.ready().await?;
    let request = http::Request::post(target.path.as_str())
        .header(http::header::HOST, target.host_header.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(target.body.clone()))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}

fn micros(duration: Duration) -> u32 {
    u32::try_from(duration.as_micros()).unwrap_or(u32::MAX)
}
