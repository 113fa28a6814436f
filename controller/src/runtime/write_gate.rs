//! The Lease holder's write gate. Every write the holder makes goes through a client guarded
//! by it ([`WriteGate::guard`]); the gate is open only while the Lease is surely ours — until
//! shortly before it would run out unrenewed — and closing it waits for the writes in flight.
//! So once the Lease is given away (shutdown) or lost (demotion, a process frozen past its
//! Lease) no write of ours starts, and none is still on its way. Reads always pass. Writes any
//! replica makes by design (eviction signals on the EvictionAutoScaler, default PDBs at
//! admission) use the unguarded client.

use std::sync::{Arc, Mutex};

use http::{Method, Request};
use kube::Client;
use kube::client::Body;
use tokio::sync::RwLock;
use tokio::time::Instant;

/// A write refused by the gate: it was never sent.
#[derive(Debug, thiserror::Error)]
#[error("not the Lease holder: the write was not sent")]
pub struct NotLeader;

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
        *self.lock() = Some(until);
    }

    /// Refuses new writes, then waits until no write is in flight.
    pub async fn close(&self) {
        *self.lock() = None;
        drop(self.in_flight.write().await);
    }

    /// Whether a write could start now.
    pub fn is_open(&self) -> bool {
        self.lock().is_some_and(|until| Instant::now() < until)
    }

    /// A client that sends reads as `client` does and writes only while the gate is open.
    pub fn guard(self: &Arc<Self>, client: Client) -> Client {
        let namespace = client.default_namespace().to_owned();
        let gate = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let (gate, client) = (gate.clone(), client.clone());
            async move {
                let writes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
                // Held until the answer's headers arrive: by then the write has landed or not.
                let _permit = match writes {
                    true => Some(gate.enter().await.ok_or(NotLeader)?),
                    false => None,
                };
                client.send(request).await.map_err(tower::BoxError::from)
            }
        });
        Client::new(service, namespace)
    }

    /// A permit for one write, if the gate is open. Checked after joining the writes in
    /// flight, so `close` either refuses it or waits for it.
    async fn enter(&self) -> Option<tokio::sync::RwLockReadGuard<'_, ()>> {
        let permit = self.in_flight.read().await;
        self.is_open().then_some(permit)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.open_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `e` is a write the gate refused.
pub fn is_not_leader(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.is::<NotLeader>())
}

#[cfg(test)]
mod tests {
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
                Ok::<_, tower::BoxError>(Response::new(Body::from(b"{}".to_vec())))
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

    fn is_refused(result: Result<Response<Body>, kube::Error>) -> bool {
        result.is_err_and(|e| is_not_leader(&e))
    }

    #[tokio::test]
    async fn closing_waits_for_the_write_in_flight_and_refuses_every_later_one() {
        let (server, mut arrivals, answers) = server();
        let gate = WriteGate::new();
        let client = gate.guard(server);
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
        let client = gate.guard(server);
        assert!(is_refused(client.send(write()).await), "a new gate is closed");
        gate.open_until(Instant::now());
        assert!(is_refused(client.send(write()).await), "the deadline has passed");
        gate.open_until(Instant::now() + Duration::from_secs(60));
        answers.add_permits(1);
        assert!(client.send(write()).await.is_ok(), "renewed, writes go out");
        assert_eq!(arrivals.recv().await, Some(Method::PATCH));
        assert!(arrivals.try_recv().is_err(), "only the one allowed write arrived");
    }
}
