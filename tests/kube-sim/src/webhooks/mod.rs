//! Admission webhooks as the apiserver calls them (k8s-semantics §3): configurations from the
//! store, mutating webhooks serially (JSONPatch applied), then validating webhooks in
//! parallel; failurePolicy, timeoutSeconds, sideEffects and dry run; denials with the
//! webhook's code and the upstream message. The decisions are `cluster_logic::admission`'s;
//! this module does the I/O (see [`client`]).

pub mod client;

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::cluster::{AdmissionHook, AdmissionRequest, Cluster, Operation};
use crate::cluster_logic::admission::Operation as LogicOperation;
use crate::cluster_logic::admission::{
    AdmissionAttributes, FailureOutcome, Invocation, ResourceRef, WebhookVerdict, admission_review,
    default_configuration, dry_run_unsupported, judge_response, on_call_error, ordered_webhooks,
    review_version, should_call_hook, timeout_seconds, transport_error_text, webhook_target,
};
use crate::controllers::ServiceRoutes;
use crate::error::ApiError;
use crate::resources::StorageKey;

/// The requester an AdmissionReview names: the authenticated user of the request being
/// served, or kube-controller-manager for kube-sim's own writes.
pub fn request_user_info() -> Value {
    crate::auth::current_user().to_review_json()
}

const GROUP: &str = "admissionregistration.k8s.io";

/// Calls the webhooks configured in a cluster's store.
pub struct Webhooks {
    routes: ServiceRoutes,
    connections: client::Connections,
}

impl Webhooks {
    pub(crate) fn new(routes: ServiceRoutes) -> Self {
        Self { routes, connections: client::Connections::default() }
    }

    fn configurations(cluster: &Cluster, plural: &str, mutating: bool) -> Vec<Value> {
        let key = StorageKey { group: GROUP.into(), plural: plural.into() };
        let page = cluster.store().list(&key, None, None, 0, &|_| true);
        page.items
            .iter()
            .map(|c| {
                // Seeded configurations skipped admission: default them here as well.
                let mut c = (**c).clone();
                default_configuration(&mut c, mutating);
                c
            })
            .collect()
    }

    fn namespace_labels(cluster: &Cluster, namespace: &str) -> Option<Map<String, Value>> {
        if namespace.is_empty() {
            return Some(Map::new());
        }
        let key = StorageKey { group: String::new(), plural: "namespaces".into() };
        let ns = cluster.store().get(&key, "", namespace)?;
        let mut labels = ns["metadata"]["labels"].as_object().cloned().unwrap_or_default();
        labels.insert("kubernetes.io/metadata.name".into(), json!(namespace));
        Some(labels)
    }

    /// The webhooks to call, with their positions, in the apiserver's order.
    fn matching(
        cluster: &Cluster,
        plural: &str,
        mutating: bool,
        attributes: &AdmissionAttributes,
    ) -> Result<Vec<(Value, Invocation)>, ApiError> {
        let configurations = Self::configurations(cluster, plural, mutating);
        if configurations.is_empty() {
            return Ok(Vec::new());
        }
        let labels = Self::namespace_labels(cluster, &attributes.namespace);
        let mut out = Vec::new();
        for entry in ordered_webhooks(&configurations) {
            match should_call_hook(&entry.webhook, attributes, labels.as_ref()) {
                Ok(Some(invocation)) => out.push((entry.webhook, invocation)),
                Ok(None) => {}
                Err(e) => return Err(ApiError::internal(e)),
            }
        }
        for (webhook, _) in &out {
            if let Some(rejection) = dry_run_unsupported(webhook, attributes.dry_run) {
                return Err(rejection.to_api_error());
            }
        }
        Ok(out)
    }

    async fn call(
        &self,
        webhook: &Value,
        mutating: bool,
        invocation: &Invocation,
        attributes: &AdmissionAttributes,
    ) -> WebhookVerdict {
        let api_version = match review_version(webhook) {
            Ok(v) => v,
            Err(text) => return WebhookVerdict::CallError(text),
        };
        let target = match webhook_target(webhook) {
            Ok(t) => t,
            Err(text) => return WebhookVerdict::CallError(text),
        };
        let timeout = timeout_seconds(webhook);
        let url = target.url(timeout);
        let uid = uuid::Uuid::new_v4().to_string();
        let review = admission_review(api_version, &uid, invocation, attributes);
        let ca_bundle = webhook.pointer("/clientConfig/caBundle").and_then(Value::as_str).unwrap_or("");
        let name = webhook["name"].as_str().unwrap_or("");
        let verdict =
            match client::post(&self.connections, &target, &self.routes, ca_bundle, timeout, &review).await {
                Ok((status, body)) => judge_response(
                    webhook,
                    mutating,
                    api_version,
                    &uid,
                    attributes.object.is_some(),
                    status,
                    &body,
                ),
                Err(detail) => WebhookVerdict::CallError(transport_error_text(name, &url, &detail)),
            };
        // The webhook's warnings reach the client as `Warning` headers, allowed or not.
        if let WebhookVerdict::Allowed { warnings, .. } | WebhookVerdict::Denied { warnings, .. } = &verdict {
            warnings.iter().for_each(|w| crate::warnings::add(w));
        }
        verdict
    }

    /// Mutating admission: calls every matching mutating webhook in order, applying patches
    /// to `attributes.object`. Reinvocation (`IfNeeded`) is not performed.
    pub async fn mutate(
        &self,
        cluster: &Cluster,
        attributes: &mut AdmissionAttributes,
    ) -> Result<(), ApiError> {
        let webhooks = Self::matching(cluster, "mutatingwebhookconfigurations", true, attributes)?;
        for (index, (webhook, invocation)) in webhooks.iter().enumerate() {
            match self.call(webhook, true, invocation, attributes).await {
                WebhookVerdict::Allowed { patch: Some(patch), .. } => {
                    let ops: json_patch::Patch =
                        serde_json::from_value(patch).map_err(|e| ApiError::internal(e.to_string()))?;
                    if let Some(object) = attributes.object.as_mut() {
                        json_patch::patch(object, &ops).map_err(|e| ApiError::internal(e.to_string()))?;
                    }
                }
                WebhookVerdict::Allowed { .. } => {}
                WebhookVerdict::Denied { status, .. } | WebhookVerdict::Reject(status) => {
                    return Err(status.to_api_error());
                }
                WebhookVerdict::CallError(text) => {
                    cluster
                        .request_log()
                        .record_webhook_failure(webhook["name"].as_str().unwrap_or(""), &text);
                    if let FailureOutcome::Reject(status) = on_call_error(webhook, true, 0, index, &text) {
                        return Err(status.to_api_error());
                    }
                }
            }
        }
        Ok(())
    }

    /// Validating admission: every matching validating webhook in parallel; the first
    /// rejection to arrive is returned.
    pub async fn validate(
        &self,
        cluster: &Cluster,
        attributes: &AdmissionAttributes,
    ) -> Result<(), ApiError> {
        let webhooks = Self::matching(cluster, "validatingwebhookconfigurations", false, attributes)?;
        let mut calls: futures::stream::FuturesUnordered<_> = webhooks
            .iter()
            .enumerate()
            .map(|(index, (webhook, invocation))| async move {
                match self.call(webhook, false, invocation, attributes).await {
                    WebhookVerdict::Allowed { .. } => Ok(()),
                    WebhookVerdict::Denied { status, .. } | WebhookVerdict::Reject(status) => {
                        Err(status.to_api_error())
                    }
                    WebhookVerdict::CallError(text) => {
                        let name = webhook["name"].as_str().unwrap_or("");
                        cluster.request_log().record_webhook_failure(name, &text);
                        match on_call_error(webhook, false, 0, index, &text) {
                            FailureOutcome::Reject(status) => Err(status.to_api_error()),
                            FailureOutcome::Ignore { .. } => Ok(()),
                        }
                    }
                }
            })
            .collect();
        while let Some(result) = calls.next().await {
            result?;
        }
        Ok(())
    }
}

/// The admission attributes of an API write.
pub(crate) fn attributes_of(request: &AdmissionRequest) -> AdmissionAttributes {
    let info = &request.resource;
    let (kind_api_version, kind) = match request.subresource.as_deref() {
        Some("scale") => ("autoscaling/v1".to_string(), "Scale".to_string()),
        _ => (info.api_version(), info.kind.clone()),
    };
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    AdmissionAttributes {
        resource: ResourceRef::new(&info.group, &info.version, &info.plural, &kind_api_version, &kind),
        subresource: request.subresource.clone().unwrap_or_default(),
        operation: match request.operation {
            Operation::Create => LogicOperation::Create,
            Operation::Update => LogicOperation::Update,
            Operation::Delete => LogicOperation::Delete,
            Operation::Connect => LogicOperation::Connect,
        },
        namespace: if is_namespace { request.name.clone() } else { request.namespace.clone() },
        name: request.name.clone(),
        object: request.object.clone(),
        old_object: request.old_object.clone(),
        dry_run: request.dry_run,
        options: request.options.clone(),
        user_info: request_user_info(),
        equivalents: Vec::new(),
    }
}

/// Cheap check before building attributes (every controller write passes here).
fn has_configurations(cluster: &Cluster, plural: &str) -> bool {
    cluster.store().count(&StorageKey { group: GROUP.into(), plural: plural.into() }) > 0
}

fn is_configuration(request: &AdmissionRequest) -> Option<bool> {
    if request.operation == Operation::Delete {
        return None;
    }
    let info = &request.resource;
    match (info.group.as_str(), info.plural.as_str(), request.subresource.as_deref()) {
        (GROUP, "mutatingwebhookconfigurations", None) => Some(true),
        (GROUP, "validatingwebhookconfigurations", None) => Some(false),
        _ => None,
    }
}

/// The [`AdmissionHook`] installed on a cluster with behaviour. Holds the cluster until
/// [`AdmissionBridge::detach`] (the cluster holds the hook: the cycle is broken on stop).
pub(crate) struct AdmissionBridge {
    pub webhooks: Arc<Webhooks>,
    pub cluster: Mutex<Option<Cluster>>,
}

impl AdmissionBridge {
    fn cluster(&self) -> Option<Cluster> {
        self.cluster.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
    pub(crate) fn detach(&self) {
        self.cluster.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

impl AdmissionHook for AdmissionBridge {
    fn mutate<'a>(&'a self, request: &'a AdmissionRequest) -> BoxFuture<'a, Result<Option<Value>, ApiError>> {
        Box::pin(async move {
            if let Some(mutating) = is_configuration(request) {
                // Upstream defaults webhook configurations at decode time.
                let mut object = request.object.clone().unwrap_or(Value::Null);
                default_configuration(&mut object, mutating);
                return Ok(Some(object));
            }
            let Some(cluster) = self.cluster() else { return Ok(None) };
            if !has_configurations(&cluster, "mutatingwebhookconfigurations") {
                return Ok(None);
            }
            let mut attributes = attributes_of(request);
            let before = attributes.object.clone();
            self.webhooks.mutate(&cluster, &mut attributes).await?;
            Ok((attributes.object != before).then_some(attributes.object).flatten())
        })
    }

    fn validate<'a>(&'a self, request: &'a AdmissionRequest) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            if is_configuration(request).is_some() {
                // Validated with every other kind (crate::validation); the apiserver never calls
                // webhooks on webhook configurations.
                return Ok(());
            }
            let Some(cluster) = self.cluster() else { return Ok(()) };
            if !has_configurations(&cluster, "validatingwebhookconfigurations") {
                return Ok(());
            }
            self.webhooks.validate(&cluster, &attributes_of(request)).await
        })
    }
}
