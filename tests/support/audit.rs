//! The real apiserver's audit log (JSON lines) read as the request log: who asked what, in
//! which order, with what outcome.

use std::path::Path;

use serde_json::Value;

/// One request as the audit log saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Order of arrival (starts at 1).
    pub seq: u64,
    /// RFC 3339 time of arrival (microseconds).
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
    /// The authenticated username (`admin`, `system:serviceaccount:NS:NAME`).
    pub user: String,
    /// HTTP answer code (0: the audit event carries none).
    pub code: u16,
}

impl Request {
    /// True for create/update/patch/delete/deletecollection.
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }

    /// The value of query parameter `name` (`fieldManager`), if it was sent.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.split('&').find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
    }

    /// Answered with a 2xx: it took effect. (An audit event without a response status, code 0,
    /// is not known to have.)
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

/// Every request at Metadata level; writes to the objects the product acts on, and PDB statuses
/// (the disruption controller's `disruptionsAllowed`), also with their request body, so a test
/// or `scripts/drain_timeline.py` can read what was written (e.g. the surge's replicas).
pub const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: "apps"
    resources: ["deployments", "deployments/scale"]
  - group: "policy"
    resources: ["poddisruptionbudgets", "poddisruptionbudgets/status"]
  - group: ""
    resources: ["pods/eviction"]
- level: Metadata
"#;

/// Every audit event in the file at `path`, in the order the apiserver received the requests.
pub fn events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut events: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    events.sort_by(|a, b| {
        let at = |e: &Value| e["requestReceivedTimestamp"].as_str().unwrap_or_default().to_owned();
        at(a).cmp(&at(b))
    });
    events
}

/// `events` as requests (one per request: a watch when it started, anything else when it
/// completed), in order of arrival.
pub fn requests(events: &[Value]) -> Vec<Request> {
    events
        .iter()
        .filter(|e| match e["stage"].as_str() {
            Some("ResponseStarted") => e["verb"] == "watch",
            Some("ResponseComplete") => e["verb"] != "watch",
            _ => false,
        })
        .enumerate()
        .map(|(i, e)| request_record(i as u64 + 1, e))
        .collect()
}

/// One audit event as a [`Request`].
fn request_record(seq: u64, e: &Value) -> Request {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let uri = text(&e["requestURI"]);
    let (path, query) =
        uri.split_once('?').map_or((uri.clone(), String::new()), |(p, q)| (p.to_owned(), q.to_owned()));
    let verb = text(&e["verb"]);
    let method = match verb.as_str() {
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" | "deletecollection" => "DELETE",
        _ => "GET",
    };
    let object = &e["objectRef"];
    Request {
        seq,
        timestamp: text(&e["requestReceivedTimestamp"]),
        method: method.to_owned(),
        path,
        query,
        verb,
        group: text(&object["apiGroup"]),
        resource: text(&object["resource"]),
        subresource: text(&object["subresource"]),
        namespace: text(&object["namespace"]),
        name: text(&object["name"]),
        user_agent: text(&e["userAgent"]),
        user: text(&e["user"]["username"]),
        code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
    }
}

/// A resource path split: `/api/v1` or `/apis/GROUP/VERSION`, whether it is inside a namespace,
/// then the resource, the object's name and a subresource (as many as the path has).
fn split_path(path: &str) -> Option<(Vec<&str>, bool, Vec<&str>)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let prefix = match segments.first() {
        Some(&"api") => 2,
        Some(&"apis") => 3,
        _ => return None,
    };
    let (head, rest) = segments.split_at(prefix.min(segments.len()));
    // `/api/v1/namespaces/NAME` is a Namespace; `/api/v1/namespaces/NS/RESOURCE...` is in one.
    Some(match rest {
        ["namespaces", _, inner @ ..] if !inner.is_empty() => (head.to_vec(), true, inner.to_vec()),
        _ => (head.to_vec(), false, rest.to_vec()),
    })
}

/// A request's kind, as [`PRODUCT_REQUESTS`] names it: the verb and the path with the namespace
/// and the object's name as `*` — `patch /apis/apps/v1/namespaces/*/deployments/*`,
/// `watch /apis/policy/v1/poddisruptionbudgets`, `create /api/v1/namespaces/*/pods/*/eviction`.
pub fn request_kind(verb: &str, path: &str) -> String {
    let Some((mut out, namespaced, rest)) = split_path(path) else { return format!("{verb} {path}") };
    if namespaced {
        out.extend(["namespaces", "*"]);
    }
    out.extend(rest.iter().enumerate().map(|(i, segment)| if i == 1 { "*" } else { segment }));
    format!("{verb} /{}", out.join("/"))
}

/// `tests/support/product-requests.txt`: every kind of request the product makes
/// ([`request_kind`]). A new kind is a deliberate change, reviewed with the RBAC it needs and
/// the load it adds: every end-to-end test fails on a product request of a kind not listed.
pub const PRODUCT_REQUESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/product-requests.txt");

/// The kinds listed in [`PRODUCT_REQUESTS`] (`#` starts a comment).
pub fn product_request_kinds() -> std::collections::BTreeSet<String> {
    let text =
        std::fs::read_to_string(PRODUCT_REQUESTS).unwrap_or_else(|e| panic!("{PRODUCT_REQUESTS}: {e}"));
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The kinds of the product's requests (User-Agent `agent…`) that [`PRODUCT_REQUESTS`] does not
/// list, each once, sorted.
pub fn unlisted_product_requests(requests: &[Request], agent: &str) -> Vec<String> {
    let listed = product_request_kinds();
    let made: std::collections::BTreeSet<String> = requests
        .iter()
        .filter(|r| r.user_agent.starts_with(agent))
        .map(|r| request_kind(&r.verb, &r.path))
        .collect();
    made.into_iter().filter(|kind| !listed.contains(kind)).collect()
}

/// Set (to anything), the end-to-end tests add the kinds they see to [`PRODUCT_REQUESTS`]
/// instead of failing on them: how the list is refreshed after a reviewed change
/// (`RECORD_PRODUCT_REQUESTS=1 make test-e2e`, then `sort -u` the file).
pub const RECORD_PRODUCT_REQUESTS: &str = "RECORD_PRODUCT_REQUESTS";

/// Appends `kinds` to [`PRODUCT_REQUESTS`] (tests run in parallel: one `write` per call, and
/// a kind seen twice is listed once by whoever sorts the file next).
pub fn record_product_requests(kinds: &[String]) {
    use std::io::Write as _;
    if kinds.is_empty() {
        return;
    }
    let mut file =
        std::fs::OpenOptions::new().append(true).open(PRODUCT_REQUESTS).expect("product-requests.txt");
    let text: String = kinds.iter().map(|k| format!("{k}\n")).collect();
    file.write_all(text.as_bytes()).expect("append");
}
