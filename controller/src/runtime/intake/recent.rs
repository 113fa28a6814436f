//! A set of recently seen keys: "at most once per period" for writes and reports.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Keys seen within the last `every`, and when; older ones are dropped as it is used, so it
/// holds only recent keys.
#[derive(Debug)]
pub struct Recent<K> {
    every: Duration,
    seen: Mutex<HashMap<K, Instant>>,
}

impl<K: Eq + Hash> Recent<K> {
    /// Remembers each key for `every`.
    pub fn new(every: Duration) -> Self {
        Self { every, seen: Mutex::default() }
    }

    /// Whether `key` was not seen within the last period; if so it is seen now.
    pub fn first(&self, key: K) -> bool {
        let mut seen = self.seen.lock();
        seen.retain(|_, at| at.elapsed() < self.every);
        if seen.contains_key(&key) {
            return false;
        }
        seen.insert(key, Instant::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_key_is_first_again_only_after_its_period() {
        let recent = Recent::new(Duration::from_secs(1));
        assert!(recent.first("a"));
        assert!(!recent.first("a"), "within the period");
        assert!(recent.first("b"), "keys are independent");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(recent.first("a"), "after the period");
    }
}
