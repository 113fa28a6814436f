//! What the webhook hands to the controller: eviction signals, and the Deployments and PDBs
//! it admitted. Handing over never waits (the admission path makes no API call): each kind
//! has its own bounded lane, so a flood of one cannot crowd out the other, and when a lane is
//! full the item is dropped (counted by the caller; a drain retries its evictions and the
//! watches bring every object anyway).
//!
//! An eviction may also be *held* ([`EvictionHold`]): while a node drains, the webhook hands the
//! signal over with a one-shot answer channel and waits, bounded, for the controller to say
//! when the pod's budget is open, so the apiserver's PDB check, which runs after admission,
//! passes on the eviction's first request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::{apps::v1::Deployment, policy::v1::PodDisruptionBudget};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Receives what the webhook admitted (never dry runs). Implementations must return at once.
pub trait AdmissionHandler: Send + Sync + 'static {
    /// An eviction was attempted; false when the signal was dropped.
    fn eviction(&self, signal: Signal) -> bool;
    /// Whether an eviction may be held now (a node is draining and the controller is ready to
    /// answer): only then does the webhook attach an [`EvictionHold`] and wait.
    fn holding(&self) -> bool {
        false
    }
    /// A Deployment is being created (the object as submitted, with its UID).
    fn deployment_created(&self, deployment: Deployment);
    /// A PodDisruptionBudget is being created or updated.
    fn pdb_written(&self, pdb: PodDisruptionBudget);
}

/// A handler that takes and ignores everything (webhook-only runs).
#[derive(Clone, Copy, Debug, Default)]
pub struct IgnoreAdmissions;

impl AdmissionHandler for IgnoreAdmissions {
    fn eviction(&self, _: Signal) -> bool {
        true
    }
    fn deployment_created(&self, _: Deployment) {}
    fn pdb_written(&self, _: PodDisruptionBudget) {}
}

/// An admitted Deployment or PDB.
#[derive(Clone, Debug)]
pub enum Admitted {
    /// A Deployment CREATE.
    DeploymentCreated(Box<Deployment>),
    /// A PDB CREATE or UPDATE.
    PdbWritten(Box<PodDisruptionBudget>),
}

/// The webhook's side of the hand-over: cloned into every handler.
#[derive(Clone, Debug)]
pub struct AdmissionQueue {
    signals: mpsc::Sender<Signal>,
    objects: mpsc::Sender<Admitted>,
    holding: HoldSwitch,
}

/// The controller's side: one lane per kind, and the switch saying whether evictions may be
/// held now.
#[derive(Debug)]
pub struct AdmissionReceiver {
    /// Eviction signals, taken in batches.
    pub signals: SignalReceiver,
    /// Admitted Deployments and PDBs.
    pub objects: mpsc::Receiver<Admitted>,
    /// Set by the controller: on while a hold can be answered ([`AdmissionHandler::holding`]).
    pub holding: HoldSwitch,
}

/// Whether evictions may be held now; shared by the webhook (reads) and the controller (sets).
#[derive(Clone, Debug, Default)]
pub struct HoldSwitch(Arc<AtomicBool>);

impl HoldSwitch {
    /// Turns holding on or off.
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }

    /// Whether holding is on.
    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A hand-over holding at most `signals` pending signals and `objects` pending objects (each
/// at least 1).
pub fn admission_queue(signals: usize, objects: usize) -> (AdmissionQueue, AdmissionReceiver) {
    let (signal_tx, signal_rx) = mpsc::channel(signals.max(1));
    let (object_tx, object_rx) = mpsc::channel(objects.max(1));
    let holding = HoldSwitch::default();
    let receiver = AdmissionReceiver {
        signals: SignalReceiver { queue: signal_rx, last_batch: None },
        objects: object_rx,
        holding: holding.clone(),
    };
    (AdmissionQueue { signals: signal_tx, objects: object_tx, holding }, receiver)
}

impl AdmissionHandler for AdmissionQueue {
    fn eviction(&self, signal: Signal) -> bool {
        self.signals.try_send(signal).is_ok()
    }

    fn holding(&self) -> bool {
        self.holding.is_on()
    }

    fn deployment_created(&self, deployment: Deployment) {
        if self.objects.try_send(Admitted::DeploymentCreated(Box::new(deployment))).is_err() {
            tracing::debug!("admission queue full; the watch will bring the Deployment");
        }
    }

    fn pdb_written(&self, pdb: PodDisruptionBudget) {
        if self.objects.try_send(Admitted::PdbWritten(Box::new(pdb))).is_err() {
            tracing::debug!("admission queue full; the watch will bring the PDB");
        }
    }
}

/// After taking a batch, the consumer lets signals gather this long before taking more: one
/// wake per pause during a burst instead of one per eviction (each wake can cost a thread
/// wake-up, about as much CPU as the admission itself). A signal after a quiet period is
/// taken at once.
pub const BATCH_PAUSE: Duration = Duration::from_millis(10);

/// At most this many signals are taken in one batch.
const BATCH_LIMIT: usize = 256;

/// One eviction attempt seen at admission.
#[derive(Debug)]
pub struct Signal {
    /// Namespace of the pod being evicted.
    pub namespace: String,
    /// Name of the pod being evicted.
    pub pod: String,
    /// When the webhook saw the eviction.
    pub at: Timestamp,
    /// The requesting user (`userInfo.username`), for events and logs.
    pub user: String,
    /// Set when the webhook waits for an answer before allowing the eviction.
    pub hold: Option<EvictionHold>,
}

/// A held eviction's way back to the webhook. Dropping it unanswered means "not held": the
/// webhook then allows the eviction at once.
#[derive(Debug)]
pub struct EvictionHold {
    /// The webhook answers by then whatever happens: the apiserver's deadline for this call
    /// (its `?timeout=`) less a margin, so a hold never turns into a timeout.
    pub answer_by: Instant,
    /// The requester is in `system:masters`, exempt from API Priority and Fairness, so its held
    /// requests occupy no seat of a priority level.
    pub exempt: bool,
    /// Where the controller answers.
    pub answer: oneshot::Sender<HoldEnd>,
}

/// How a hold ended; the webhook then allows the eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldEnd {
    /// The pod's budget is open: the apiserver's PDB check will pass.
    Opened,
    /// `--eviction-hold` ran out first: the apiserver refuses as without a hold.
    Expired,
    /// More held evictions than the replica's cap: answered at once.
    Shed,
    /// The surge cannot help any more (its pods are unschedulable), or no node drains any more.
    Stopped,
    /// The process is stopping, or lost its caches.
    Shutdown,
}

impl HoldEnd {
    /// Every way a hold ends.
    pub const ALL: [HoldEnd; 5] = [Self::Opened, Self::Expired, Self::Shed, Self::Stopped, Self::Shutdown];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Opened => "opened",
            Self::Expired => "expired",
            Self::Shed => "shed",
            Self::Stopped => "stopped",
            Self::Shutdown => "shutdown",
        }
    }
}

impl Signal {
    /// A signal without a hold.
    pub fn new(
        namespace: impl Into<String>,
        pod: impl Into<String>,
        at: Timestamp,
        user: impl Into<String>,
    ) -> Self {
        Self { namespace: namespace.into(), pod: pod.into(), at, user: user.into(), hold: None }
    }
}

/// The signals' consumer side, owned by the controller.
#[derive(Debug)]
pub struct SignalReceiver {
    queue: mpsc::Receiver<Signal>,
    /// When the last batch was taken (the next one waits for [`BATCH_PAUSE`] after it).
    last_batch: Option<Instant>,
}

impl SignalReceiver {
    /// Waits for signals and appends every one waiting (up to a limit) to `batch`, no sooner
    /// than [`BATCH_PAUSE`] after the previous batch. False once every sender is gone.
    pub async fn next_batch(&mut self, batch: &mut Vec<Signal>) -> bool {
        if let Some(last) = self.last_batch {
            tokio::time::sleep_until(last + BATCH_PAUSE).await;
        }
        let taken = self.queue.recv_many(batch, BATCH_LIMIT).await;
        self.last_batch = Some(Instant::now());
        taken > 0
    }

    /// Takes a signal if one is waiting.
    pub fn try_recv(&mut self) -> Option<Signal> {
        self.queue.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(pod: &str) -> Signal {
        Signal::new("ns", pod, Timestamp::UNIX_EPOCH, "u")
    }

    #[test]
    fn a_full_lane_drops_instead_of_blocking_and_leaves_the_other_lane_alone() {
        let (tx, mut rx) = admission_queue(2, 1);
        assert!(tx.eviction(signal("a")));
        assert!(tx.eviction(signal("b")));
        assert!(!tx.eviction(signal("c")), "third signal must be dropped, not queued");
        tx.deployment_created(Deployment::default());
        tx.pdb_written(PodDisruptionBudget::default()); // dropped, not awaited
        assert_eq!(rx.signals.try_recv().map(|s| s.pod), Some("a".into()));
        assert!(tx.eviction(signal("d")), "room again after one is taken");
        assert!(matches!(rx.objects.try_recv(), Ok(Admitted::DeploymentCreated(_))));
        assert!(rx.objects.try_recv().is_err(), "the PDB found its lane full");
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_signal_is_taken_at_once_and_a_burst_is_taken_together() {
        let (tx, receiver) = admission_queue(16, 1);
        let mut rx = receiver.signals;
        let mut batch = Vec::new();
        assert!(tx.eviction(signal("a")));
        let started = tokio::time::Instant::now();
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(started.elapsed(), Duration::ZERO, "a signal after a quiet period waits for nothing");
        assert_eq!(batch.iter().map(|s| s.pod.as_str()).collect::<Vec<_>>(), ["a"]);

        // Signals arriving right after a batch gather until the pause is over, then come as one.
        batch.clear();
        let sender = tx.clone();
        tokio::spawn(async move {
            for pod in ["b", "c", "d"] {
                sender.eviction(signal(pod));
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(started.elapsed(), BATCH_PAUSE);
        assert_eq!(batch.iter().map(|s| s.pod.as_str()).collect::<Vec<_>>(), ["b", "c", "d"]);

        // After a quiet period longer than the pause, the next signal is again taken at once.
        batch.clear();
        tokio::time::sleep(BATCH_PAUSE * 3).await;
        assert!(tx.eviction(signal("e")));
        let before = tokio::time::Instant::now();
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(before.elapsed(), Duration::ZERO);

        drop(tx);
        batch.clear();
        assert!(!rx.next_batch(&mut batch).await, "false once every sender is gone");
    }
}
