//! Leader election against kube-sim: one holder at a time; a released Lease is taken over
//! at once; an abandoned one after it expires.

mod common;

use std::time::Duration;

use common::{Sim, eventually};
use std::sync::Arc;

use eviction_autoscaler_controller::runtime::leader::{self, LeaseConfig, LeaseTimings};
use eviction_autoscaler_controller::runtime::write::WriteGate;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::sync::{oneshot, watch};

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

async fn contend(sim: &Sim, identity: &str) -> Contender {
    let api: Api<Lease> = Api::namespaced(sim.client().await, "default");
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
    let sim = Sim::start().await;
    let a = contend(&sim, "a").await;
    let b = contend(&sim, "b").await;
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
    let lease: Api<Lease> = Api::namespaced(sim.client().await, "default");
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
async fn an_abandoned_lease_is_taken_over_after_it_expires() {
    let sim = Sim::start().await;
    let crashed = contend(&sim, "crashed").await;
    eventually("first holder", Duration::from_secs(10), || async {
        (*crashed.leader.borrow()).then_some(())
    })
    .await;
    // A crash: no release.
    crashed.task.abort();
    let successor = contend(&sim, "successor").await;
    let started = tokio::time::Instant::now();
    eventually("successor leads", Duration::from_secs(15), || async {
        (*successor.leader.borrow()).then_some(())
    })
    .await;
    assert!(started.elapsed() >= Duration::from_secs(1), "waited for the lease to expire");
    let lease: Api<Lease> = Api::namespaced(sim.client().await, "default");
    let spec = lease.get("eviction-autoscaler").await.expect("lease").spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("successor"));
    assert_eq!(spec.lease_transitions, Some(1));
}
