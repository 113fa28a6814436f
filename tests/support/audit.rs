//! The real apiserver's audit log (JSON lines) read as the request log: who asked what, in
//! which order, with what outcome — what kube-sim's request log gives on kube-sim.

use std::path::Path;

use kube_sim::RequestRecord;
use serde_json::Value;

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

/// `events` as request records (one per request: a watch when it started, anything else when
/// it completed), in order of arrival.
pub fn requests(events: &[Value]) -> Vec<RequestRecord> {
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

/// One audit event as the request log's record.
fn request_record(seq: u64, e: &Value) -> RequestRecord {
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
    RequestRecord {
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
        accept: String::new(),
        content_type: String::new(),
        user: text(&e["user"]["username"]),
        code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
    }
}
