//! The generic object store: collections of JSON objects keyed by (namespace, name), one
//! cluster-wide resourceVersion counter and a bounded history of watch events.
//!
//! Objects are stored as `Arc<Value>` so lists and watch fan-out never deep-copy them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

pub use crate::resources::StorageKey;

/// `(namespace, name)`; the namespace is `""` for cluster-scoped objects.
pub type ObjectKey = (String, String);

/// Watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change, shared by every watcher.
#[derive(Debug)]
pub struct StoredEvent {
    /// resourceVersion of the change.
    pub rv: u64,
    /// Collection of the object.
    pub key: StorageKey,
    /// Namespace of the object (`""` for cluster-scoped).
    pub namespace: String,
    /// What happened.
    pub event_type: EventType,
    /// The object after the change (for DELETED: its last state, with the deletion's RV).
    pub object: Arc<Value>,
    /// The object before the change (MODIFIED only), for selector transitions.
    pub previous: Option<Arc<Value>>,
    serialized: OnceLock<Arc<Vec<u8>>>,
}

impl StoredEvent {
    /// The object serialized once and shared by all watchers.
    pub fn object_json(&self) -> Arc<Vec<u8>> {
        self.serialized
            .get_or_init(|| Arc::new(serde_json::to_vec(&*self.object).unwrap_or_default()))
            .clone()
    }
}

/// A write applied by [`Store::commit`].
#[derive(Debug)]
pub enum Mutation {
    /// Insert a new object (fails if the key exists).
    Create {
        /// Collection.
        key: StorageKey,
        /// The object, fully formed except `metadata.resourceVersion`.
        object: Value,
    },
    /// Replace an object whose current resourceVersion must be `expected_rv`.
    Update {
        /// Collection.
        key: StorageKey,
        /// The new object.
        object: Value,
        /// resourceVersion the caller based its change on.
        expected_rv: u64,
    },
    /// Remove an object whose current resourceVersion must be `expected_rv`.
    Delete {
        /// Collection.
        key: StorageKey,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// resourceVersion the caller based its decision on.
        expected_rv: u64,
    },
}

/// Why a commit did not happen.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitError {
    /// Create of an existing key.
    AlreadyExists,
    /// Update/delete of a missing key.
    NotFound,
    /// The object changed since `expected_rv`.
    Conflict,
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// The store's resourceVersion when the list was taken.
    pub rv: u64,
    /// Matching objects in key order.
    pub items: Vec<Arc<Value>>,
    /// Key of the last item when more matching items remain.
    pub next: Option<ObjectKey>,
    /// Number of matching items after this page.
    pub remaining: usize,
}

struct State {
    rv: u64,
    collections: HashMap<StorageKey, BTreeMap<ObjectKey, Arc<Value>>>,
    history: VecDeque<Arc<StoredEvent>>,
    history_limit: usize,
    /// Events with an RV at or below this one are gone from the history.
    compacted_rv: u64,
}

/// The object store.
pub struct Store {
    state: RwLock<State>,
    notify: tokio::sync::watch::Sender<u64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("rv", &self.current_rv()).finish()
    }
}

/// `metadata.resourceVersion` of an object as a number (0 when absent or unparseable).
pub fn object_rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn object_key(object: &Value) -> ObjectKey {
    let meta = &object["metadata"];
    (
        meta["namespace"].as_str().unwrap_or_default().to_string(),
        meta["name"].as_str().unwrap_or_default().to_string(),
    )
}

fn set_rv(object: &mut Value, rv: u64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

impl Store {
    /// An empty store keeping at most `history_limit` watch events.
    pub fn new(history_limit: usize) -> Self {
        let (notify, _) = tokio::sync::watch::channel(0);
        Self {
            state: RwLock::new(State {
                rv: 0,
                collections: HashMap::new(),
                history: VecDeque::new(),
                history_limit: history_limit.max(1),
                compacted_rv: 0,
            }),
            notify,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The latest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.read().rv
    }

    /// The oldest resourceVersion a watch can still resume from.
    pub fn compacted_rv(&self) -> u64 {
        self.read().compacted_rv
    }

    /// Receives the latest resourceVersion after every commit.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.notify.subscribe()
    }

    /// One object.
    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let state = self.read();
        state.collections.get(key)?.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// Number of objects in a collection.
    pub fn count(&self, key: &StorageKey) -> usize {
        self.read().collections.get(key).map_or(0, BTreeMap::len)
    }

    /// Lists matching objects in key order, starting after `start_after`, at most `limit`
    /// (0 = no limit).
    pub fn list(
        &self,
        key: &StorageKey,
        namespace: Option<&str>,
        start_after: Option<&ObjectKey>,
        limit: usize,
        filter: &dyn Fn(&Value) -> bool,
    ) -> ListPage {
        let state = self.read();
        let mut page = ListPage { rv: state.rv, items: Vec::new(), next: None, remaining: 0 };
        let Some(coll) = state.collections.get(key) else { return page };
        let lower = match (start_after, namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        for (k, obj) in coll.range((lower, Bound::Unbounded)) {
            if let Some(ns) = namespace
                && k.0 != ns
            {
                break;
            }
            if !filter(obj) {
                continue;
            }
            if limit > 0 && page.items.len() >= limit {
                page.remaining += 1;
                continue;
            }
            page.items.push(obj.clone());
        }
        if page.remaining > 0 {
            page.next = page.items.last().map(|o| object_key(o));
        }
        page
    }

    /// Applies a write atomically: assigns the next resourceVersion, records the watch event
    /// and wakes watchers. Returns the stored object (for Delete: the last state).
    pub fn commit(&self, mutation: Mutation) -> Result<Arc<Value>, CommitError> {
        let mut guard = self.write();
        let state = &mut *guard;
        let rv = state.rv + 1;
        let (key, namespace, event_type, object, previous) = match mutation {
            Mutation::Create { key, mut object } => {
                let k = object_key(&object);
                let coll = state.collections.entry(key.clone()).or_default();
                if coll.contains_key(&k) {
                    return Err(CommitError::AlreadyExists);
                }
                set_rv(&mut object, rv);
                let object = Arc::new(object);
                coll.insert(k.clone(), object.clone());
                (key, k.0, EventType::Added, object, None)
            }
            Mutation::Update { key, mut object, expected_rv } => {
                let k = object_key(&object);
                let coll = state.collections.entry(key.clone()).or_default();
                let current = coll.get(&k).ok_or(CommitError::NotFound)?.clone();
                if object_rv(&current) != expected_rv {
                    return Err(CommitError::Conflict);
                }
                set_rv(&mut object, rv);
                let object = Arc::new(object);
                coll.insert(k.clone(), object.clone());
                (key, k.0, EventType::Modified, object, Some(current))
            }
            Mutation::Delete { key, namespace, name, expected_rv } => {
                let k = (namespace, name);
                let coll = state.collections.entry(key.clone()).or_default();
                let current = coll.get(&k).ok_or(CommitError::NotFound)?;
                if object_rv(current) != expected_rv {
                    return Err(CommitError::Conflict);
                }
                let mut last = coll.remove(&k).map(|o| (*o).clone()).unwrap_or_default();
                set_rv(&mut last, rv);
                (key, k.0, EventType::Deleted, Arc::new(last), None)
            }
        };
        state.rv = rv;
        state.history.push_back(Arc::new(StoredEvent {
            rv,
            key,
            namespace,
            event_type,
            object: object.clone(),
            previous,
            serialized: OnceLock::new(),
        }));
        while state.history.len() > state.history_limit {
            if let Some(old) = state.history.pop_front() {
                state.compacted_rv = old.rv;
            }
        }
        drop(guard);
        self.notify.send_replace(rv);
        Ok(object)
    }

    /// Events with an RV greater than `after`, at most `max`; `Err(compacted_rv)` when `after`
    /// is older than the retained history.
    pub fn events_since(&self, after: u64, max: usize) -> Result<Vec<Arc<StoredEvent>>, u64> {
        let state = self.read();
        if after < state.compacted_rv {
            return Err(state.compacted_rv);
        }
        let start = state.history.partition_point(|e| e.rv <= after);
        Ok(state.history.range(start..).take(max).cloned().collect())
    }

    /// A snapshot of a collection with the RV it was taken at (for watch initial events).
    pub fn snapshot(
        &self,
        key: &StorageKey,
        namespace: Option<&str>,
        filter: &dyn Fn(&Value) -> bool,
    ) -> (u64, Vec<Arc<Value>>) {
        let page = self.list(key, namespace, None, 0, filter);
        (page.rv, page.items)
    }

    /// Drops the whole event history and advances the resourceVersion, so every watch resuming
    /// from an earlier version gets `410 Expired` (forces clients to relist).
    pub fn compact(&self) -> u64 {
        let mut state = self.write();
        state.rv += 1;
        state.history.clear();
        state.compacted_rv = state.rv;
        let rv = state.rv;
        drop(state);
        self.notify.send_replace(rv);
        rv
    }
}
