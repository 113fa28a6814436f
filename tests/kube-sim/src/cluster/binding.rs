//! The `pods/binding` subresource (what the scheduler POSTs): sets `spec.nodeName` and
//! `PodScheduled=True` straight in storage, as upstream's `BindingREST` does. No pod strategy
//! runs on that write, so a bind never bumps the pod's `metadata.generation` (a Deployment's pod
//! stays at generation 1 once scheduled, as on the real cluster).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::Cluster;
use super::hooks::{SubresourceHandler, SubresourceRequest};
use crate::cluster_logic::common::{StatusResponse, format_time};
use crate::error::ApiError;
use crate::resources::{ExtraSubresource, StorageKey};
use crate::store::{CommitError, Mutation, object_rv};

const MAX_RETRIES: usize = 16;

/// `ValidatePodBinding`, as its aggregate reads (upstream returns it unwrapped: a 500 naming
/// the fields).
fn validate_binding(binding: &Value) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let kind = binding["target"]["kind"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != "Node" {
        errs.push(format!(
            "target.kind: Unsupported value: \"{kind}\": supported values: \"Node\", \"<empty>\""
        ));
    }
    if binding["target"]["name"].as_str().unwrap_or_default().is_empty() {
        errs.push("target.name: Required value".to_string());
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(ApiError::plain_internal(errs.remove(0))),
        _ => Err(ApiError::plain_internal(format!("[{}]", errs.join(", ")))),
    }
}

/// `setPodNodeAndMetadata`: the pod bound to `node`, with the binding's annotations and labels
/// merged in (1.35's `PodTopologyLabelsAdmission` copies labels too), the nomination hint
/// cleared and `PodScheduled` set to True in place (its transition time kept when it already
/// was True). Errors are the upstream reasons a bind is refused.
pub fn bind(pod: &Value, node: &str, binding_meta: &Value, now: jiff::Timestamp) -> Result<Value, String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    if !pod["metadata"]["deletionTimestamp"].is_null() {
        return Err(format!("pod {name} is being deleted, cannot be assigned to a host"));
    }
    let assigned = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    if !assigned.is_empty() {
        return Err(format!("pod {name} is already assigned to node \"{assigned}\""));
    }
    if pod["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty()) {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let mut pod = pod.clone();
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    pod["spec"]["nodeName"] = json!(node);
    if let Some(status) = pod.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("nominatedNodeName");
    }
    for field in ["annotations", "labels"] {
        let Some(extra) = binding_meta[field].as_object().filter(|m| !m.is_empty()) else { continue };
        if !pod["metadata"][field].is_object() {
            pod["metadata"][field] = json!({});
        }
        for (k, v) in extra {
            pod["metadata"][field][k] = v.clone();
        }
    }
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
        "lastTransitionTime": format_time(now)});
    if let Some(conditions) = pod["status"]["conditions"].as_array_mut() {
        match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(old) => {
                let mut new = scheduled;
                if old["status"] == "True" && !old["lastTransitionTime"].is_null() {
                    new["lastTransitionTime"] = old["lastTransitionTime"].clone();
                }
                *old = new;
            }
            None => conditions.push(scheduled),
        }
    }
    Ok(pod)
}

impl Cluster {
    /// Binds pod `namespace/name` to `node` (the `pods/binding` subresource; no admission).
    /// `binding_meta` is the Binding's `metadata` (annotations and labels to merge; `uid` and
    /// `resourceVersion` are preconditions). Returns the bound pod.
    pub async fn bind_pod(
        &self,
        namespace: &str,
        name: &str,
        node: &str,
        binding_meta: &Value,
        dry_run: bool,
    ) -> Result<Arc<Value>, ApiError> {
        let key = StorageKey { group: String::new(), plural: "pods".into() };
        let refused = |why: String| ApiError::conflict("", "pods/binding", name, &why);
        for _ in 0..MAX_RETRIES {
            let current = self
                .store()
                .get(&key, namespace, name)
                .ok_or_else(|| ApiError::not_found("", "pods", name))?;
            let uid = current["metadata"]["uid"].as_str().unwrap_or_default();
            if let Some(want) = binding_meta["uid"].as_str().filter(|u| !u.is_empty() && *u != uid) {
                return Err(refused(format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                )));
            }
            let rv = current["metadata"]["resourceVersion"].as_str().unwrap_or_default();
            if binding_meta["resourceVersion"].as_str().is_some_and(|want| !want.is_empty() && want != rv) {
                return Err(ApiError::optimistic_lock("", "pods", name));
            }
            let bound = bind(&current, node, binding_meta, jiff::Timestamp::now()).map_err(refused)?;
            if dry_run {
                return Ok(Arc::new(bound));
            }
            let mutation =
                Mutation::Update { key: key.clone(), object: bound, expected_rv: object_rv(&current) };
            match self.store().commit(mutation) {
                Ok(stored) => return Ok(stored),
                Err(CommitError::NotFound) => return Err(ApiError::not_found("", "pods", name)),
                Err(_) => continue,
            }
        }
        Err(ApiError::optimistic_lock("", "pods", name))
    }

    /// Serves `pods/binding` (always: it is the apiserver's, not a controller's).
    pub(super) fn register_binding(&self) {
        let sub = ExtraSubresource {
            name: "binding".into(),
            group: String::new(),
            version: "v1".into(),
            kind: "Binding".into(),
            verbs: vec!["create".into()],
        };
        self.register_subresource("", "pods", sub, Arc::new(BindingHandler));
    }
}

/// `POST .../pods/NAME/binding` with a `v1 Binding` body.
struct BindingHandler;

impl SubresourceHandler for BindingHandler {
    fn handle<'a>(
        &'a self,
        cluster: &'a Cluster,
        request: SubresourceRequest,
    ) -> BoxFuture<'a, Result<(u16, Value), ApiError>> {
        Box::pin(async move {
            if request.method != "POST" {
                return Err(ApiError::method_not_allowed());
            }
            let binding = &request.body;
            if binding["metadata"]["name"].as_str().unwrap_or_default() != request.name {
                return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
            }
            validate_binding(binding)?;
            let node = binding["target"]["name"].as_str().unwrap_or_default();
            cluster
                .bind_pod(&request.namespace, &request.name, node, &binding["metadata"], request.dry_run)
                .await?;
            Ok((201, StatusResponse::success(201).body))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> jiff::Timestamp {
        text.parse().unwrap_or_default()
    }

    #[test]
    fn a_bind_sets_the_node_and_pod_scheduled_and_nothing_else() {
        // What the real apiserver answered for a Binding to node-2 (values from v1.35).
        let pod = json!({"metadata": {"name": "bp", "generation": 1},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Pending", "nominatedNodeName": "node-1"}});
        let bound = bind(&pod, "node-2", &json!({"annotations": {"a": "b"}}), ts("2026-12-04T02:36:53Z"))
            .unwrap_or_default();
        assert_eq!(bound["spec"]["nodeName"], "node-2");
        assert_eq!(bound["metadata"]["generation"], 1, "no strategy runs: the generation stays");
        assert_eq!(bound["metadata"]["annotations"], json!({"a": "b"}));
        assert!(bound["status"].get("nominatedNodeName").is_none());
        assert_eq!(
            bound["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-12-04T02:36:53Z"}])
        );
        // An Unschedulable condition is replaced in place (no reason/message left).
        let mut pending = pod.clone();
        pending["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/2 nodes are available", "lastTransitionTime": "2026-12-04T02:00:00Z"}]);
        let bound = bind(&pending, "node-1", &json!({}), ts("2026-12-04T02:36:53Z")).unwrap_or_default();
        assert_eq!(bound["status"]["conditions"][0]["lastTransitionTime"], "2026-12-04T02:36:53Z");
        assert!(bound["status"]["conditions"][0].get("reason").is_none());
    }

    #[test]
    fn binds_are_refused_with_the_upstream_reasons() {
        let now = ts("2026-12-04T02:36:53Z");
        let assigned = json!({"metadata": {"name": "bp"}, "spec": {"nodeName": "node-2"}});
        assert_eq!(
            bind(&assigned, "node-1", &json!({}), now),
            Err("pod bp is already assigned to node \"node-2\"".to_string())
        );
        let deleting =
            json!({"metadata": {"name": "bp", "deletionTimestamp": "2026-12-04T02:00:00Z"}, "spec": {}});
        assert!(bind(&deleting, "node-1", &json!({}), now).is_err_and(|e| e.contains("is being deleted")));
        let gated = json!({"metadata": {"name": "bp"}, "spec": {"schedulingGates": [{"name": "g"}]}});
        assert!(bind(&gated, "node-1", &json!({}), now).is_err_and(|e| e.contains("schedulingGates")));
        let missing = validate_binding(&json!({"target": {}})).err().map(|e| (e.code, e.message));
        assert_eq!(missing, Some((500, "target.name: Required value".to_string())));
    }
}
