//! WATCH: synthetic initial events, resume from a resourceVersion, 410 for compacted
//! versions, selector transitions, bookmarks and timeouts. Events share the stored
//! `Arc<Value>` (and its one-time serialization) across watchers.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::options::{Gvr, WatchOptions};
use super::{Cluster, parse_selectors, selectors_match};
use crate::error::ApiError;
use crate::resources::{ResourceInfo, StorageKey};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{EventType, StoredEvent};

/// Watch event types on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR` (object is a Status).
    Error,
}

impl WatchEventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
            Self::Error => "ERROR",
        }
    }
}

/// One event delivered to a watcher.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// Type.
    pub event_type: WatchEventType,
    /// The object (shared with the store), a bookmark stub or a Status.
    pub object: Arc<Value>,
    shared: Option<Arc<StoredEvent>>,
}

impl WatchEvent {
    fn new(event_type: WatchEventType, object: Arc<Value>) -> Self {
        Self { event_type, object, shared: None }
    }
    /// The object serialized as JSON (computed once per stored event, shared by watchers).
    pub fn object_json(&self) -> Arc<Vec<u8>> {
        match &self.shared {
            Some(ev) => ev.object_json(),
            None => Arc::new(serde_json::to_vec(&*self.object).unwrap_or_default()),
        }
    }
    /// The `{"type":..,"object":..}\n` line.
    pub fn to_line(&self) -> Vec<u8> {
        let object = self.object_json();
        let mut line = Vec::with_capacity(object.len() + 32);
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(self.event_type.as_str().as_bytes());
        line.extend_from_slice(b"\",\"object\":");
        line.extend_from_slice(&object);
        line.extend_from_slice(b"}\n");
        line
    }
}

struct State {
    cluster: Cluster,
    info: Arc<ResourceInfo>,
    key: StorageKey,
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    cursor: u64,
    pending: VecDeque<WatchEvent>,
    notify: tokio::sync::watch::Receiver<u64>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    deadline: Instant,
    /// When the next bookmark is due; `None` without `allowWatchBookmarks` or when none fits
    /// before the deadline.
    next_bookmark: Option<Instant>,
    done: bool,
}

/// The cacher's `nextBookmarkTime`: every `interval`, and one 2 s before the deadline; none
/// when that time has passed (a watch of 1 s gets none).
fn next_bookmark_after(now: Instant, interval: Duration, deadline: Instant) -> Option<Instant> {
    let heartbeat = now + interval;
    let at = deadline.checked_sub(Duration::from_secs(2)).map_or(heartbeat, |pre| pre.min(heartbeat));
    (at > now).then_some(at)
}

/// A stream of watch events; ends at the timeout, on shutdown or after an ERROR event.
pub struct WatchStream {
    inner: Pin<Box<dyn Stream<Item = WatchEvent> + Send>>,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchStream")
    }
}

impl Stream for WatchStream {
    type Item = WatchEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// A watch from a version the storage cannot read is a 500 upstream (no reason).
fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    super::parse_resource_version(rv).map_err(ApiError::plain_internal)
}

impl State {
    fn bookmark(&self, initial_events_end: bool) -> WatchEvent {
        let mut meta = json!({"resourceVersion": self.cursor.to_string()});
        if initial_events_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta});
        WatchEvent::new(WatchEventType::Bookmark, Arc::new(object))
    }

    fn matches(&self, object: &Value) -> bool {
        selectors_match(self.labels.as_ref(), self.fields.as_ref(), object)
    }

    fn served(&self, event: &Arc<StoredEvent>, event_type: WatchEventType) -> WatchEvent {
        let served = Cluster::served_form(&self.info, event.object.clone());
        let shared = Arc::ptr_eq(&served, &event.object).then(|| event.clone());
        WatchEvent { event_type, object: served, shared }
    }

    /// Translates one stored event for this watcher (selector transitions included).
    fn translate(&self, event: &Arc<StoredEvent>) -> Option<WatchEvent> {
        if event.key != self.key {
            return None;
        }
        if let Some(ns) = &self.namespace
            && &event.namespace != ns
        {
            return None;
        }
        let now = self.matches(&event.object);
        match event.event_type {
            EventType::Added => now.then(|| self.served(event, WatchEventType::Added)),
            EventType::Deleted => now.then(|| self.served(event, WatchEventType::Deleted)),
            EventType::Modified => {
                let before = event.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(self.served(event, WatchEventType::Modified)),
                    (false, true) => Some(self.served(event, WatchEventType::Added)),
                    (true, false) => {
                        // The object left the selection: DELETED with its previous state at the new RV.
                        let mut previous = event.previous.as_ref().map(|p| (**p).clone()).unwrap_or_default();
                        previous["metadata"]["resourceVersion"] = json!(event.rv.to_string());
                        let object = Cluster::served_form(&self.info, Arc::new(previous));
                        Some(WatchEvent::new(WatchEventType::Deleted, object))
                    }
                    (false, false) => None,
                }
            }
        }
    }

    async fn next(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Some(ev);
            }
            if self.done || *self.shutdown.borrow() {
                return None;
            }
            self.notify.borrow_and_update();
            match self.cluster.store().events_since(self.cursor, 1024) {
                Err(compacted) => {
                    let err = ApiError::expired(format!(
                        "too old resource version: {} ({})",
                        self.cursor, compacted
                    ));
                    self.pending.push_back(WatchEvent::new(WatchEventType::Error, Arc::new(err.to_status())));
                    self.done = true;
                }
                Ok(events) if !events.is_empty() => {
                    for ev in &events {
                        self.cursor = ev.rv;
                        if let Some(out) = self.translate(ev) {
                            self.pending.push_back(out);
                        }
                    }
                }
                Ok(_) => {
                    let bookmark_at = self.next_bookmark.unwrap_or(self.deadline);
                    tokio::select! {
                        changed = self.notify.changed() => {
                            if changed.is_err() { self.done = true; }
                        }
                        _ = self.shutdown.changed() => { self.done = true; }
                        _ = tokio::time::sleep_until(self.deadline) => { self.done = true; }
                        _ = tokio::time::sleep_until(bookmark_at), if self.next_bookmark.is_some() => {
                            let bookmark = self.bookmark(false);
                            self.pending.push_back(bookmark);
                            let interval = self.cluster.config().bookmark_interval;
                            self.next_bookmark = next_bookmark_after(Instant::now(), interval, self.deadline);
                        }
                    }
                }
            }
        }
    }
}

impl Cluster {
    /// WATCH a collection (`namespace: None` = all namespaces).
    pub fn watch(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<WatchStream, ApiError> {
        let info = self.resource(gvr)?;
        let namespace = namespace.filter(|ns| !ns.is_empty() && info.namespaced).map(String::from);
        let (labels, fields) =
            parse_selectors(&info, opts.label_selector.as_deref(), opts.field_selector.as_deref())?;
        let rv = opts.resource_version.as_deref().filter(|rv| !rv.is_empty() && *rv != "0");
        let start = rv.map(parse_rv).transpose()?;
        let timeout = opts.timeout.unwrap_or(self.config().default_watch_timeout);
        let now = Instant::now();
        let mut state = State {
            cluster: self.clone(),
            key: info.storage_key(),
            info: info.clone(),
            namespace,
            labels,
            fields,
            cursor: start.unwrap_or(0),
            pending: VecDeque::new(),
            notify: self.store().subscribe(),
            shutdown: self.inner.shutdown.subscribe(),
            deadline: now + timeout,
            next_bookmark: opts
                .allow_bookmarks
                .then(|| next_bookmark_after(now, self.config().bookmark_interval, now + timeout))
                .flatten(),
            done: false,
        };
        if start.is_none() || opts.send_initial_events {
            let filter = |o: &Value| state.matches(o);
            let (snapshot_rv, items) = self.store().snapshot(&state.key, state.namespace.as_deref(), &filter);
            state.cursor = snapshot_rv;
            for item in items {
                let object = Cluster::served_form(&info, item);
                state.pending.push_back(WatchEvent::new(WatchEventType::Added, object));
            }
            // The bookmark that ends them is a bookmark: sent only to who allows bookmarks.
            if opts.send_initial_events && opts.allow_bookmarks {
                let bookmark = state.bookmark(true);
                state.pending.push_back(bookmark);
            }
        }
        let stream = futures::stream::unfold(state, |mut state| {
            let fut: BoxFuture<'static, Option<(WatchEvent, State)>> =
                Box::pin(async move { state.next().await.map(|ev| (ev, state)) });
            fut
        });
        Ok(WatchStream { inner: Box::pin(stream) })
    }
}
