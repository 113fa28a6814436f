//! Events written through core/v1, as client-go's recorder writes them: `firstTimestamp`,
//! `lastTimestamp` and `count`, a repeat of the same Event patching its count. This is what
//! `kubectl get events --sort-by=.lastTimestamp` (the seed's troubleshooting command) sorts
//! on; an events.k8s.io/v1 Event has no `lastTimestamp` and sorts as the oldest, and the
//! apiserver refuses the deprecated fields there.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::error;

/// The reporting component on Events (`source.component`, `reportingComponent`).
pub const COMPONENT: &str = "eviction-autoscaler";

/// How many series are remembered (client-go's recorder keeps 4096 too); the least recently
/// seen is forgotten first, and its next repeat starts a new Event.
const MAX_SERIES: usize = 4096;

/// Reasons written once per series: an invalid annotation is reported once per object and
/// value. The object is re-planned at every event of it, status updates included, so counting
/// each repeat would only patch the Event again and again while telling the owner nothing new;
/// a new value is a new message, a new Event.
const REPORTED_ONCE: [&str; 1] = [crate::surge::events::INVALID_ANNOTATION];

/// Longest message written; the rest is cut (events.k8s.io's note limit is 1 KiB).
const MAX_MESSAGE: usize = 1000;

/// What makes two Events one series (client-go's `getEventKey`): the object, type, reason and
/// message. A new message is a new Event, so a later Event never shows an earlier message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey<'a> {
    object: [&'a str; 5],
    warning: bool,
    reason: &'a str,
    message: &'a str,
}

/// A series so far: how often it happened, first and last time. Its Event's name follows
/// from the object's name and `first` ([`Seen::name`]), so it is not stored.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen {
    count: i32,
    first: Timestamp,
    last: Timestamp,
}

impl Seen {
    /// As client-go names Events: the object's name and the first time in hex nanoseconds.
    fn name(&self, object_name: &str) -> String {
        format!("{object_name}.{:x}", self.first.as_nanosecond())
    }
}

/// The remembered series (no I/O), each under a 64-bit digest of its key rather than the
/// key's seven strings: 4,096 series take some 200 KB instead of 3 MB. Two keys sharing a
/// digest (odds about 1 in 10^12 with 4,096 series; the hasher is seeded per process, so
/// object names cannot be chosen to collide) would count as one series.
#[derive(Debug, Default)]
struct Series {
    seen: HashMap<u64, Seen>,
    hasher: RandomState,
}

impl Series {
    /// Records one occurrence of `key` at `now`: a new series, or the next count of a known one.
    fn observe(&mut self, key: &SeriesKey, now: Timestamp) -> Seen {
        let digest = self.hasher.hash_one(key);
        if let Some(seen) = self.seen.get_mut(&digest) {
            seen.count = seen.count.saturating_add(1);
            seen.last = now;
            return *seen;
        }
        if self.seen.len() >= MAX_SERIES
            && let Some(oldest) = self.seen.iter().min_by_key(|(_, s)| s.last).map(|(d, _)| *d)
        {
            self.seen.remove(&oldest);
        }
        let seen = Seen { count: 1, first: now, last: now };
        self.seen.insert(digest, seen);
        seen
    }
}

/// Writes Events for one process (one per process, so repeats make one series).
pub struct Recorder {
    /// `reportingInstance`: this replica.
    instance: String,
    series: Mutex<Series>,
}

impl Recorder {
    /// A recorder reporting as `instance` (the Lease identity).
    pub fn new(instance: String) -> Self {
        Self { instance, series: Mutex::default() }
    }

    /// Records a `Normal` (or `Warning`) Event with `reason` and `message` about `object`:
    /// created the first time, its count and `lastTimestamp` patched on each repeat (but for
    /// [`REPORTED_ONCE`] reasons, which are not written again); written
    /// through `client` (the holder's, or the one any replica writes with).
    pub async fn publish(
        &self,
        client: &Client,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        message: &str,
    ) -> Result<(), kube::Error> {
        let message: String = message.chars().take(MAX_MESSAGE).collect();
        let object_name = object.name.as_deref().unwrap_or("object");
        let key = SeriesKey {
            object: [&object.api_version, &object.kind, &object.namespace, &object.name, &object.uid]
                .map(|s| s.as_deref().unwrap_or_default()),
            warning,
            reason,
            message: &message,
        };
        let seen = self.series.lock().observe(&key, Timestamp::now());
        let name = seen.name(object_name);
        // Events about cluster-scoped objects live in `default`, as client-go puts them.
        let namespace =
            object.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
        if seen.count > 1 && REPORTED_ONCE.contains(&reason) {
            return Ok(());
        }
        if seen.count > 1 {
            let patch = json!({"count": seen.count, "lastTimestamp": Time(seen.last)});
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await {
                Ok(_) => return Ok(()),
                // Events expire (one hour by default): the series goes on in a new object.
                Err(e) if error::is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let event = Event {
            metadata: ObjectMeta { name: Some(name), namespace: Some(namespace), ..Default::default() },
            involved_object: object.clone(),
            type_: Some(if warning { "Warning" } else { "Normal" }.into()),
            reason: Some(reason.to_owned()),
            message: Some(message),
            action: Some(reason.to_owned()),
            count: Some(seen.count),
            first_timestamp: Some(Time(seen.first)),
            last_timestamp: Some(Time(seen.last)),
            source: Some(EventSource { component: Some(COMPONENT.into()), host: None }),
            reporting_component: Some(COMPONENT.into()),
            reporting_instance: Some(self.instance.chars().take(128).collect()),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(()),
            // A concurrent repeat created it first; its count is close enough.
            Err(e) if error::is_already_exists(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(reason: &'a str, message: &'a str) -> SeriesKey<'a> {
        SeriesKey { object: ["apps/v1", "Deployment", "shop", "web", "u1"], warning: false, reason, message }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_repeat_counts_on_the_first_event_and_a_new_message_is_a_new_event() {
        let mut series = Series::default();
        let first = series.observe(&key("PDBUpdated", "minAvailable 2 -> 3"), at(100));
        assert_eq!((first.count, first.first, first.last), (1, at(100), at(100)));
        assert_eq!(first.name("web"), format!("web.{:x}", at(100).as_nanosecond()), "client-go's naming");

        let again = series.observe(&key("PDBUpdated", "minAvailable 2 -> 3"), at(160));
        assert_eq!((again.name("web"), again.count), (first.name("web"), 2), "one series");
        assert_eq!(
            (again.first, again.last),
            (at(100), at(160)),
            "lastTimestamp moves, firstTimestamp stays"
        );

        let other = series.observe(&key("PDBUpdated", "minAvailable 3 -> 4"), at(170));
        assert_ne!(other.name("web"), first.name("web"), "a new message never joins the earlier Event");
        assert_eq!(other.count, 1);
        let skipped = series.observe(&key("PDBSkipped", "minAvailable 2 -> 3"), at(180));
        assert_eq!(skipped.count, 1, "another reason is another Event");
    }

    #[test]
    fn the_least_recently_seen_series_is_forgotten_when_full() {
        let mut series = Series::default();
        for i in 0..MAX_SERIES {
            series.observe(&key("R", &i.to_string()), at(1000 + i as i64));
        }
        // Seen again: now the most recent, so it survives the overflow.
        series.observe(&key("R", "0"), at(9000));
        series.observe(&key("R", "new"), at(9001));
        assert_eq!(series.seen.len(), MAX_SERIES, "bounded");
        assert_eq!(series.observe(&key("R", "0"), at(9002)).count, 3, "kept");
        assert_eq!(series.observe(&key("R", "1"), at(9003)).count, 1, "forgotten, starts again");
    }
}
