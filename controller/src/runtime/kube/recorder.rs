//! Events written through core/v1, as client-go's recorder writes them: `firstTimestamp`,
//! `lastTimestamp` and `count`, a repeat of the same Event patching its count. This is what
//! `kubectl get events --sort-by=.lastTimestamp` (the seed's troubleshooting command) sorts
//! on; an events.k8s.io/v1 Event has no `lastTimestamp` and sorts as the oldest, and the
//! apiserver refuses the deprecated fields there.

use parking_lot::Mutex;
use std::collections::HashMap;

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
struct SeriesKey {
    object: (String, String, String, String, String),
    warning: bool,
    reason: String,
    message: String,
}

/// A series so far: the Event's name, how often it happened, first and last time.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    name: String,
    count: i32,
    first: Timestamp,
    last: Timestamp,
}

/// The remembered series (no I/O).
#[derive(Debug, Default)]
struct Series(HashMap<SeriesKey, Seen>);

impl Series {
    /// Records one occurrence at `now`: a new series named after `object_name`, or the next
    /// count of a known one.
    fn observe(&mut self, key: SeriesKey, object_name: &str, now: Timestamp) -> Seen {
        if let Some(seen) = self.0.get_mut(&key) {
            seen.count = seen.count.saturating_add(1);
            seen.last = now;
            return seen.clone();
        }
        if self.0.len() >= MAX_SERIES
            && let Some(oldest) = self.0.iter().min_by_key(|(_, s)| s.last).map(|(k, _)| k.clone())
        {
            self.0.remove(&oldest);
        }
        // As client-go names Events: the object's name and the time in hex nanoseconds.
        let name = format!("{object_name}.{:x}", now.as_nanosecond());
        let seen = Seen { name, count: 1, first: now, last: now };
        self.0.insert(key, seen.clone());
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
        let text = |s: &Option<String>| s.clone().unwrap_or_default();
        let key = SeriesKey {
            object: (
                text(&object.api_version),
                text(&object.kind),
                text(&object.namespace),
                text(&object.name),
                text(&object.uid),
            ),
            warning,
            reason: reason.to_owned(),
            message: message.clone(),
        };
        let now = Timestamp::now();
        let seen = self.series.lock().observe(key, object.name.as_deref().unwrap_or("object"), now);
        // Events about cluster-scoped objects live in `default`, as client-go puts them.
        let namespace =
            object.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
        if seen.count > 1 && REPORTED_ONCE.contains(&reason) {
            return Ok(());
        }
        if seen.count > 1 {
            let patch = json!({"count": seen.count, "lastTimestamp": Time(seen.last)});
            match api.patch(&seen.name, &PatchParams::default(), &Patch::Merge(patch)).await {
                Ok(_) => return Ok(()),
                // Events expire (one hour by default): the series goes on in a new object.
                Err(e) if error::is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let event = Event {
            metadata: ObjectMeta { name: Some(seen.name), namespace: Some(namespace), ..Default::default() },
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

    fn key(reason: &str, message: &str) -> SeriesKey {
        SeriesKey {
            object: ("apps/v1".into(), "Deployment".into(), "shop".into(), "web".into(), "u1".into()),
            warning: false,
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_repeat_counts_on_the_first_event_and_a_new_message_is_a_new_event() {
        let mut series = Series::default();
        let first = series.observe(key("PDBUpdated", "minAvailable 2 -> 3"), "web", at(100));
        assert_eq!((first.count, first.first, first.last), (1, at(100), at(100)));
        assert_eq!(first.name, format!("web.{:x}", at(100).as_nanosecond()), "client-go's naming");

        let again = series.observe(key("PDBUpdated", "minAvailable 2 -> 3"), "web", at(160));
        assert_eq!((again.name.as_str(), again.count), (first.name.as_str(), 2), "one series");
        assert_eq!(
            (again.first, again.last),
            (at(100), at(160)),
            "lastTimestamp moves, firstTimestamp stays"
        );

        let other = series.observe(key("PDBUpdated", "minAvailable 3 -> 4"), "web", at(170));
        assert_ne!(other.name, first.name, "a new message never joins the earlier Event");
        assert_eq!(other.count, 1);
        let skipped = series.observe(key("PDBSkipped", "minAvailable 2 -> 3"), "web", at(180));
        assert_eq!(skipped.count, 1, "another reason is another Event");
    }

    #[test]
    fn the_least_recently_seen_series_is_forgotten_when_full() {
        let mut series = Series::default();
        for i in 0..MAX_SERIES {
            series.observe(key("R", &i.to_string()), "web", at(1000 + i as i64));
        }
        // Seen again: now the most recent, so it survives the overflow.
        series.observe(key("R", "0"), "web", at(9000));
        series.observe(key("R", "new"), "web", at(9001));
        assert_eq!(series.0.len(), MAX_SERIES, "bounded");
        assert_eq!(series.observe(key("R", "0"), "web", at(9002)).count, 3, "kept");
        assert_eq!(series.observe(key("R", "1"), "web", at(9003)).count, 1, "forgotten, starts again");
    }
}
