//! The controller runtime: one feed of committed changes (the store's watch history, the same
//! events every watch is served from), an informer-style index kept in step with it, and one
//! deduplicating work queue per controller with timers for rechecks.
//!
//! Controllers read through [`Ctx::caught_up`] first, so the index reflects at least every
//! write committed before the sync began (read-your-writes: a ReplicaSet that just created
//! pods sees them on its next sync).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::cluster::{Cluster, Gvr, WriteOptions};
use crate::error::ApiError;
use crate::resources::StorageKey;
use crate::store::{EventType, StoredEvent};

use super::ClusterBehaviour;

/// An object in the store: collection, namespace (`""` if cluster-scoped), name.
pub(crate) type ObjectRef = (StorageKey, String, String);
/// A namespaced (or cluster-scoped, namespace `""`) object name within one known collection.
pub(crate) type Key = (String, String);

pub(crate) fn storage_key(group: &str, plural: &str) -> StorageKey {
    StorageKey { group: group.into(), plural: plural.into() }
}

pub(crate) fn is(event_key: &StorageKey, group: &str, plural: &str) -> bool {
    event_key.group == group && event_key.plural == plural
}

/// The namespace and name of an object.
pub(crate) fn key_of(object: &Value) -> Key {
    let text = |f: &str| object["metadata"][f].as_str().unwrap_or_default().to_string();
    (text("namespace"), text("name"))
}

/// What the index knows about one object.
#[derive(Default)]
struct Entry {
    uid: String,
    owners: Vec<String>,
    node: Option<String>,
    labels: Vec<(String, String)>,
}

/// Owner and node indexes over every object, maintained from the change feed.
#[derive(Default)]
pub(crate) struct Index {
    objects: HashMap<ObjectRef, Entry>,
    by_uid: HashMap<String, ObjectRef>,
    dependents: HashMap<String, HashSet<ObjectRef>>,
    pods_by_node: HashMap<String, HashSet<Key>>,
    /// (namespace, label key, label value) → pod names.
    pods_by_label: HashMap<(String, String, String), HashSet<String>>,
}

fn pod_node(object: &Value) -> Option<String> {
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let phase = object.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    // Terminal pods free their slot (the scheduler's informer ignores them).
    (!matches!(phase, "Succeeded" | "Failed")).then(|| node.to_string())
}

impl Index {
    fn remove(&mut self, r: &ObjectRef) {
        if let Some(entry) = self.objects.remove(r) {
            if self.by_uid.get(&entry.uid) == Some(r) {
                self.by_uid.remove(&entry.uid);
            }
            for owner in &entry.owners {
                if let Some(set) = self.dependents.get_mut(owner) {
                    set.remove(r);
                    if set.is_empty() {
                        self.dependents.remove(owner);
                    }
                }
            }
            if let Some(set) = entry.node.as_ref().and_then(|node| self.pods_by_node.get_mut(node)) {
                set.remove(&(r.1.clone(), r.2.clone()));
            }
            for (k, v) in entry.labels {
                let label = (r.1.clone(), k, v);
                if let Some(set) = self.pods_by_label.get_mut(&label) {
                    set.remove(&r.2);
                    if set.is_empty() {
                        self.pods_by_label.remove(&label);
                    }
                }
            }
        }
    }

    fn upsert(&mut self, key: &StorageKey, object: &Value) {
        let (ns, name) = key_of(object);
        let r = (key.clone(), ns.clone(), name.clone());
        self.remove(&r);
        let uid = object["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let owners: Vec<String> = object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["uid"].as_str().map(String::from))
            .collect();
        for owner in &owners {
            self.dependents.entry(owner.clone()).or_default().insert(r.clone());
        }
        let is_pod = is(key, "", "pods");
        let node = if is_pod { pod_node(object) } else { None };
        if let Some(node) = &node {
            self.pods_by_node.entry(node.clone()).or_default().insert((ns.clone(), name.clone()));
        }
        let labels: Vec<(String, String)> = if is_pod {
            object["metadata"]["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        } else {
            Vec::new()
        };
        for (k, v) in &labels {
            self.pods_by_label.entry((ns.clone(), k.clone(), v.clone())).or_default().insert(name.clone());
        }
        if !uid.is_empty() {
            self.by_uid.insert(uid.clone(), r.clone());
        }
        self.objects.insert(r, Entry { uid, owners, node, labels });
    }

    fn apply(&mut self, event: &StoredEvent) {
        match event.event_type {
            EventType::Deleted => {
                let (ns, name) = key_of(&event.object);
                self.remove(&(event.key.clone(), ns, name));
            }
            EventType::Added | EventType::Modified => self.upsert(&event.key, &event.object),
        }
    }

    /// Objects whose ownerReferences name `uid`.
    pub(crate) fn dependents(&self, uid: &str) -> Vec<ObjectRef> {
        self.dependents.get(uid).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }
    /// The object with this uid.
    pub(crate) fn by_uid(&self, uid: &str) -> Option<ObjectRef> {
        self.by_uid.get(uid).cloned()
    }
    /// Names of the pods in `ns` carrying every one of `labels` (the smallest label set first).
    pub(crate) fn pods_with_labels(&self, ns: &str, labels: &[(String, String)]) -> Vec<String> {
        let sets: Option<Vec<&HashSet<String>>> = labels
            .iter()
            .map(|(k, v)| self.pods_by_label.get(&(ns.to_string(), k.clone(), v.clone())))
            .collect();
        let Some(mut sets) = sets else { return Vec::new() };
        sets.sort_by_key(|s| s.len());
        let Some((first, rest)) = sets.split_first() else { return Vec::new() };
        first.iter().filter(|name| rest.iter().all(|s| s.contains(*name))).cloned().collect()
    }

    /// Non-terminal pods bound to `node`.
    pub(crate) fn pods_on_node(&self, node: &str) -> usize {
        self.pods_by_node.get(node).map_or(0, HashSet::len)
    }
}

/// Shared by every controller.
pub(crate) struct Ctx {
    pub cluster: Cluster,
    pub behaviour: ClusterBehaviour,
    index: Mutex<Index>,
    processed: tokio::sync::watch::Sender<u64>,
    paused: Mutex<HashSet<String>>,
}

impl Ctx {
    pub(crate) fn new(cluster: Cluster, behaviour: ClusterBehaviour) -> Arc<Self> {
        let (processed, _) = tokio::sync::watch::channel(0);
        Arc::new(Self {
            cluster,
            behaviour,
            index: Mutex::new(Index::default()),
            processed,
            paused: Mutex::new(HashSet::new()),
        })
    }

    /// Pauses or resumes the loop called `name` (a test hook).
    pub(crate) fn set_paused(&self, name: &str, paused: bool) {
        let mut set = self.paused.lock().unwrap_or_else(PoisonError::into_inner);
        if paused {
            set.insert(name.to_string());
        } else {
            set.remove(name);
        }
    }

    fn is_paused(&self, name: &str) -> bool {
        self.paused.lock().unwrap_or_else(PoisonError::into_inner).contains(name)
    }

    /// Runs `f` on the index.
    pub(crate) fn index<T>(&self, f: impl FnOnce(&Index) -> T) -> T {
        f(&self.index.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The last resourceVersion the index reflects.
    pub(crate) fn indexed_rv(&self) -> u64 {
        *self.processed.borrow()
    }

    /// Waits until the index reflects every change committed so far.
    pub(crate) async fn caught_up(&self) {
        let target = self.cluster.store().current_rv();
        let mut rx = self.processed.subscribe();
        // The dispatcher may be gone (shutdown): then stop waiting after a while.
        let _ = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|rv| *rv >= target)).await;
    }

    /// The store objects behind `refs` (skipping those gone meanwhile).
    pub(crate) fn fetch(&self, refs: &[ObjectRef]) -> Vec<Value> {
        refs.iter()
            .filter_map(|(key, ns, name)| self.cluster.store().get(key, ns, name))
            .map(|o| (*o).clone())
            .collect()
    }

    /// The objects of `group`/`plural` owned by `uid`.
    pub(crate) fn owned(&self, uid: &str, group: &str, plural: &str) -> Vec<Value> {
        let refs: Vec<ObjectRef> = self
            .index(|i| i.dependents(uid))
            .into_iter()
            .filter(|(key, _, _)| is(key, group, plural))
            .collect();
        self.fetch(&refs)
    }

    /// Every object of a collection (optionally one namespace), filtered.
    pub(crate) fn list(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        filter: &dyn Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let page = self.cluster.store().list(&storage_key(group, plural), ns, None, 0, filter);
        page.items.into_iter().map(|o| (*o).clone()).collect()
    }

    /// One object of a collection.
    pub(crate) fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Value> {
        self.cluster.store().get(&storage_key(group, plural), ns, name).map(|o| (*o).clone())
    }

    /// Writes `status` to `object` (of `gvr`) through `/status`, only if the object is still the
    /// one read (its uid and resourceVersion), as `manager` writes it upstream.
    pub(crate) async fn write_status(
        &self,
        gvr: &Gvr,
        object: &Value,
        status: Value,
        manager: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let meta = &object["metadata"];
        let body = json!({"apiVersion": object["apiVersion"], "kind": object["kind"],
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"]},
            "status": status});
        let name = meta["name"].as_str().unwrap_or_default();
        let options = WriteOptions::from_user_agent(manager);
        self.cluster.update(gvr, meta["namespace"].as_str(), name, Some("status"), body, &options).await
    }
}

/// When a sync wants to run again.
pub(crate) type Recheck = Option<Duration>;

/// One controller loop.
pub(crate) trait Reconciler: Send + Sync + 'static {
    /// Keys to sync because of one committed change.
    fn keys_for(&self, ctx: &Ctx, event: &StoredEvent) -> Vec<Key>;
    /// Every key (start, and after the change history was lost).
    fn all_keys(&self, ctx: &Ctx) -> Vec<Key>;
    /// Brings one key in line; returns when to look again (besides changes).
    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck>;
    /// Whether a sync must first wait for the index to catch up with the store (false for
    /// loops that track their own recent writes).
    fn needs_caught_up_index(&self) -> bool {
        true
    }
}

#[derive(Default)]
struct QueueState<K> {
    queue: VecDeque<K>,
    dirty: HashSet<K>,
    processing: HashSet<K>,
}

/// A deduplicating work queue: a key is queued at most once and never processed by two
/// workers at a time (client-go's workqueue semantics).
pub(crate) struct WorkQueue<K> {
    state: Mutex<QueueState<K>>,
    notify: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(QueueState {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
            }),
            notify: Notify::new(),
        })
    }

    pub(crate) fn add(&self, key: K) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !s.dirty.insert(key.clone()) {
            return;
        }
        if !s.processing.contains(&key) {
            s.queue.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }

    pub(crate) fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(queue) = queue.upgrade() {
                queue.add(key);
            }
        });
    }

    async fn next(&self) -> K {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    if !s.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    fn done(&self, key: &K) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.processing.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }
}

/// A reconciler with its queue.
pub(crate) struct Loop {
    pub name: &'static str,
    pub reconciler: Arc<dyn Reconciler>,
    pub queue: Arc<WorkQueue<Key>>,
    pub workers: usize,
}

impl Loop {
    pub(crate) fn new(name: &'static str, reconciler: impl Reconciler, workers: usize) -> Self {
        Self { name, reconciler: Arc::new(reconciler), queue: WorkQueue::new(), workers }
    }
}

async fn worker(
    ctx: Arc<Ctx>,
    name: &'static str,
    reconciler: Arc<dyn Reconciler>,
    queue: Arc<WorkQueue<Key>>,
) {
    loop {
        let key = queue.next().await;
        if ctx.is_paused(name) {
            // Paused by a test: keep the key and look again shortly.
            queue.done(&key);
            queue.add_after(key, Duration::from_millis(50));
            continue;
        }
        if reconciler.needs_caught_up_index() {
            ctx.caught_up().await;
        }
        let recheck = reconciler.sync(&ctx, &key).await;
        queue.done(&key);
        if let Some(delay) = recheck {
            queue.add_after(key, delay);
        }
    }
}

/// Feeds every committed change to the index and the loops, forever.
async fn dispatch(ctx: Arc<Ctx>, loops: Arc<Vec<Loop>>) {
    let store = ctx.cluster.store();
    let mut rx = store.subscribe();
    let mut last = resync(&ctx, &loops);
    loop {
        rx.borrow_and_update();
        loop {
            match store.events_since(last, 2048) {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    {
                        let mut index = ctx.index.lock().unwrap_or_else(PoisonError::into_inner);
                        for event in &events {
                            index.apply(event);
                        }
                    }
                    for event in &events {
                        for l in loops.iter() {
                            for key in l.reconciler.keys_for(&ctx, event) {
                                l.queue.add(key);
                            }
                        }
                        last = event.rv;
                    }
                    ctx.processed.send_replace(last);
                }
                // The history was compacted: rebuild from the current state.
                Err(_) => last = resync(&ctx, &loops),
            }
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Rebuilds the index from the store and queues every key; returns the version it reflects.
fn resync(ctx: &Ctx, loops: &[Loop]) -> u64 {
    let store = ctx.cluster.store();
    let rv = store.current_rv();
    let mut index = Index::default();
    let mut seen = HashSet::new();
    for info in ctx.cluster.catalogue().all() {
        let key = info.storage_key();
        if !seen.insert(key.clone()) {
            continue;
        }
        for object in store.list(&key, None, None, 0, &|_| true).items {
            index.upsert(&key, &object);
        }
    }
    *ctx.index.lock().unwrap_or_else(PoisonError::into_inner) = index;
    for l in loops {
        for key in l.reconciler.all_keys(ctx) {
            l.queue.add(key);
        }
    }
    ctx.processed.send_replace(rv);
    rv
}

/// Starts the dispatcher and the workers; the handles stop them when aborted.
pub(crate) fn run(ctx: Arc<Ctx>, loops: Vec<Loop>) -> Vec<tokio::task::JoinHandle<()>> {
    let loops = Arc::new(loops);
    let mut handles = vec![tokio::spawn(dispatch(ctx.clone(), loops.clone()))];
    for l in loops.iter() {
        for _ in 0..l.workers.max(1) {
            handles.push(tokio::spawn(worker(ctx.clone(), l.name, l.reconciler.clone(), l.queue.clone())));
        }
    }
    handles
}

/// An error worth a retry: conflicts and transient failures requeue after a short delay.
pub(crate) fn retry_delay(error: &crate::error::ApiError) -> Recheck {
    match error.code {
        404 => None,
        409 => Some(Duration::from_millis(20)),
        _ => Some(Duration::from_millis(500)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_key_is_queued_once_and_requeued_when_it_changes_while_processing() {
        let queue: Arc<WorkQueue<Key>> = WorkQueue::new();
        let key = || ("ns".to_string(), "a".to_string());
        queue.add(key());
        queue.add(key());
        queue.add(("ns".into(), "b".into()));
        let first = queue.next().await;
        assert_eq!(first, key());
        // Changed while being processed: not handed to a second worker, queued again after.
        queue.add(key());
        assert_eq!(queue.next().await, ("ns".to_string(), "b".to_string()));
        queue.done(&("ns".into(), "b".into()));
        let pending = tokio::time::timeout(Duration::from_millis(50), queue.next()).await;
        assert!(pending.is_err(), "a key in progress is not handed out twice");
        queue.done(&first);
        assert_eq!(queue.next().await, key(), "the change made while processing is not lost");
    }

    #[test]
    fn the_index_tracks_owners_and_node_occupancy() {
        let pods = storage_key("", "pods");
        let mut index = Index::default();
        let pod = |node: &str, phase: &str| {
            json!({"metadata": {"namespace": "ns", "name": "p", "uid": "pod-uid",
                "ownerReferences": [{"uid": "rs-uid"}]}, "spec": {"nodeName": node}, "status": {"phase": phase}})
        };
        index.upsert(&pods, &pod("node-1", "Running"));
        assert_eq!(index.dependents("rs-uid"), vec![(pods.clone(), "ns".to_string(), "p".to_string())]);
        assert_eq!(index.pods_on_node("node-1"), 1);
        assert_eq!(index.by_uid("pod-uid").map(|r| r.2), Some("p".to_string()));
        index.upsert(&pods, &pod("node-1", "Succeeded"));
        assert_eq!(index.pods_on_node("node-1"), 0, "terminal pods free their slot");
        index.remove(&(pods, "ns".into(), "p".into()));
        assert!(index.dependents("rs-uid").is_empty());
        assert!(index.by_uid("pod-uid").is_none());
    }
}
