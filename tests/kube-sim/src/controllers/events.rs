//! Events as kube-controller-manager's recorder writes them (client-go `tools/record`): a
//! core/v1 Event named `<object>.<hex nanoseconds>` from source `controllermanager`; a repeat
//! of the same (object, type, reason, message) raises its `count` and `lastTimestamp` with a
//! patch instead (the correlator's aggregation of identical events).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use crate::cluster::{Cluster, Gvr, WriteOptions};
use crate::cluster_logic::common::format_time;
use crate::cluster_logic::disruption::ControllerEvent;
use crate::patch::PatchType;

/// The component kube-controller-manager's controllers report as.
const COMPONENT: &str = "controllermanager";

/// What makes two Events the same: (involved uid, type, reason, message).
type EventKey = (String, String, String, String);

/// The Events one controller recorded so far, to count repeats.
#[derive(Default)]
pub(crate) struct EventRecorder {
    /// Each Event's name and count so far.
    seen: Mutex<HashMap<EventKey, (String, i64)>>,
}

impl EventRecorder {
    /// Records `event` about `involved` (a stored object); a failed write is dropped, as
    /// client-go's recorder drops it after its retries.
    pub(crate) async fn record(&self, cluster: &Cluster, involved: &Value, event: &ControllerEvent) {
        let meta = &involved["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let namespace = text(&meta["namespace"]);
        let key =
            (text(&meta["uid"]), event.event_type.to_owned(), event.reason.to_owned(), event.message.clone());
        let now = format_time(jiff::Timestamp::now());
        let gvr = Gvr::new("", "v1", "events");
        let repeat = self.seen.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
        if let Some((name, count)) = repeat {
            let patch = json!({"count": count + 1, "lastTimestamp": now});
            let patched = cluster
                .patch(
                    &gvr,
                    Some(&namespace),
                    &name,
                    None,
                    PatchType::StrategicMerge,
                    patch.to_string().as_bytes(),
                    &WriteOptions::from_user_agent(super::KUBE_CONTROLLER_MANAGER),
                )
                .await;
            if patched.is_ok() {
                self.remember(key, name, count + 1);
                return;
            }
        }
        let nanos = jiff::Timestamp::now().as_nanosecond();
        let name = format!("{}.{nanos:x}", text(&meta["name"]));
        let body = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": involved["kind"], "namespace": meta["namespace"], "name": meta["name"],
                "uid": meta["uid"], "apiVersion": involved["apiVersion"], "resourceVersion": meta["resourceVersion"]},
            "reason": event.reason, "message": event.message, "source": {"component": COMPONENT},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": event.event_type,
            "eventTime": null, "reportingComponent": COMPONENT, "reportingInstance": ""});
        if cluster
            .create(
                &gvr,
                Some(&namespace),
                body,
                &WriteOptions::from_user_agent(super::KUBE_CONTROLLER_MANAGER),
            )
            .await
            .is_ok()
        {
            self.remember(key, name, 1);
        }
    }

    fn remember(&self, key: EventKey, name: String, count: i64) {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).insert(key, (name, count));
    }
}
