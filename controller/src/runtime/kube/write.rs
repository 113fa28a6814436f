//! Every write the controller makes goes out here: [`writer`] wraps a kube client (a
//! `tower::service_fn` around it, so no call site can forget) and gives each PATCH, POST, PUT
//! or DELETE its turn under the client rate limit ([`RateLimit`], shared by every writer of
//! the process), a deadline ([`WRITE_TIMEOUT`]), counts it in `writes_total{kind,outcome}` and
//! — on the Lease holder's client — lets it out only through the [`WriteGate`]. Reads pass
//! untouched.
//!
//! The gate is open only while the Lease is surely ours — until shortly before it would run
//! out unrenewed — and closing it waits for the writes in flight. So once the Lease is given
//! away (shutdown) or lost (demotion, a process frozen past its Lease) no write of ours
//! starts, and none is still on its way. Writes any replica makes by design (eviction signals
//! on the EvictionAutoScaler, default PDBs at admission) use a writer without the gate.

use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use eviction_autoscaler_shared::config::Config;
use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::sync::{RwLock, watch};
use tokio::time::Instant;

use crate::error::{NotLeader, WriteTimedOut};
use crate::runtime::metrics::WriteLabel;

/// Longest one write may take: the evaluation that makes it has the same bound
/// (`EVALUATION_TIMEOUT`), and a write outside one (intake, admission, Events) gets it here.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(20);

/// See the module documentation.
#[derive(Debug, Default)]
pub struct WriteGate {
    /// Writes may start until then.
    open_until: Mutex<Option<Instant>>,
    /// Held shared by each write in flight; taken exclusively to wait for them all.
    in_flight: RwLock<()>,
}

impl WriteGate {
    /// A closed gate.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Lets writes start until `until` (each Lease renewal moves it on).
    pub fn open_until(&self, until: Instant) {
        *self.open_until.lock() = Some(until);
    }

    /// Refuses new writes, then waits until no write is in flight.
    pub async fn close(&self) {
        *self.open_until.lock() = None;
        drop(self.in_flight.write().await);
    }

    /// Whether a write could start now.
    pub fn is_open(&self) -> bool {
        self.open_until.lock().is_some_and(|until| Instant::now() < until)
    }

    /// A permit for one write, if the gate is open. Checked after joining the writes in
    /// flight, so `close` either refuses it or waits for it.
    async fn enter(&self) -> Option<tokio::sync::RwLockReadGuard<'_, ()>> {
        let permit = self.in_flight.read().await;
        self.is_open().then_some(permit)
    }
}

/// Writes the [`RateLimit`] never holds back: the Lease renewal that keeps us the holder, and
/// the scale writes (surges and reverts) a drain waits on — at most two per Deployment per
/// drain, never to be queued behind a bulk of default PDBs, EvictionAutoScalers and Events
/// (a cluster-wide install onto thousands of Deployments).
const UNLIMITED_KINDS: &[&str] = &["leases", "deployments", "horizontalpodautoscalers", "scaledobjects"];

/// client-go's token bucket (`flowcontrol.NewTokenBucketRateLimiter`): up to `burst` writes at
/// once, then `qps` per second, each in the order it asked. Both come from the configuration
/// as it is now, so a changed `--config` file applies without a restart. See
/// [`UNLIMITED_KINDS`] for what it never holds back.
#[derive(Debug)]
pub struct RateLimit {
    config: watch::Receiver<Arc<Config>>,
    /// Tokens left (negative: writes already promised a later turn), as of when. `None`: full.
    bucket: Mutex<Option<(f64, Instant)>>,
    /// Writes that had to wait for their turn.
    waited: Counter,
}

impl RateLimit {
    /// A full bucket sized by `config`; writes that wait are counted in `waited`.
    pub fn new(config: watch::Receiver<Arc<Config>>, waited: Counter) -> Arc<Self> {
        Arc::new(Self { config, bucket: Mutex::new(None), waited })
    }

    /// Waits for one write's turn.
    async fn acquire(&self) {
        let (qps, burst) = {
            let config = self.config.borrow();
            (config.kube_api_qps, f64::from(config.kube_api_burst))
        };
        let wait = {
            let mut bucket = self.bucket.lock();
            let now = Instant::now();
            let (tokens, at) = bucket.unwrap_or((burst, now));
            let tokens = (tokens + now.duration_since(at).as_secs_f64() * qps).min(burst) - 1.0;
            *bucket = Some((tokens, now));
            (tokens < 0.0).then(|| Duration::from_secs_f64(-tokens / qps))
        };
        if let Some(wait) = wait {
            self.waited.inc();
            tokio::time::sleep(wait).await;
        }
    }
}

/// `client` with every write taking its turn under `limit`, bounded, counted in `counts` and,
/// given a `gate`, let out only while it is open.
pub fn writer(
    client: Client,
    limit: Arc<RateLimit>,
    gate: Option<Arc<WriteGate>>,
    counts: Family<WriteLabel, Counter>,
) -> Client {
    let namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (client, limit, gate, counts) = (client.clone(), limit.clone(), gate.clone(), counts.clone());
        async move {
            if matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
                return client.send(request).await.map_err(tower::BoxError::from);
            }
            let mut count = Count { counts, kind: kind_of(request.uri().path()), outcome: "cancelled" };
            // Before the gate: a write waiting for its turn must not hold back closing it.
            if !UNLIMITED_KINDS.contains(&count.kind.as_str()) {
                limit.acquire().await;
            }
            // Held until the answer's headers arrive: by then the write has landed or not.
            let _permit = match &gate {
                Some(gate) => match gate.enter().await {
                    Some(permit) => Some(permit),
                    None => {
                        count.outcome = "not_leader";
                        return Err(NotLeader.into());
                    }
                },
                None => None,
            };
            let answer = tokio::time::timeout(WRITE_TIMEOUT, client.send(request)).await;
            count.outcome = outcome_of(&answer);
            match answer {
                Ok(answer) => answer.map_err(tower::BoxError::from),
                Err(_) => Err(WriteTimedOut(WRITE_TIMEOUT).into()),
            }
        }
    });
    Client::new(service, namespace)
}

/// Counts one write when dropped: with its outcome, or as `cancelled` if the caller gave up
/// on it (an evaluation timing out, a task ending) before it was answered.
struct Count {
    counts: Family<WriteLabel, Counter>,
    kind: String,
    outcome: &'static str,
}

impl Drop for Count {
    fn drop(&mut self) {
        let label = WriteLabel { kind: std::mem::take(&mut self.kind), outcome: self.outcome.to_owned() };
        self.counts.get_or_create(&label).inc();
    }
}

/// What a write's answer says, as the `outcome` label.
fn outcome_of(
    answer: &Result<Result<Response<Body>, kube::Error>, tokio::time::error::Elapsed>,
) -> &'static str {
    let Ok(answer) = answer else { return "timeout" };
    let Ok(response) = answer else { return "unreachable" };
    match response.status().as_u16() {
        200..=299 => "ok",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        422 => "invalid",
        429 => "throttled",
        500.. => "server_error",
        _ => "refused",
    }
}

/// The resource (and subresource) an API path names, as the `kind` label:
/// `/apis/apps/v1/namespaces/shop/deployments/web` → `deployments`,
/// `.../evictionautoscalers/web/status` → `evictionautoscalers/status`.
fn kind_of(path: &str) -> String {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] | ["apis", _, _version, rest @ ..] => rest,
        _ => return "other".into(),
    };
    let resource = match rest {
        ["namespaces", _namespace, resource @ ..] if !resource.is_empty() => resource,
        resource => resource,
    };
    match resource {
        [] => "other".into(),
        [kind] | [kind, _] => (*kind).to_owned(),
        [kind, _, sub, ..] => format!("{kind}/{sub}"),
    }
}

#[cfg(test)]
mod tests {
    use crate::error::is_not_leader;
    use std::time::Duration;

    use http::Response;
    use tokio::sync::{Semaphore, mpsc};

    use super::*;

    /// An API server stand-in that reports each request's method as it arrives and answers it
    /// only when `answers` hands out a permit.
    fn server() -> (Client, mpsc::UnboundedReceiver<Method>, Arc<Semaphore>) {
        let (seen, arrivals) = mpsc::unbounded_channel();
        let answers = Arc::new(Semaphore::new(0));
        let gate = answers.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let (seen, gate) = (seen.clone(), gate.clone());
            async move {
                let _ = seen.send(request.method().clone());
                gate.acquire().await?.forget();
                // The status the test asks for (`x-answer`), else 200.
                let status = request.headers().get("x-answer").and_then(|v| v.to_str().ok()?.parse().ok());
                let mut answer = Response::new(Body::from(b"{}".to_vec()));
                *answer.status_mut() = http::StatusCode::from_u16(status.unwrap_or(200))?;
                Ok::<_, tower::BoxError>(answer)
            }
        });
        (Client::new(service, "default"), arrivals, answers)
    }

    fn write() -> Request<Body> {
        Request::patch("/apis/apps/v1/namespaces/shop/deployments/web")
            .body(Body::from(b"{}".to_vec()))
            .unwrap()
    }

    fn read() -> Request<Body> {
        Request::get("/apis/apps/v1/namespaces/shop/deployments/web").body(Body::empty()).unwrap()
    }

    /// A limit of `qps` writes per second after a burst of `burst`, and its configuration.
    fn limit(qps: &str, burst: &str) -> (Arc<RateLimit>, watch::Sender<Arc<Config>>) {
        let args = eviction_autoscaler_shared::config::SettingsArgs {
            kube_api_qps: Some(qps.into()),
            kube_api_burst: Some(burst.into()),
            ..Default::default()
        };
        let (config, receiver) = watch::channel(Arc::new(Config::resolve(&args, None).unwrap()));
        (RateLimit::new(receiver, Counter::default()), config)
    }

    fn unlimited() -> Arc<RateLimit> {
        limit("1000000", "1000000").0
    }

    fn is_refused(result: Result<Response<Body>, kube::Error>) -> bool {
        result.is_err_and(|e| is_not_leader(&e))
    }

    #[tokio::test]
    async fn closing_waits_for_the_write_in_flight_and_refuses_every_later_one() {
        let (server, mut arrivals, answers) = server();
        let gate = WriteGate::new();
        let counts = Family::default();
        let client = writer(server, unlimited(), Some(gate.clone()), counts.clone());
        gate.open_until(Instant::now() + Duration::from_secs(60));

        let in_flight = tokio::spawn({
            let client = client.clone();
            async move { client.send(write()).await }
        });
        assert_eq!(arrivals.recv().await, Some(Method::PATCH), "an open gate lets the write out");
        let mut closing = std::pin::pin!(gate.close());
        assert!(futures::poll!(&mut closing).is_pending(), "close waits while the write is unanswered");
        assert!(!gate.is_open());

        answers.add_permits(1);
        assert!(in_flight.await.unwrap().is_ok(), "the write in flight completes");
        closing.await;

        assert!(is_refused(client.send(write()).await), "a write after close is refused");
        assert_eq!(counted(&counts, "deployments", "not_leader"), 1);
        assert_eq!(counted(&counts, "deployments", "ok"), 1);
        answers.add_permits(1);
        assert!(client.send(read()).await.is_ok(), "reads still pass");
        assert_eq!(arrivals.recv().await, Some(Method::GET));
        assert!(arrivals.try_recv().is_err(), "the refused write never reached the server");
    }

    #[tokio::test]
    async fn a_gate_past_its_lease_refuses_writes_before_anyone_closes_it() {
        // A process frozen past its Lease wakes with the gate still "open": the deadline the
        // last renewal set has passed, so nothing goes out before the leader task runs.
        let (server, mut arrivals, answers) = server();
        let gate = WriteGate::new();
        let client = writer(server, unlimited(), Some(gate.clone()), Family::default());
        assert!(is_refused(client.send(write()).await), "a new gate is closed");
        gate.open_until(Instant::now());
        assert!(is_refused(client.send(write()).await), "the deadline has passed");
        gate.open_until(Instant::now() + Duration::from_secs(60));
        answers.add_permits(1);
        assert!(client.send(write()).await.is_ok(), "renewed, writes go out");
        assert_eq!(arrivals.recv().await, Some(Method::PATCH));
        assert!(arrivals.try_recv().is_err(), "only the one allowed write arrived");
    }

    fn counted(counts: &Family<WriteLabel, Counter>, kind: &str, outcome: &str) -> u64 {
        counts.get_or_create(&WriteLabel { kind: kind.into(), outcome: outcome.into() }).get()
    }

    #[tokio::test(start_paused = true)]
    async fn every_write_is_counted_by_kind_and_outcome_and_bounded_in_time() {
        let (server, _arrivals, answers) = server();
        let counts = Family::default();
        let client = writer(server, unlimited(), None, counts.clone());
        answers.add_permits(2);
        let conflict = Request::patch("/apis/apps/v1/namespaces/shop/deployments/web")
            .header("x-answer", "409")
            .body(Body::from(b"{}".to_vec()))
            .unwrap();
        assert!(client.send(conflict).await.is_ok(), "the answer is the caller's to read");
        assert!(client.send(write()).await.is_ok());
        assert_eq!(counted(&counts, "deployments", "conflict"), 1);
        assert_eq!(counted(&counts, "deployments", "ok"), 1);

        // Unanswered: given up after WRITE_TIMEOUT (paused time jumps there).
        let started = Instant::now();
        let timed_out = client.send(write()).await.expect_err("no answer");
        assert!(matches!(&timed_out, kube::Error::Service(e) if e.is::<WriteTimedOut>()), "{timed_out}");
        assert_eq!(started.elapsed(), WRITE_TIMEOUT);
        assert_eq!(counted(&counts, "deployments", "timeout"), 1);

        // Dropped by its caller before an answer (an evaluation that timed out).
        let dropped = tokio::time::timeout(Duration::from_secs(1), client.send(write())).await;
        assert!(dropped.is_err());
        assert_eq!(counted(&counts, "deployments", "cancelled"), 1);
        assert_eq!(counted(&counts, "deployments", "not_leader"), 0, "no gate, nothing refused");
    }

    #[tokio::test(start_paused = true)]
    async fn writes_go_out_in_a_burst_then_at_the_configured_rate_and_leases_and_surges_never_wait() {
        let (server, mut arrivals, answers) = server();
        answers.add_permits(1000);
        let (limit, config) = limit("2", "3");
        let client = writer(server, limit.clone(), None, Family::default());
        let create_pdb = || {
            Request::post("/apis/policy/v1/namespaces/shop/poddisruptionbudgets")
                .body(Body::from(b"{}".to_vec()))
                .unwrap()
        };
        let started = Instant::now();
        let mut sent_at = Vec::new();
        for _ in 0..5 {
            client.send(create_pdb()).await.unwrap();
            sent_at.push(started.elapsed().as_millis());
        }
        assert_eq!(sent_at, [0, 0, 0, 500, 1000], "a burst of 3, then 2 per second");
        assert_eq!(limit.waited.get(), 2);

        // The bucket is empty now; a Lease renewal and a surge still go out at once, and
        // reads pass.
        let renew = Request::put("/apis/coordination.k8s.io/v1/namespaces/ns/leases/ea")
            .body(Body::from(b"{}".to_vec()))
            .unwrap();
        let before = Instant::now();
        client.send(renew).await.unwrap();
        client.send(write()).await.unwrap();
        client.send(read()).await.unwrap();
        assert_eq!(before.elapsed(), Duration::ZERO, "leases, scale writes and reads never wait");

        // A changed configuration applies to the next write.
        let faster = eviction_autoscaler_shared::config::SettingsArgs {
            kube_api_qps: Some("100".into()),
            kube_api_burst: Some("1".into()),
            ..Default::default()
        };
        config.send_replace(Arc::new(Config::resolve(&faster, None).unwrap()));
        tokio::time::advance(Duration::from_secs(1)).await;
        let before = Instant::now();
        for _ in 0..3 {
            client.send(create_pdb()).await.unwrap();
        }
        let took = before.elapsed();
        assert!(
            took >= Duration::from_millis(20) && took < Duration::from_millis(21),
            "one at once, then one per 10 ms: {took:?}"
        );
        while arrivals.try_recv().is_ok() {}
    }

    #[test]
    fn the_kind_is_the_resource_and_subresource_of_the_path() {
        let cases = [
            ("/apis/apps/v1/namespaces/shop/deployments/web", "deployments"),
            ("/apis/apps/v1/namespaces/shop/deployments/web/scale", "deployments/scale"),
            ("/api/v1/namespaces/shop/events", "events"),
            ("/api/v1/namespaces/shop/events/web.1a2b", "events"),
            ("/apis/policy/v1/namespaces/shop/poddisruptionbudgets", "poddisruptionbudgets"),
            (
                "/apis/eviction-autoscaler.azure.com/v1/namespaces/shop/evictionautoscalers/web/status",
                "evictionautoscalers/status",
            ),
            ("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ea", "leases"),
            ("/api/v1/namespaces/shop", "namespaces"),
            ("/api/v1/nodes/node-1", "nodes"),
            ("/healthz", "other"),
            ("/", "other"),
        ];
        for (path, kind) in cases {
            assert_eq!(kind_of(path), kind, "{path}");
        }
    }
}
