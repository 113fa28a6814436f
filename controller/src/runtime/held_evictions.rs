//! The evictions this replica's webhook holds, per PDB, in arrival order ([`crate::eviction_hold`] says
//! which to hold and how many a budget lets through). Each is answered exactly once: when its
//! budget opens, when it expires, when it is shed or stopped, or at shutdown; an answer the
//! webhook stopped waiting for is dropped on the next look.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use eviction_autoscaler_shared::admission::{EvictionHold, HoldEnd};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

use super::queue::ObjectKey;
use crate::displaced::accepted_evictions;
use crate::eviction_hold::open_slots;

/// Most evictions held at once by one replica for requesters API Priority and Fairness limits.
/// A held eviction keeps its seat in the requester's priority level: a person's `kubectl drain`
/// runs in `global-default`, about 49 of a default apiserver's 600 seats (20 of 245 shares).
/// Two replicas hold at most 2 × 12 = 24 of them, half the level, so the drainer's own reads
/// and everyone else in it keep the other half. Service accounts (cluster-autoscaler in
/// `workload-high`, Karpenter in `workload-low`) have far larger levels.
pub const HELD_PER_REPLICA: usize = 12;

/// Most evictions held at once for `system:masters`, which APF exempts: bounded only by what a
/// replica should keep open (one task and one HTTP/2 stream each).
pub const HELD_EXEMPT_PER_REPLICA: usize = 256;

/// How long an eviction let through counts against its budget before the PDB's
/// `disruptedPods` shows it (the apiserver writes both in one update, so this only covers a
/// lagging watch or an eviction that failed for another reason).
const IN_FLIGHT_FOR: Duration = Duration::from_secs(5);

/// One held eviction.
#[derive(Debug)]
struct Held {
    id: u64,
    pod: String,
    deployment: ObjectKey,
    exempt: bool,
    answer: tokio::sync::oneshot::Sender<HoldEnd>,
}

/// The evictions held for one PDB, and those let through that its status does not show yet.
#[derive(Debug, Default)]
struct PdbHolds {
    waiting: VecDeque<Held>,
    let_through: Vec<(String, Instant)>,
}

impl PdbHolds {
    /// Lets through as many as `pdb` allows now, first come first served.
    fn release(&mut self, pdb: &PodDisruptionBudget, now: Instant) {
        let accepted = accepted_evictions(std::slice::from_ref(pdb));
        self.let_through
            .retain(|(pod, at)| !accepted.contains(pod) && now.duration_since(*at) < IN_FLIGHT_FOR);
        self.waiting.retain(|h| !h.answer.is_closed());
        for _ in 0..open_slots(pdb, self.let_through.len()).min(self.waiting.len()) {
            let Some(held) = self.waiting.pop_front() else { break };
            self.let_through.push((held.pod, now));
            let _ = held.answer.send(HoldEnd::Opened);
        }
    }
}

/// Held evictions by PDB.
#[derive(Debug, Default)]
pub struct HeldEvictions {
    inner: Mutex<Inner>,
    /// `webhook_evictions_holding`: set under the lock, where the cap is kept.
    holding: Gauge,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    by_pdb: HashMap<ObjectKey, PdbHolds>,
    /// Shutting down: nothing more is held.
    shut: bool,
}

impl Inner {
    fn held(&self, exempt: bool) -> usize {
        let waiting = self.by_pdb.values().flat_map(|p| p.waiting.iter());
        waiting.filter(|h| h.exempt == exempt && !h.answer.is_closed()).count()
    }

    fn forget_empty(&mut self) {
        self.by_pdb.retain(|_, p| !p.waiting.is_empty() || !p.let_through.is_empty());
    }
}

impl HeldEvictions {
    /// No eviction held yet; `holding` counts them from now on.
    pub fn new(holding: Gauge) -> Self {
        Self { inner: Mutex::default(), holding }
    }

    /// Ends a change: forgets emptied PDBs and publishes the count.
    fn settle(&self, inner: &mut Inner) {
        inner.forget_empty();
        self.holding.set((inner.held(true) + inner.held(false)) as i64);
    }

    /// Holds the eviction of `pod` of `deployment` until `pdb` (as cached now) opens; answered
    /// at once if the budget is open already, or [`HoldEnd::Shed`] over the replica's cap.
    /// Returns the hold's id while it waits, for [`HeldEvictions::expire`].
    pub fn hold(
        &self,
        pdb: &PodDisruptionBudget,
        deployment: ObjectKey,
        pod: String,
        hold: EvictionHold,
    ) -> Option<u64> {
        let key = pdb_key(pdb)?;
        let mut inner = self.inner.lock();
        if inner.shut {
            let _ = hold.answer.send(HoldEnd::Shutdown);
            return None;
        }
        let cap = if hold.exempt { HELD_EXEMPT_PER_REPLICA } else { HELD_PER_REPLICA };
        if inner.held(hold.exempt) >= cap {
            let _ = hold.answer.send(HoldEnd::Shed);
            return None;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let holds = inner.by_pdb.entry(key).or_default();
        holds.waiting.push_back(Held { id, pod, deployment, exempt: hold.exempt, answer: hold.answer });
        holds.release(pdb, Instant::now());
        let waiting = holds.waiting.iter().any(|h| h.id == id);
        self.settle(&mut inner);
        waiting.then_some(id)
    }

    /// `pdb` changed (a watch event): lets through what it allows now.
    pub fn pdb_changed(&self, pdb: &PodDisruptionBudget) {
        let Some(key) = pdb_key(pdb) else { return };
        let mut inner = self.inner.lock();
        if let Some(holds) = inner.by_pdb.get_mut(&key) {
            holds.release(pdb, Instant::now());
            self.settle(&mut inner);
        }
    }

    /// The hold `id` on PDB `pdb` ran out: answered [`HoldEnd::Expired`]. Returns the
    /// Deployment and pod it was for, if it was still waiting.
    pub fn expire(&self, pdb: &ObjectKey, id: u64) -> Option<(ObjectKey, String)> {
        let mut inner = self.inner.lock();
        let holds = inner.by_pdb.get_mut(pdb)?;
        let at = holds.waiting.iter().position(|h| h.id == id)?;
        let held = holds.waiting.remove(at)?;
        self.settle(&mut inner);
        // Reported even when the webhook gave up at the same moment (the call's deadline).
        let _ = held.answer.send(HoldEnd::Expired);
        Some((held.deployment, held.pod))
    }

    /// The surge cannot help the evictions held on `pdb` any more: answered [`HoldEnd::Stopped`].
    pub fn stop(&self, pdb: &ObjectKey) {
        let mut inner = self.inner.lock();
        if let Some(holds) = inner.by_pdb.get_mut(pdb) {
            for held in holds.waiting.drain(..) {
                let _ = held.answer.send(HoldEnd::Stopped);
            }
            self.settle(&mut inner);
        }
    }

    /// Answers every held eviction with `end` (shutdown, lost caches, holding turned off).
    pub fn answer_all(&self, end: HoldEnd) {
        let mut inner = self.inner.lock();
        for held in inner.by_pdb.values_mut().flat_map(|p| p.waiting.drain(..)) {
            let _ = held.answer.send(end);
        }
        self.settle(&mut inner);
    }

    /// Shutting down: answers every held eviction [`HoldEnd::Shutdown`], and any hold asked
    /// for later at once, so none outlives the controller.
    pub fn shut(&self) {
        self.inner.lock().shut = true;
        self.answer_all(HoldEnd::Shutdown);
    }
}

fn pdb_key(pdb: &PodDisruptionBudget) -> Option<ObjectKey> {
    Some((pdb.metadata.namespace.clone()?, pdb.metadata.name.clone()?))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use tokio::sync::oneshot;

    use super::*;

    fn pdb(allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.namespace = Some("shop".into());
        pdb.metadata.name = Some("web".into());
        pdb.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            disrupted_pods: Some(
                disrupted.iter().map(|p| ((*p).to_owned(), Time(jiff::Timestamp::UNIX_EPOCH))).collect(),
            ),
            ..PodDisruptionBudgetStatus::default()
        });
        pdb
    }

    fn ticket(exempt: bool) -> (EvictionHold, oneshot::Receiver<HoldEnd>) {
        let (answer, answered) = oneshot::channel();
        (EvictionHold { answer_by: Instant::now() + Duration::from_secs(10), exempt, answer }, answered)
    }

    fn hold(
        holds: &HeldEvictions,
        budget: &PodDisruptionBudget,
        pod: &str,
    ) -> (Option<u64>, oneshot::Receiver<HoldEnd>) {
        let (hold, answered) = ticket(true);
        (holds.hold(budget, ("shop".into(), "web".into()), pod.into(), hold), answered)
    }

    #[tokio::test]
    async fn held_evictions_pass_as_the_budget_opens_one_per_disruption_first_come_first_served() {
        let holds = HeldEvictions::default();
        let (_, mut a) = hold(&holds, &pdb(0, &[]), "a");
        let (_, mut b) = hold(&holds, &pdb(0, &[]), "b");
        assert_eq!(holds.holding.get(), 2);
        holds.pdb_changed(&pdb(1, &[]));
        assert_eq!(a.try_recv(), Ok(HoldEnd::Opened), "the first to come");
        assert!(b.try_recv().is_err(), "one disruption allowed, one let through");
        holds.pdb_changed(&pdb(1, &[]));
        assert!(b.try_recv().is_err(), "a's eviction is on its way: the same opening is not spent twice");
        holds.pdb_changed(&pdb(0, &["a"]));
        assert!(b.try_recv().is_err(), "a's eviction used the budget");
        holds.pdb_changed(&pdb(1, &["a"]));
        assert_eq!(b.try_recv(), Ok(HoldEnd::Opened), "the next opening");
        assert_eq!(holds.holding.get(), 0);
    }

    #[tokio::test]
    async fn an_open_budget_answers_at_once_and_each_hold_is_answered_once() {
        let holds = HeldEvictions::default();
        let (id, mut a) = hold(&holds, &pdb(1, &[]), "a");
        assert_eq!((id, a.try_recv()), (None, Ok(HoldEnd::Opened)));
        assert_eq!(holds.holding.get(), 0, "answered at once, never counted as held");
        let (id, mut b) = hold(&holds, &pdb(0, &[]), "b");
        let id = id.expect("waiting");
        assert_eq!(
            holds.expire(&("shop".into(), "web".into()), id),
            Some((("shop".into(), "web".into()), "b".into()))
        );
        assert_eq!(b.try_recv(), Ok(HoldEnd::Expired));
        assert_eq!(holds.expire(&("shop".into(), "web".into()), id), None, "answered already");
    }

    #[tokio::test]
    async fn past_the_cap_evictions_are_shed_and_exempt_requesters_have_their_own() {
        let holds = HeldEvictions::default();
        let mut waiting = Vec::new();
        for n in 0..HELD_PER_REPLICA {
            let (hold, answered) = ticket(false);
            assert!(holds.hold(&pdb(0, &[]), ("shop".into(), "web".into()), format!("p{n}"), hold).is_some());
            waiting.push(answered);
        }
        let (over, mut shed) = ticket(false);
        assert_eq!(holds.hold(&pdb(0, &[]), ("shop".into(), "web".into()), "over".into(), over), None);
        assert_eq!(shed.try_recv(), Ok(HoldEnd::Shed));
        assert_eq!(holds.holding.get(), HELD_PER_REPLICA as i64, "the shed one never counted as held");
        let (admin, _admin_answer) = ticket(true);
        assert!(holds.hold(&pdb(0, &[]), ("shop".into(), "web".into()), "admin".into(), admin).is_some());
        assert_eq!(holds.holding.get(), HELD_PER_REPLICA as i64 + 1);

        drop(waiting.pop()); // the webhook stopped waiting for one: its seat is free again
        let (next, _next_answer) = ticket(false);
        assert!(holds.hold(&pdb(0, &[]), ("shop".into(), "web".into()), "next".into(), next).is_some());
        assert_eq!(holds.holding.get(), HELD_PER_REPLICA as i64 + 1);
    }

    #[tokio::test]
    async fn stop_and_shutdown_answer_everything_waiting() {
        let holds = HeldEvictions::default();
        let (_, mut a) = hold(&holds, &pdb(0, &[]), "a");
        holds.stop(&("shop".into(), "web".into()));
        assert_eq!(a.try_recv(), Ok(HoldEnd::Stopped));
        let (_, mut b) = hold(&holds, &pdb(0, &[]), "b");
        holds.shut();
        assert_eq!(b.try_recv(), Ok(HoldEnd::Shutdown));
        assert_eq!(holds.holding.get(), 0);
        // A signal still in intake when the process began shutting down holds nothing: else
        // it would keep the webhook (and the process) waiting, and report its expiry after the
        // Lease was released.
        let (late, mut c) = hold(&holds, &pdb(0, &[]), "c");
        assert_eq!((late, c.try_recv()), (None, Ok(HoldEnd::Shutdown)));
        assert_eq!(holds.holding.get(), 0);
    }
}
