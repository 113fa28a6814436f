//! What the surge reconciler remembers about each Deployment between evaluations: signals,
//! the hold anchor, the 403 pause, what it last reported, the EAS statuses it wrote. Nothing here is needed for
//! correctness after a restart: the surge state is on the scaled object.
//!
//! Intake records signals; an evaluation reads a [`Recalled`] copy (observing changes
//! nothing) and the reconciler records its result.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use eviction_autoscaler_shared::crd::EvictionAutoScalerStatus;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::displaced::{SignaledPod, accepted_evictions};
use crate::runtime::queue::{ObjectKey, shrink_if_sparse};

/// One Deployment's memory.
#[derive(Debug, Default)]
struct Entry {
    /// Recent eviction signals for its pods.
    signals: Vec<SignaledPod>,
    /// Signals recorded so far, and how many of them an evaluation has seen.
    recorded: u64,
    seen: u64,
    /// When the current episode's first trigger came — a blocking signal, or the drain edge of
    /// a node it has pods on — for the trigger-to-scale latency.
    first_trigger: Option<Instant>,
    /// When an active surge was first seen without any known signal (hold anchor).
    resumed_at: Option<Timestamp>,
    /// A 403 on our write: its message, and when to try writing again.
    forbidden: Option<(String, Timestamp)>,
    /// Whether a surge was active after the last evaluation.
    surged: bool,
    /// A surge is up although its last signal is older than max-hold + cooldown.
    overdue: bool,
    /// When a surge last ended by `--max-hold`: pods left on a forgotten cordon no longer
    /// count as displaced (only new evictions do), or it would surge and expire forever.
    expired_at: Option<Timestamp>,
    /// Our last write lost to another writer (409): the caches were behind, so the next
    /// evaluation decides from fresh reads.
    conflicted: bool,
}

impl Entry {
    /// Nothing worth keeping: no signal (seen or not), episode, pause, surge or expiry.
    fn is_empty(&self) -> bool {
        self.signals.is_empty()
            && self.recorded == self.seen
            && self.first_trigger.is_none()
            && self.resumed_at.is_none()
            && self.forbidden.is_none()
            && !self.surged
            && !self.overdue
            && self.expired_at.is_none()
            && !self.conflicted
    }

    fn paused_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.forbidden.as_ref().map(|(_, until)| *until).filter(|until| *until > now)
    }
}

/// An evaluation's copy of one Deployment's memory, as of `now`.
#[derive(Clone, Debug, Default)]
pub struct Recalled {
    /// Signals within the horizon.
    pub signals: Vec<SignaledPod>,
    /// A signal arrived that no evaluation has seen yet.
    pub new_signal: bool,
    /// How many signals were recorded (marks them seen: [`SurgeMemory::signals_seen`]).
    pub recorded: u64,
    /// The hold anchor of a surge resumed without a signal.
    pub resumed_at: Option<Timestamp>,
    /// The message of a 403 whose pause has not ended.
    pub forbidden: Option<String>,
    /// When the last surge ended by `--max-hold`, while some node still drains.
    pub expired_at: Option<Timestamp>,
}

/// The evaluation's result the memory keeps.
#[derive(Clone, Copy, Debug)]
pub struct Evaluated {
    /// A surge is active now.
    pub surged: bool,
    /// No surge is needed (or allowed) now: a trigger so far led to none.
    pub settled: bool,
    /// The surge ended by `--max-hold` now.
    pub expired: bool,
    /// Some node is draining.
    pub any_draining: bool,
    /// When the evaluation began: a trigger after it was not seen by it.
    pub began: Instant,
}

/// Every Deployment's memory.
#[derive(Debug, Default)]
pub struct SurgeMemory(Mutex<HashMap<ObjectKey, Entry>>);

impl SurgeMemory {
    /// Runs `f` on the entry of `key`; an entry left with nothing to remember is dropped, so
    /// the memory holds only Deployments with signals or surges, not every one evaluated.
    fn with<R>(&self, key: &ObjectKey, f: impl FnOnce(&mut Entry) -> R) -> R {
        let mut memory = self.0.lock();
        let entry = memory.entry(key.clone()).or_default();
        let result = f(entry);
        if entry.is_empty() {
            memory.remove(key);
            shrink_if_sparse(&mut memory);
        }
        result
    }

    /// Records a signal unless already known (the same pod at the same second); `blocking`:
    /// its eviction was refused by a budget, a trigger (see [`Self::triggered`]).
    pub fn record_signal(&self, key: &ObjectKey, signal: SignaledPod, blocking: bool) -> bool {
        self.with(key, |m| {
            if m.signals.iter().any(|s| s.pod == signal.pod && s.at.as_second() == signal.at.as_second()) {
                return false;
            }
            if blocking && signal.displaceable {
                m.first_trigger.get_or_insert_with(Instant::now);
            }
            m.signals.push(signal);
            m.recorded += 1;
            true
        })
    }

    /// Whether this signal is known (see [`Self::record_signal`]).
    pub fn knows_signal(&self, key: &ObjectKey, pod: &str, at: Timestamp) -> bool {
        self.0
            .lock()
            .get(key)
            .is_some_and(|m| m.signals.iter().any(|s| s.pod == pod && s.at.as_second() == at.as_second()))
    }

    /// A copy of what is remembered of `key` that still holds at `now`: signals within
    /// `horizon`, a pause not yet over, an expiry while some node still drains.
    pub fn recall(
        &self,
        key: &ObjectKey,
        now: Timestamp,
        horizon: SignedDuration,
        any_draining: bool,
    ) -> Recalled {
        let memory = self.0.lock();
        let Some(m) = memory.get(key) else { return Recalled::default() };
        Recalled {
            signals: m.signals.iter().filter(|s| now.duration_since(s.at) <= horizon).cloned().collect(),
            new_signal: m.recorded > m.seen,
            recorded: m.recorded,
            resumed_at: m.resumed_at,
            forbidden: m.forbidden.as_ref().filter(|(_, until)| *until > now).map(|(msg, _)| msg.clone()),
            expired_at: m.expired_at.filter(|_| any_draining),
        }
    }

    /// The signals counted in `recalled` were seen by an evaluation that reported on them.
    pub fn signals_seen(&self, key: &ObjectKey, recalled: &Recalled) -> u64 {
        self.with(key, |m| {
            let newly = recalled.recorded.saturating_sub(m.seen);
            m.seen = m.seen.max(recalled.recorded);
            newly
        })
    }

    /// A surge found active with no signal known holds from `at` (so max-hold bounds it).
    pub fn resumed(&self, key: &ObjectKey, at: Timestamp) {
        self.with(key, |m| m.resumed_at = Some(at));
    }

    /// A write was refused with 403: no write for `key` until `until`.
    pub fn forbid(&self, key: &ObjectKey, message: String, until: Timestamp) {
        self.with(key, |m| m.forbidden = Some((message, until)));
    }

    /// When the 403 pause of `key` ends, if one is on at `now`.
    pub fn pause_end(&self, key: &ObjectKey, now: Timestamp) -> Option<Timestamp> {
        self.0.lock().get(key).and_then(|m| m.paused_until(now))
    }

    /// Whether the surge of `key` is overdue (for the gauge).
    pub fn set_overdue(&self, key: &ObjectKey, overdue: bool) {
        self.with(key, |m| m.overdue = overdue);
    }

    /// Something that may call for a surge of `key` happened `at` (a node it has pods on
    /// started draining): the latency is measured from the first such moment of an episode.
    pub fn triggered(&self, key: &ObjectKey, at: Instant) {
        self.with(key, |m| {
            m.first_trigger.get_or_insert(at);
        });
    }

    /// Ends the latency measurement of `key`: when its episode's first trigger came.
    pub fn take_first_trigger(&self, key: &ObjectKey) -> Option<Instant> {
        self.with(key, |m| m.first_trigger.take())
    }

    /// Our write to `key` was refused with 409: decide from fresh reads next time.
    pub fn conflicted(&self, key: &ObjectKey) {
        self.with(key, |m| m.conflicted = true);
    }

    /// Whether the last write to `key` lost to another writer and no evaluation has
    /// completed since.
    pub fn after_conflict(&self, key: &ObjectKey) -> bool {
        self.0.lock().get(key).is_some_and(|m| m.conflicted)
    }

    /// Keeps an evaluation's result, and drops what no longer holds at `now`.
    pub fn evaluated(&self, key: &ObjectKey, result: Evaluated, now: Timestamp, horizon: SignedDuration) {
        self.with(key, |m| {
            m.conflicted = false;
            m.signals.retain(|s| now.duration_since(s.at) <= horizon);
            if m.paused_until(now).is_none() {
                m.forbidden = None;
            }
            m.surged = result.surged;
            if !result.surged {
                m.resumed_at = None;
            }
            if result.settled && m.first_trigger.is_some_and(|at| at <= result.began) {
                // Else a drain that needed no surge would date the next episode's latency. A
                // trigger that came while this evaluation ran is the next evaluation's to judge.
                m.first_trigger = None;
            }
            if result.expired {
                m.expired_at = Some(now);
            } else if !result.any_draining {
                m.expired_at = None;
            }
        });
    }

    /// Forgets a deleted Deployment.
    pub fn forget(&self, key: &ObjectKey) {
        let mut memory = self.0.lock();
        memory.remove(key);
        shrink_if_sparse(&mut memory);
    }

    /// This replica stopped writing: the surges it counted are the next holder's to report.
    pub fn forget_surges(&self) {
        for m in self.0.lock().values_mut() {
            m.surged = false;
            m.overdue = false;
        }
    }

    /// How many Deployments are surged, and how many of those overdue.
    pub fn counts(&self) -> (usize, usize) {
        let memory = self.0.lock();
        (memory.values().filter(|m| m.surged).count(), memory.values().filter(|m| m.overdue).count())
    }

    /// Deployments surged at their last evaluation.
    pub fn surged_keys(&self) -> Vec<ObjectKey> {
        self.0.lock().iter().filter(|(_, m)| m.surged).map(|(k, _)| k.clone()).collect()
    }
}

/// How long a pod seen in a PDB's `disruptedPods` still counts as evicted: longer than a
/// draining node's pod listing is reused (2 s) plus the moments an evaluation takes.
const ACCEPTED_FOR: Duration = Duration::from_secs(10);

/// Pods whose eviction the API accepted, by namespace, as the PDB watch showed them. The
/// disruption controller drops a pod from `disruptedPods` once it is terminating, and a node's
/// pod listing taken a moment before the eviction still shows it Running: remembered here, such
/// a pod is not counted as displaced (a surge decided from the caches would surge for nothing).
#[derive(Debug, Default)]
pub struct AcceptedEvictions(Mutex<HashMap<(String, String), Instant>>);

impl AcceptedEvictions {
    /// Records the pods `pdb`'s status lists as evicted, seen at `now`.
    pub fn saw(&self, pdb: &PodDisruptionBudget, now: Instant) {
        let Some(namespace) = pdb.metadata.namespace.as_deref() else { return };
        let evicted = accepted_evictions(std::slice::from_ref(pdb));
        let mut seen = self.0.lock();
        if evicted.is_empty() && seen.is_empty() {
            return; // the common case, a PDB nobody is evicting from
        }
        seen.retain(|_, at| now.duration_since(*at) < ACCEPTED_FOR);
        shrink_if_sparse(&mut seen);
        for pod in evicted {
            seen.insert((namespace.to_owned(), pod), now);
        }
    }

    /// The pods of `namespace` seen evicted within the last [`ACCEPTED_FOR`].
    pub fn in_namespace(&self, namespace: &str, now: Instant) -> BTreeSet<String> {
        self.0
            .lock()
            .iter()
            .filter(|((ns, _), at)| ns == namespace && now.duration_since(**at) < ACCEPTED_FOR)
            .map(|((_, pod), _)| pod.clone())
            .collect()
    }
}

/// A status we wrote: the cached resourceVersion it was computed from, and the status.
type WrittenStatus = (Option<String>, EvictionAutoScalerStatus);

/// The last status written per EAS, and the cached resourceVersion it was computed from: two
/// evaluations close together would otherwise both write it before the watch delivers the
/// first write.
#[derive(Debug, Default)]
pub struct StatusWrites(Mutex<HashMap<(String, String), WrittenStatus>>);

impl StatusWrites {
    /// Whether `status` was already written to EAS `namespace/name` while the cache still
    /// shows the version it was computed from. A record the cache has moved past is dropped:
    /// it only bridges the moment until the watch delivers our write.
    pub(super) fn already_written(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<&String>,
        status: &EvictionAutoScalerStatus,
    ) -> bool {
        let mut writes = self.0.lock();
        let key = (namespace.to_owned(), name.to_owned());
        match writes.get(&key) {
            Some((version, written)) if version.as_ref() == cached_version => written == status,
            Some(_) => {
                writes.remove(&key);
                shrink_if_sparse(&mut writes);
                false
            }
            None => false,
        }
    }

    pub(super) fn record(
        &self,
        namespace: &str,
        name: &str,
        cached_version: Option<String>,
        status: EvictionAutoScalerStatus,
    ) {
        self.0.lock().insert((namespace.to_owned(), name.to_owned()), (cached_version, status));
    }

    /// Forgets a deleted EAS.
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut writes = self.0.lock();
        writes.remove(&(namespace.to_owned(), name.to_owned()));
        shrink_if_sparse(&mut writes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_eviction_outlives_the_budget_listing_it_for_a_while() {
        use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let pdb = |namespace: &str, disrupted: &[&str]| {
            let mut pdb = PodDisruptionBudget::default();
            pdb.metadata.namespace = Some(namespace.into());
            pdb.status = Some(PodDisruptionBudgetStatus {
                disrupted_pods: Some(
                    disrupted.iter().map(|p| ((*p).to_owned(), Time(Timestamp::UNIX_EPOCH))).collect(),
                ),
                ..Default::default()
            });
            pdb
        };
        let accepted = AcceptedEvictions::default();
        let t0 = Instant::now();
        accepted.saw(&pdb("apps", &["web-a"]), t0);
        // The disruption controller drops the pod once it is terminating: still evicted.
        accepted.saw(&pdb("apps", &[]), t0 + Duration::from_secs(1));
        assert_eq!(
            accepted.in_namespace("apps", t0 + Duration::from_secs(2)),
            BTreeSet::from(["web-a".into()])
        );
        assert!(accepted.in_namespace("other", t0 + Duration::from_secs(2)).is_empty(), "by namespace");
        // Past any listing that could still show it Running: forgotten, and dropped.
        assert!(accepted.in_namespace("apps", t0 + ACCEPTED_FOR).is_empty());
        accepted.saw(&pdb("other", &["db-0"]), t0 + ACCEPTED_FOR);
        assert_eq!(accepted.0.lock().len(), 1, "only what is still remembered is kept");
    }

    fn key() -> ObjectKey {
        ("ns".into(), "web".into())
    }

    fn signal(pod: &str, at: Timestamp) -> SignaledPod {
        SignaledPod { pod: pod.into(), at, on_draining_node: true, displaceable: true }
    }

    #[test]
    fn a_deployment_with_nothing_to_remember_takes_no_memory() {
        let memory = SurgeMemory::default();
        let (now, horizon) = (Timestamp::now(), SignedDuration::from_secs(60));
        let idle = Evaluated {
            surged: false,
            settled: true,
            expired: false,
            any_draining: false,
            began: Instant::now(),
        };
        memory.evaluated(&key(), idle, now, horizon);
        memory.set_overdue(&key(), false);
        assert_eq!(memory.0.lock().len(), 0, "an evaluation that found nothing keeps nothing");

        memory.record_signal(&key(), signal("a", now), true);
        let surged = Evaluated {
            surged: true,
            settled: false,
            expired: false,
            any_draining: true,
            began: Instant::now(),
        };
        memory.evaluated(&key(), surged, now, horizon);
        let recalled = memory.recall(&key(), now, horizon, true);
        memory.signals_seen(&key(), &recalled);
        assert!(memory.take_first_trigger(&key()).is_some());
        let later = now + SignedDuration::from_secs(61);
        memory.evaluated(&key(), surged, later, horizon);
        assert_eq!(memory.counts(), (1, 0), "kept while surged, its signal gone");
        memory.evaluated(&key(), idle, later, horizon);
        assert_eq!(memory.0.lock().len(), 0, "dropped once reverted");
    }

    #[test]
    fn recalling_changes_nothing_and_a_signal_is_new_until_an_evaluation_reports_it() {
        let memory = SurgeMemory::default();
        let now = Timestamp::now();
        let horizon = SignedDuration::from_secs(60);
        assert!(memory.record_signal(&key(), signal("a", now), true));
        assert!(!memory.record_signal(&key(), signal("a", now), true), "the same signal twice");
        let first = memory.recall(&key(), now, horizon, true);
        let again = memory.recall(&key(), now, horizon, true);
        assert!(first.new_signal && again.new_signal, "observing twice sees the same");
        assert_eq!(memory.signals_seen(&key(), &first), 1, "one signal newly evaluated");
        assert_eq!(memory.signals_seen(&key(), &again), 0, "and counted once");
        assert!(!memory.recall(&key(), now, horizon, true).new_signal);
        assert!(memory.record_signal(&key(), signal("b", now), true));
        assert!(memory.recall(&key(), now, horizon, true).new_signal, "a later signal is new again");
    }

    #[test]
    fn what_no_longer_holds_is_not_recalled_and_is_dropped_once_evaluated() {
        let memory = SurgeMemory::default();
        let now = Timestamp::now();
        let horizon = SignedDuration::from_secs(60);
        let old = now - SignedDuration::from_secs(61);
        memory.record_signal(&key(), signal("old", old), false);
        memory.forbid(&key(), "no".into(), now);
        let recalled = memory.recall(&key(), now, horizon, false);
        assert!(recalled.signals.is_empty(), "older than the horizon");
        assert_eq!(recalled.forbidden, None, "the pause ended at now");
        let expired = Evaluated {
            surged: false,
            settled: false,
            expired: true,
            any_draining: true,
            began: Instant::now(),
        };
        memory.evaluated(&key(), expired, now, horizon);
        assert_eq!(memory.recall(&key(), now, horizon, true).expired_at, Some(now));
        assert_eq!(memory.recall(&key(), now, horizon, false).expired_at, None, "no node drains");
        assert!(!memory.knows_signal(&key(), "old", old), "dropped");
    }

    #[test]
    fn latency_runs_from_an_episodes_first_trigger_and_a_trigger_that_needed_no_surge_is_dropped() {
        let memory = SurgeMemory::default();
        let (now, horizon) = (Timestamp::now(), SignedDuration::from_secs(60));
        let edge = Instant::now();
        memory.triggered(&key(), edge);
        memory.record_signal(&key(), signal("a", now), true);
        memory.triggered(&key(), Instant::now());
        assert_eq!(memory.take_first_trigger(&key()), Some(edge), "the drain edge came first");
        assert_eq!(memory.take_first_trigger(&key()), None, "taken once");

        memory.record_signal(&key(), signal("b", now), false);
        assert_eq!(memory.take_first_trigger(&key()), None, "an eviction the budget allowed");

        memory.triggered(&key(), edge);
        let waiting = Evaluated {
            surged: false,
            settled: false,
            expired: false,
            any_draining: true,
            began: Instant::now(),
        };
        memory.evaluated(&key(), waiting, now, horizon);
        assert_eq!(memory.take_first_trigger(&key()), Some(edge), "kept while a surge may come");
        memory.triggered(&key(), edge);
        let idle = Evaluated {
            surged: false,
            settled: true,
            expired: false,
            any_draining: true,
            began: Instant::now(),
        };
        memory.evaluated(&key(), idle, now, horizon);
        assert_eq!(memory.take_first_trigger(&key()), None, "no surge was needed");
    }

    #[test]
    fn a_trigger_during_an_evaluation_that_needed_no_surge_is_kept_for_the_next() {
        let memory = SurgeMemory::default();
        let (now, horizon) = (Timestamp::now(), SignedDuration::from_secs(60));
        let began = Instant::now();
        let signal_at = began + std::time::Duration::from_millis(5);
        memory.triggered(&key(), signal_at); // while the evaluation that began earlier runs
        let idle = Evaluated { surged: false, settled: true, expired: false, any_draining: true, began };
        memory.evaluated(&key(), idle, now, horizon);
        assert_eq!(memory.take_first_trigger(&key()), Some(signal_at), "that evaluation never saw it");
    }

    #[test]
    fn a_written_status_is_remembered_only_until_the_cache_shows_a_newer_version() {
        let writes = StatusWrites::default();
        let status = EvictionAutoScalerStatus { min_replicas: Some(1), ..Default::default() };
        let (v7, v8) = (Some("7".to_owned()), Some("8".to_owned()));
        assert!(!writes.already_written("ns", "web", v7.as_ref(), &status));
        writes.record("ns", "web", v7.clone(), status.clone());
        assert!(writes.already_written("ns", "web", v7.as_ref(), &status), "the cache has not caught up");
        let other = EvictionAutoScalerStatus { min_replicas: Some(2), ..Default::default() };
        assert!(!writes.already_written("ns", "web", v7.as_ref(), &other), "another status goes out");
        assert!(!writes.already_written("ns", "web", v8.as_ref(), &status), "planned from a newer version");
        assert_eq!(writes.0.lock().len(), 0, "and the record is dropped");
    }
}
