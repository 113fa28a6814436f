//! A keyed timer queue: each Deployment is due at most once, at its earliest requested time.
//! Watch events schedule "now"; plans schedule their `next_check`. One consumer.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

/// A Deployment, as `(namespace, name)`.
pub type Key = (String, String);

/// The queue.
#[derive(Debug, Default)]
pub struct WorkQueue {
    due: Mutex<HashMap<Key, Instant>>,
    notify: Notify,
}

impl WorkQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Instant>> {
        // Plain data: a panic elsewhere while holding the lock cannot leave it inconsistent.
        self.due.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes `key` due at `at`, unless it is already due earlier.
    pub fn schedule(&self, key: Key, at: Instant) {
        let mut due = self.lock();
        let entry = due.entry(key).or_insert(at);
        if at < *entry {
            *entry = at;
        }
        drop(due);
        self.notify.notify_one();
    }

    /// Makes `key` due now.
    pub fn schedule_now(&self, key: Key) {
        self.schedule(key, Instant::now());
    }

    /// Number of keys waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next due key and removes it.
    pub async fn next(&self) -> Key {
        loop {
            let earliest = {
                let mut due = self.lock();
                let now = Instant::now();
                let ready = due.iter().filter(|(_, at)| **at <= now).map(|(k, _)| k.clone()).next();
                if let Some(key) = ready {
                    due.remove(&key);
                    return key;
                }
                due.values().min().copied()
            };
            match earliest {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = self.notify.notified() => {}
                    }
                }
                None => self.notify.notified().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(n: &str) -> Key {
        ("ns".into(), n.into())
    }

    #[tokio::test(start_paused = true)]
    async fn keys_come_out_once_at_their_earliest_time() {
        let q = WorkQueue::default();
        let start = Instant::now();
        q.schedule(key("late"), start + Duration::from_secs(10));
        q.schedule(key("soon"), start + Duration::from_secs(5));
        q.schedule(key("late"), start + Duration::from_secs(60)); // later request ignored
        assert_eq!(q.len(), 2);
        assert_eq!(q.next().await, key("soon"));
        assert!(Instant::now() >= start + Duration::from_secs(5));
        q.schedule_now(key("now"));
        assert_eq!(q.next().await, key("now"));
        assert_eq!(q.next().await, key("late"));
        assert!(
            Instant::now() >= start + Duration::from_secs(10)
                && Instant::now() < start + Duration::from_secs(60)
        );
        assert!(q.is_empty());
    }
}
