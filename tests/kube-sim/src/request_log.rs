//! Test hook: every HTTP request with its verb, resource and answer code, plus counters.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

/// One logged request.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RequestRecord {
    /// Order of arrival (starts at 1).
    pub seq: u64,
    /// RFC 3339 time of arrival (millisecond precision).
    pub timestamp: String,
    /// HTTP method.
    pub method: String,
    /// URL path.
    pub path: String,
    /// Raw query string (`""` when none).
    pub query: String,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection
    /// (non-resource requests: the lower-case HTTP method).
    pub verb: String,
    /// API group of the resource (`""` for core or non-resource requests).
    pub group: String,
    /// Resource plural (`""` for non-resource requests such as discovery).
    pub resource: String,
    /// Subresource (`status`, `scale`, `eviction`, ...) or `""`.
    pub subresource: String,
    /// Namespace or `""`.
    pub namespace: String,
    /// Object name or `""`.
    pub name: String,
    /// `User-Agent` header.
    pub user_agent: String,
    /// `Accept` header.
    pub accept: String,
    /// `Content-Type` header.
    pub content_type: String,
    /// The authenticated username (`admin`, `system:serviceaccount:NS:NAME`,
    /// `system:anonymous`); `""` when authentication failed (401).
    pub user: String,
    /// HTTP answer code.
    pub code: u16,
}

impl RequestRecord {
    /// True for create/update/patch/delete/deletecollection.
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }
    /// Answered with a 2xx: it took effect. (An audit event without a response status, code 0,
    /// is not known to have.)
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }
    /// The counter key: `verb resource[/subresource]` (`patch nodes`, `get deployments/scale`).
    pub fn counter_key(&self) -> String {
        if self.resource.is_empty() {
            format!("{} {}", self.verb, self.path)
        } else if self.subresource.is_empty() {
            format!("{} {}", self.verb, self.resource)
        } else {
            format!("{} {}/{}", self.verb, self.resource, self.subresource)
        }
    }
}

/// An admission webhook the apiserver could not get an answer from (transport error, timeout,
/// bad response), whatever its failurePolicy made of it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WebhookFailure {
    /// RFC 3339 time (millisecond precision).
    pub timestamp: String,
    /// The webhook's `name`.
    pub webhook: String,
    /// The error, as the apiserver words it (`failed calling webhook …` detail).
    pub error: String,
}

/// The log. Bounded: the oldest records are dropped past `capacity`; counters keep counting.
#[derive(Debug)]
pub struct RequestLog {
    inner: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    seq: u64,
    records: std::collections::VecDeque<RequestRecord>,
    counters: BTreeMap<String, u64>,
    webhook_failures: Vec<WebhookFailure>,
}

const CAPACITY: usize = 100_000;

impl Default for RequestLog {
    fn default() -> Self {
        Self { inner: Mutex::new(LogState::default()) }
    }
}

impl RequestLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Appends a record (its `seq` is assigned here).
    pub fn record(&self, mut record: RequestRecord) {
        let mut state = self.lock();
        state.seq += 1;
        record.seq = state.seq;
        *state.counters.entry(record.counter_key()).or_default() += 1;
        state.records.push_back(record);
        while state.records.len() > CAPACITY {
            state.records.pop_front();
        }
    }
    /// All retained records in arrival order.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock().records.iter().cloned().collect()
    }
    /// Records with `seq > after`.
    pub fn records_since(&self, after: u64) -> Vec<RequestRecord> {
        self.lock().records.iter().filter(|r| r.seq > after).cloned().collect()
    }
    /// The last assigned `seq` (0 when empty): a mark for [`RequestLog::records_since`].
    pub fn last_seq(&self) -> u64 {
        self.lock().seq
    }
    /// Counters by `verb resource[/subresource]`.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.lock().counters.clone()
    }
    /// Number of write requests (any resource) logged so far.
    pub fn write_count(&self) -> usize {
        self.lock().records.iter().filter(|r| r.is_write()).count()
    }
    /// Notes a webhook call that got no usable answer (bounded like the records).
    pub fn record_webhook_failure(&self, webhook: &str, error: &str) {
        let mut state = self.lock();
        state.webhook_failures.push(WebhookFailure {
            timestamp: jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            webhook: webhook.to_owned(),
            error: error.to_owned(),
        });
        if state.webhook_failures.len() > CAPACITY {
            state.webhook_failures.remove(0);
        }
    }
    /// Webhook calls that got no usable answer, oldest first.
    pub fn webhook_failures(&self) -> Vec<WebhookFailure> {
        self.lock().webhook_failures.clone()
    }
    /// Forgets records, counters and webhook failures.
    pub fn clear(&self) {
        let mut state = self.lock();
        state.records.clear();
        state.counters.clear();
        state.webhook_failures.clear();
    }
}
