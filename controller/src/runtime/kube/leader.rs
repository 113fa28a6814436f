//! Leader election on a `coordination.k8s.io/v1` Lease, hand-rolled (kube has none and the
//! crates that do target older kube releases). Every update is a replace guarded by the
//! Lease's resourceVersion, so two replicas can never both win the same round. Only the
//! holder writes workloads; followers keep their caches warm and take over when the Lease
//! expires. The holder's writes pass a [`WriteGate`] open only while the Lease is surely ours;
//! on demotion and on shutdown the gate is closed, and the writes in flight awaited, before
//! anything else — so no write of ours starts once the Lease may be someone else's, and none
//! is still on its way when we release it. The Lease is released on shutdown so a successor
//! need not wait it out.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::write::WriteGate;

/// Lease timings (client-go's defaults are 15 s / 10 s / 2 s).
#[derive(Clone, Copy, Debug)]
pub struct LeaseTimings {
    /// How long a Lease stays valid without renewal.
    pub duration: Duration,
    /// How often the holder renews.
    pub renew_every: Duration,
    /// How often a follower tries to acquire.
    pub retry_every: Duration,
}

impl Default for LeaseTimings {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
            retry_every: Duration::from_secs(2),
        }
    }
}

/// Who we are and which Lease we contend for.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// Our identity (pod name plus a random suffix, so a restarted pod is a new holder).
    pub identity: String,
    /// Timings.
    pub timings: LeaseTimings,
}

/// What a look at the Lease tells us to do.
#[derive(Debug, PartialEq)]
enum Step {
    /// No Lease: create it with us as holder.
    Create,
    /// Ours: renew it.
    Renew,
    /// Someone else's and expired (or released): take it over.
    TakeOver,
    /// Someone else holds it.
    Follow,
}

fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX).max(1)
}

fn step(lease: Option<&Lease>, identity: &str, now: Timestamp) -> Step {
    let Some(lease) = lease else { return Step::Create };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.unwrap_or_default();
    if holder == identity {
        return Step::Renew;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    let renewed = spec.renew_time.map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let expiry = renewed.checked_add(jiff::SignedDuration::from_secs(duration)).unwrap_or(Timestamp::MAX);
    if holder.is_empty() || expiry <= now { Step::TakeOver } else { Step::Follow }
}

fn held_spec(
    previous: Option<&LeaseSpec>,
    identity: &str,
    timings: &LeaseTimings,
    now: Timestamp,
) -> LeaseSpec {
    let renewing = previous.is_some_and(|p| p.holder_identity.as_deref() == Some(identity));
    let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(seconds(timings.duration)),
        acquire_time: if renewing {
            previous.and_then(|p| p.acquire_time.clone())
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if renewing || previous.is_none() { transitions } else { transitions + 1 }),
        ..Default::default()
    }
}

/// One round: returns whether we hold the Lease afterwards.
async fn round(api: &Api<Lease>, config: &LeaseConfig) -> Result<bool, kube::Error> {
    let now = Timestamp::now();
    let current = api.get_opt(&config.name).await?;
    match step(current.as_ref(), &config.identity, now) {
        Step::Follow => Ok(false),
        Step::Create => {
            let mut lease = Lease::default();
            lease.metadata.name = Some(config.name.clone());
            lease.metadata.namespace = Some(config.namespace.clone());
            lease.spec = Some(held_spec(None, &config.identity, &config.timings, now));
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(e) if crate::error::is_already_exists(&e) => Ok(false),
                Err(e) => Err(e),
            }
        }
        Step::Renew | Step::TakeOver => {
            let Some(mut lease) = current else { return Ok(false) };
            lease.spec = Some(held_spec(lease.spec.as_ref(), &config.identity, &config.timings, now));
            // Replace carries metadata.resourceVersion: a concurrent taker gets 409 and loses.
            match api.replace(&config.name, &PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(e) if crate::error::is_conflict(&e) => Ok(false),
                Err(e) => Err(e),
            }
        }
    }
}

async fn release(api: &Api<Lease>, config: &LeaseConfig) {
    let Ok(Some(mut lease)) = api.get_opt(&config.name).await else { return };
    let Some(spec) = lease.spec.as_mut() else { return };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return;
    }
    // As client-go releases: no holder, shortest duration.
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    match api.replace(&config.name, &PostParams::default(), &lease).await {
        Ok(_) => info!(lease = %config.name, "released the leader lease"),
        Err(e) => warn!(lease = %config.name, error = %e, "could not release the leader lease"),
    }
}

/// Contends for the Lease until `shutdown`, publishing leadership on `leader` and opening
/// `gate` while holding; closes the gate, then releases the Lease, before returning.
pub async fn run(
    api: Api<Lease>,
    config: LeaseConfig,
    leader: watch::Sender<bool>,
    gate: Arc<WriteGate>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    // The Lease is surely ours until this long after the start of the round that renewed it.
    let sure_for = config.timings.duration.saturating_sub(config.timings.retry_every);
    let mut last_renewal: Option<Instant> = None;
    loop {
        let started = Instant::now();
        let holding = match round(&api, &config).await {
            Ok(held) => {
                last_renewal = held.then_some(started);
                held
            }
            Err(e) => {
                debug!(error = %e, "lease round failed");
                last_renewal.is_some_and(|t| t.elapsed() < sure_for)
            }
        };
        match (holding, last_renewal) {
            (true, Some(renewed)) => gate.open_until(renewed + sure_for),
            _ => gate.close().await,
        }
        if *leader.borrow() != holding {
            info!(identity = %config.identity, leader = holding, "leadership changed");
            leader.send_replace(holding);
        }
        let wait = if holding { config.timings.renew_every } else { config.timings.retry_every };
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    // Stop writing, and wait for the writes in flight, before giving the Lease away.
    leader.send_replace(false);
    gate.close().await;
    release(&api, &config).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed: i64, duration: i32) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed).unwrap_or(Timestamp::UNIX_EPOCH))),
                lease_duration_seconds: Some(duration),
                lease_transitions: Some(3),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn lease_steps() {
        let now = Timestamp::from_second(1000).unwrap_or(Timestamp::UNIX_EPOCH);
        let cases = [
            ("no lease", None, Step::Create),
            ("ours", Some(lease(Some("me"), 999, 15)), Step::Renew),
            ("theirs, fresh", Some(lease(Some("you"), 990, 15)), Step::Follow),
            ("theirs, expired", Some(lease(Some("you"), 980, 15)), Step::TakeOver),
            ("released", Some(lease(None, 999, 1)), Step::TakeOver),
        ];
        for (name, l, want) in cases {
            assert_eq!(step(l.as_ref(), "me", now), want, "{name}");
        }
    }

    #[test]
    fn takeover_counts_a_transition_and_renewal_does_not() {
        let now = Timestamp::from_second(1000).unwrap_or(Timestamp::UNIX_EPOCH);
        let t = LeaseTimings::default();
        let theirs = lease(Some("you"), 980, 15).spec;
        assert_eq!(held_spec(theirs.as_ref(), "me", &t, now).lease_transitions, Some(4));
        let ours = lease(Some("me"), 999, 15).spec;
        assert_eq!(held_spec(ours.as_ref(), "me", &t, now).lease_transitions, Some(3));
        assert_eq!(held_spec(None, "me", &t, now).lease_duration_seconds, Some(15));
    }
}
