//! Leader election: one holder at a time; a released Lease is taken over at once; an
//! abandoned one only once it has expired.

use std::sync::Arc;
use std::time::Duration;

use e2e_support::apiserver::ApiServer;

use eviction_autoscaler_controller::runtime::kube::leader::{self, LeaseConfig, LeaseTimings};
use eviction_autoscaler_controller::runtime::kube::write::WriteGate;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::sync::{oneshot, watch};

use crate::common::{apiserver, eventually};

const TIMINGS: LeaseTimings = LeaseTimings {
    duration: Duration::from_secs(3),
    renew_every: Duration::from_millis(500),
    retry_every: Duration::from_millis(200),
};

struct Contender {
    leader: watch::Receiver<bool>,
    gate: Arc<WriteGate>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn contend(apiserver: &ApiServer, identity: &str) -> Contender {
    let api: Api<Lease> = Api::namespaced(apiserver.client_under_test().await, "default");
    let config = LeaseConfig {
        namespace: "default".into(),
        name: "eviction-autoscaler".into(),
        identity: identity.into(),
        timings: TIMINGS,
    };
    let (tx, leader) = watch::channel(false);
    let (stop, stopped) = oneshot::channel::<()>();
    let gate = WriteGate::new();
    let task = tokio::spawn(leader::run(api, config, tx, gate.clone(), async move {
        let _ = stopped.await;
    }));
    Contender { leader, gate, stop: Some(stop), task }
}

/// How many lead; each one's write gate is open exactly while it leads.
fn holders(a: &Contender, b: &Contender) -> usize {
    for c in [a, b] {
        assert_eq!(c.gate.is_open(), *c.leader.borrow(), "the write gate is open while leading, only then");
    }
    usize::from(*a.leader.borrow()) + usize::from(*b.leader.borrow())
}

#[tokio::test]
async fn one_holder_and_a_released_lease_is_taken_over_quickly() {
    let apiserver = apiserver().await;
    let a = contend(&apiserver, "a").await;
    let b = contend(&apiserver, "b").await;
    eventually("someone leads", Duration::from_secs(10), || async { (holders(&a, &b) == 1).then_some(()) })
        .await;
    // Several renew periods later there is still exactly one holder.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(holders(&a, &b), 1, "exactly one holder");
    }
    let (mut holder, mut other, holder_name) = if *a.leader.borrow() { (a, b, "a") } else { (b, a, "b") };
    if let Some(stop) = holder.stop.take() {
        let _ = stop.send(());
    }
    tokio::time::timeout(Duration::from_secs(5), &mut holder.task)
        .await
        .expect("holder stops")
        .expect("no panic");
    assert!(!*holder.leader.borrow(), "a stopped holder no longer leads");
    assert!(!holder.gate.is_open(), "nor writes");
    let lease: Api<Lease> = Api::namespaced(apiserver.client().await, "default");
    let released = lease.get("eviction-autoscaler").await.expect("lease");
    // Released: empty, or already the other's (it retries every 200 ms). Not released, it
    // would still name the stopped holder, whose last renewal is well within the 3 s duration.
    let now_held_by = released.spec.and_then(|s| s.holder_identity);
    assert_ne!(now_held_by.as_deref(), Some(holder_name), "released on shutdown");
    // Released: taken over on the next retry, well before the 3 s duration.
    let started = tokio::time::Instant::now();
    eventually("the other takes over", Duration::from_secs(10), || async {
        (*other.leader.borrow()).then_some(())
    })
    .await;
    assert!(started.elapsed() < TIMINGS.duration, "no need to wait out a released lease");
    if let Some(stop) = other.stop.take() {
        let _ = stop.send(());
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), other.task).await;
}

#[tokio::test]
async fn an_abandoned_lease_is_taken_over_only_once_it_has_expired() {
    let apiserver = apiserver().await;
    let crashed = contend(&apiserver, "crashed").await;
    eventually("first holder", Duration::from_secs(10), || async {
        (*crashed.leader.borrow()).then_some(())
    })
    .await;
    // A crash: no release.
    crashed.task.abort();
    let leases: Api<Lease> = Api::namespaced(apiserver.client().await, "default");
    // Its last renewal (one still on its way when the task stopped would only move the expiry
    // later, so the check below stays sound).
    let abandoned = leases.get("eviction-autoscaler").await.expect("lease").spec.expect("spec");
    assert_eq!(abandoned.holder_identity.as_deref(), Some("crashed"));
    let last_renewal = abandoned.renew_time.expect("renewed").0;

    let successor = contend(&apiserver, "successor").await;
    eventually("successor leads", Duration::from_secs(15), || async {
        (*successor.leader.borrow()).then_some(())
    })
    .await;
    let spec = leases.get("eviction-autoscaler").await.expect("lease").spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("successor"));
    assert_eq!(spec.lease_transitions, Some(1));
    let acquired = spec.acquire_time.expect("acquired").0;
    let expiry = last_renewal + jiff::SignedDuration::try_from(TIMINGS.duration).expect("a duration");
    assert!(acquired >= expiry, "taken over at {acquired}, before the abandoned Lease expired at {expiry}");
}
