//! A keyed timer queue: each key is due at most once, at its earliest requested time, and
//! keys come out in the order they fall due (O(log n) per operation). Watch events schedule
//! "now"; plans schedule their `next_check`; failed evaluations are retried with back-off.
//! Keys a drain waits on (a drain edge, a blocking eviction signal) are scheduled [`Lane::Urgent`]:
//! they come out before every key merely due, and the consumer may take them when its normal
//! limit is reached, so a surge never waits behind a bulk of routine evaluations (an install
//! onto thousands of Deployments). One consumer.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// What the queues hold: an object as `(namespace, name)` — a Deployment, a PDB, an
/// EvictionAutoScaler, or a Node (its namespace empty).
pub type ObjectKey = (String, String);

/// Gives back the room of a map that holds far fewer entries than it has room for: a `HashMap`
/// otherwise keeps the capacity of its busiest moment (every Deployment made due at once by
/// the first list, an install onto thousands) for the life of the process. Called after
/// removals; shrinks to twice what is left, so a map that grows again does not shrink at once.
pub(crate) fn shrink_if_sparse<K: Eq + Hash, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 64 && map.len() * 8 < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

/// Longest back-off between failed evaluations of one key.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The monotonic instant for wall-clock time `at` (now if in the past).
pub(crate) fn instant_at(at: Timestamp) -> Instant {
    let ahead = at.duration_since(Timestamp::now());
    Instant::now() + Duration::try_from(ahead).unwrap_or(Duration::ZERO)
}

/// How soon a key is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// A drain waits on it: due now, ahead of every [`Lane::Normal`] key.
    Urgent,
    /// Due at its time, after every urgent key.
    Normal,
}

/// The keys waiting: the lane and time of each, and the same ordered (urgent first, then by
/// time).
#[derive(Debug, Default)]
struct Due {
    at: HashMap<ObjectKey, (Lane, Instant)>,
    order: BTreeSet<(Lane, Instant, ObjectKey)>,
}

/// The queue.
#[derive(Debug, Default)]
pub struct WorkQueue {
    due: Mutex<Due>,
    /// Consecutive failed evaluations per key (back-off).
    failures: Mutex<HashMap<ObjectKey, u32>>,
    notify: Notify,
}

impl WorkQueue {
    /// Makes `key` due at `at`, unless it is already due earlier or urgent.
    pub fn schedule(&self, key: ObjectKey, at: Instant) {
        self.schedule_in(Lane::Normal, key, at);
    }

    /// Makes `key` due now.
    pub fn schedule_now(&self, key: ObjectKey) {
        self.schedule(key, Instant::now());
    }

    /// Makes `key` due now in `lane`.
    pub fn schedule_now_in(&self, lane: Lane, key: ObjectKey) {
        self.schedule_in(lane, key, Instant::now());
    }

    fn schedule_in(&self, lane: Lane, key: ObjectKey, at: Instant) {
        let mut due = self.due.lock();
        let Due { at: times, order } = &mut *due;
        match times.get_mut(&key) {
            Some(current) if *current <= (lane, at) => return,
            Some(current) => {
                order.remove(&(current.0, current.1, key.clone()));
                *current = (lane, at);
            }
            None => {
                times.insert(key.clone(), (lane, at));
            }
        }
        order.insert((lane, at, key));
        drop(due);
        self.notify.notify_one();
    }

    /// Schedules `key` again after a failed evaluation: after 2 s, 4 s … up to
    /// [`MAX_BACKOFF`] as failures repeat. Returns the wait.
    pub fn retry(&self, key: ObjectKey) -> Duration {
        let failures = {
            let mut failures = self.failures.lock();
            let count = failures.entry(key.clone()).or_default();
            *count = count.saturating_add(1);
            *count
        };
        let backoff = Duration::from_secs(1_u64 << failures.min(9)).min(MAX_BACKOFF);
        self.schedule(key, Instant::now() + backoff);
        backoff
    }

    /// `key` was evaluated without failure: its next failure waits the shortest time again.
    pub fn succeeded(&self, key: &ObjectKey) {
        let mut failures = self.failures.lock();
        if failures.remove(key).is_some() {
            shrink_if_sparse(&mut failures);
        }
    }

    /// Number of keys waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.due.lock().at.len()
    }

    /// Waits for the next due key (only urgent ones if `urgent_only`) and removes it.
    pub async fn next(&self, urgent_only: bool) -> (Lane, ObjectKey) {
        loop {
            let earliest = {
                let mut due = self.due.lock();
                let first = due.order.first().filter(|(lane, ..)| !urgent_only || *lane == Lane::Urgent);
                let first = first.map(|(_, at, _)| *at);
                if first.is_some_and(|at| at <= Instant::now())
                    && let Some((lane, _, key)) = due.order.pop_first()
                {
                    due.at.remove(&key);
                    shrink_if_sparse(&mut due.at);
                    return (lane, key);
                }
                first
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

    fn key(n: &str) -> ObjectKey {
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
        assert_eq!(q.next(false).await.1, key("soon"));
        assert!(Instant::now() >= start + Duration::from_secs(5));
        q.schedule_now(key("now"));
        assert_eq!(q.next(false).await.1, key("now"));
        assert_eq!(q.next(false).await.1, key("late"));
        assert!(
            Instant::now() >= start + Duration::from_secs(10)
                && Instant::now() < start + Duration::from_secs(60)
        );
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn due_keys_come_out_in_the_order_they_fell_due() {
        let q = WorkQueue::default();
        let start = Instant::now();
        for (name, secs) in [("c", 3), ("a", 1), ("b", 2), ("d", 4)] {
            q.schedule(key(name), start + Duration::from_secs(secs));
        }
        q.schedule(key("d"), start); // moved earlier: first
        tokio::time::advance(Duration::from_secs(10)).await;
        let mut order = Vec::new();
        for _ in 0..4 {
            order.push(q.next(false).await.1.1);
        }
        assert_eq!(order, ["d", "a", "b", "c"]);
        assert_eq!(q.len(), 0, "a key moved earlier is due once, not twice");
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_until_one_evaluation_succeeds() {
        let q = WorkQueue::default();
        let waits: Vec<u64> = (0..10).map(|_| q.retry(key("a")).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(WorkQueue::default().retry(key("b")).as_secs(), 2, "keys back off independently");
        q.succeeded(&key("a"));
        assert_eq!(q.retry(key("a")).as_secs(), 2, "a success starts over");
        let start = Instant::now();
        assert_eq!(q.next(false).await.1, key("a"));
        assert_eq!(Instant::now() - start, Duration::from_secs(2), "retried after its wait");
    }

    #[tokio::test(start_paused = true)]
    async fn urgent_keys_come_out_first_and_alone_when_asked() {
        let q = WorkQueue::default();
        for name in ["bulk-1", "bulk-2"] {
            q.schedule_now(key(name));
        }
        tokio::time::advance(Duration::from_millis(1)).await;
        q.schedule_now_in(Lane::Urgent, key("drained"));
        q.schedule_now(key("drained")); // a routine request does not demote it
        assert_eq!(q.next(true).await, (Lane::Urgent, key("drained")), "ahead of keys due earlier");
        let only_urgent = tokio::time::timeout(Duration::from_secs(60), q.next(true)).await;
        assert!(only_urgent.is_err(), "no urgent key left: routine keys are not taken");
        q.schedule_now_in(Lane::Urgent, key("bulk-2")); // promoted: due once, urgently
        assert_eq!(q.next(false).await, (Lane::Urgent, key("bulk-2")));
        assert_eq!(q.next(false).await, (Lane::Normal, key("bulk-1")));
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_emptied_after_a_burst_gives_its_room_back() {
        let q = WorkQueue::default();
        for i in 0..10_000 {
            q.schedule_now(key(&i.to_string()));
        }
        let busiest = q.due.lock().at.capacity();
        for _ in 0..9_990 {
            q.next(false).await;
        }
        let room = q.due.lock().at.capacity();
        assert!(busiest >= 10_000 && room <= 64, "room for {room} keys, 10 left (at most {busiest})");
    }

    #[test]
    fn a_sparse_map_shrinks_but_not_below_twice_its_entries() {
        let mut map: HashMap<u32, u32> = (0..1000).map(|i| (i, i)).collect();
        for i in 0..900 {
            map.remove(&i);
            shrink_if_sparse(&mut map);
        }
        assert!(map.capacity() >= 200 && map.capacity() < 1000, "room for {}", map.capacity());
        let room = map.capacity();
        shrink_if_sparse(&mut map);
        assert_eq!(map.capacity(), room, "nothing removed, nothing moved");
    }
}
