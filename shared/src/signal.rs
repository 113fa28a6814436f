//! The signal queue: evictions seen by the webhook, handed to the controller.
//!
//! Bounded so a flood of evictions can never grow memory or slow an admission response: when
//! the queue is full the signal is dropped (and counted by the caller), never waited for.

use jiff::Timestamp;
use tokio::sync::mpsc;

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
pub struct SignalReceiver(mpsc::Receiver<Signal>);

/// Creates a queue holding at most `capacity` (≥ 1) pending signals.
pub fn signal_queue(capacity: usize) -> (SignalSender, SignalReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (SignalSender(tx), SignalReceiver(rx))
}

impl SignalSender {
    /// Offers a signal without waiting. Returns false when it was dropped (queue full or closed).
    pub fn offer(&self, signal: Signal) -> bool {
        self.0.try_send(signal).is_ok()
    }
}

impl SignalReceiver {
    /// Waits for the next signal; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Signal> {
        self.0.recv().await
    }

    /// Takes a signal if one is waiting.
    pub fn try_recv(&mut self) -> Option<Signal> {
        self.0.try_recv().ok()
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
}
