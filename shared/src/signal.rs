//! The signal queue: evictions seen by the webhook, handed to the controller.
//!
//! Bounded so a flood of evictions can never grow memory or slow an admission response: when
//! the queue is full the signal is dropped (and counted by the caller), never waited for.

use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// After taking a batch, the consumer lets signals gather this long before taking more: one
/// wake per pause during a burst instead of one per eviction (each wake can cost a thread
/// wake-up, about as much CPU as the admission itself). A signal after a quiet period is
/// taken at once.
pub const BATCH_PAUSE: Duration = Duration::from_millis(10);

/// At most this many signals are taken in one batch.
const BATCH_LIMIT: usize = 256;

/// One eviction attempt seen at admission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    /// Namespace of the pod being evicted.
    pub namespace: String,
    /// Name of the pod being evicted.
    pub pod: String,
    /// When the webhook saw the eviction.
    pub at: Timestamp,
    /// The requesting user (`userInfo.username`), for events and logs.
    pub user: String,
}

/// Producer side, cloned into every webhook handler.
#[derive(Clone, Debug)]
pub struct SignalSender(mpsc::Sender<Signal>);

/// Consumer side, owned by the controller.
#[derive(Debug)]
pub struct SignalReceiver {
    queue: mpsc::Receiver<Signal>,
    /// When the last batch was taken (the next one waits for [`BATCH_PAUSE`] after it).
    last_batch: Option<Instant>,
}

/// Creates a queue holding at most `capacity` (≥ 1) pending signals.
pub fn signal_queue(capacity: usize) -> (SignalSender, SignalReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (SignalSender(tx), SignalReceiver { queue: rx, last_batch: None })
}

impl SignalSender {
    /// Offers a signal without waiting. Returns false when it was dropped (queue full or closed).
    pub fn offer(&self, signal: Signal) -> bool {
        self.0.try_send(signal).is_ok()
    }
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
        Signal { namespace: "ns".into(), pod: pod.into(), at: Timestamp::UNIX_EPOCH, user: "u".into() }
    }

    #[test]
    fn full_queue_drops_instead_of_blocking() {
        let (tx, mut rx) = signal_queue(2);
        assert!(tx.offer(signal("a")));
        assert!(tx.offer(signal("b")));
        assert!(!tx.offer(signal("c")), "third signal must be dropped, not queued");
        assert_eq!(rx.try_recv().map(|s| s.pod), Some("a".into()));
        assert!(tx.offer(signal("d")), "room again after one is taken");
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_signal_is_taken_at_once_and_a_burst_is_taken_together() {
        let (tx, mut rx) = signal_queue(16);
        let mut batch = Vec::new();
        assert!(tx.offer(signal("a")));
        let started = tokio::time::Instant::now();
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(started.elapsed(), Duration::ZERO, "a signal after a quiet period waits for nothing");
        assert_eq!(batch.iter().map(|s| s.pod.as_str()).collect::<Vec<_>>(), ["a"]);

        // Signals arriving right after a batch gather until the pause is over, then come as one.
        batch.clear();
        let sender = tx.clone();
        tokio::spawn(async move {
            for pod in ["b", "c", "d"] {
                sender.offer(signal(pod));
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(started.elapsed(), BATCH_PAUSE);
        assert_eq!(batch.iter().map(|s| s.pod.as_str()).collect::<Vec<_>>(), ["b", "c", "d"]);

        // After a quiet period longer than the pause, the next signal is again taken at once.
        batch.clear();
        tokio::time::sleep(BATCH_PAUSE * 3).await;
        assert!(tx.offer(signal("e")));
        let before = tokio::time::Instant::now();
        assert!(rx.next_batch(&mut batch).await);
        assert_eq!(before.elapsed(), Duration::ZERO);

        drop(tx);
        batch.clear();
        assert!(!rx.next_batch(&mut batch).await, "false once every sender is gone");
    }
}
