//! `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`: the TokenRequest subresource
//! (`pkg/registry/core/serviceaccount/storage/token.go`), what `kubectl create token` calls.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::TokenRegistry;
use super::tokens::service_accounts;
use crate::cluster::{Cluster, SubresourceHandler, SubresourceRequest};
use crate::error::{ApiError, FieldError};
use crate::resources::ExtraSubresource;

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// Audiences of a TokenRequest that names none (the apiserver's `--api-audiences`, which
/// kubeadm and kind default to the service account issuer).
pub const DEFAULT_AUDIENCES: &[&str] = &["https://kubernetes.default.svc.cluster.local"];
/// `spec.expirationSeconds` when unset (upstream's v1 defaulting: one hour).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// Serves `serviceaccounts/token` (listed in discovery as `authentication.k8s.io/v1
/// TokenRequest`).
pub struct TokenRequestHandler {
    tokens: Arc<TokenRegistry>,
}

/// Registers the handler on `cluster`; tokens it issues go to `tokens`.
pub fn register(cluster: &Cluster, tokens: Arc<TokenRegistry>) {
    let sub = ExtraSubresource {
        name: "token".into(),
        group: GROUP.into(),
        version: "v1".into(),
        kind: KIND.into(),
        verbs: vec!["create".into()],
    };
    cluster.register_subresource("", "serviceaccounts", sub, Arc::new(TokenRequestHandler { tokens }));
}

/// Issues a token for the existing ServiceAccount `namespace/name` (404 when it does not
/// exist); `expires: None` makes a token that never expires.
pub fn issue_token(
    cluster: &Cluster,
    tokens: &TokenRegistry,
    namespace: &str,
    name: &str,
    expires: Option<jiff::Timestamp>,
) -> Result<String, ApiError> {
    let account = cluster.get(&service_accounts(), Some(namespace), name)?;
    let uid = account["metadata"]["uid"].as_str().unwrap_or_default();
    Ok(tokens.issue(namespace, name, uid, expires))
}

fn invalid(name: &str, errors: &[FieldError]) -> ApiError {
    ApiError::invalid(&format!("{KIND}.{GROUP}"), GROUP, KIND, name, errors)
}

fn rfc3339(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl TokenRequestHandler {
    fn create(&self, cluster: &Cluster, request: &SubresourceRequest) -> Result<(u16, Value), ApiError> {
        let (namespace, name) = (request.namespace.as_str(), request.name.as_str());
        let body = if request.body.is_object() { request.body.clone() } else { json!({}) };
        let body_name = body["metadata"]["name"].as_str().unwrap_or_default();
        if !body_name.is_empty() && body_name != name {
            let value = crate::go_fmt::quote(body_name);
            return Err(invalid(
                name,
                &[FieldError::invalid(
                    "metadata.name",
                    &value,
                    "must match the service account name if specified",
                )],
            ));
        }
        let body_namespace = body["metadata"]["namespace"].as_str().unwrap_or_default();
        if !body_namespace.is_empty() && body_namespace != namespace {
            let value = crate::go_fmt::quote(body_namespace);
            return Err(invalid(
                name,
                &[FieldError::invalid(
                    "metadata.namespace",
                    &value,
                    "must match the service account namespace if specified",
                )],
            ));
        }
        let account = cluster.get(&service_accounts(), Some(namespace), name)?;
        let spec = &body["spec"];
        let audiences = match spec["audiences"].as_array().filter(|a| !a.is_empty()) {
            Some(a) => Value::Array(a.clone()),
            None => json!(DEFAULT_AUDIENCES),
        };
        let seconds = spec["expirationSeconds"].as_i64().unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let mut errors = Vec::new();
        if seconds < MIN_EXPIRATION_SECONDS {
            let detail = "may not specify a duration less than 10 minutes";
            errors.push(FieldError::invalid("spec.expirationSeconds", &seconds.to_string(), detail));
        }
        if seconds > MAX_EXPIRATION_SECONDS {
            let detail = "may not specify a duration larger than 2^32 seconds";
            errors.push(FieldError::invalid("spec.expirationSeconds", &seconds.to_string(), detail));
        }
        if !errors.is_empty() {
            return Err(invalid("", &errors));
        }
        let now = jiff::Timestamp::now();
        let expires = now
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .map_err(|e| ApiError::internal(format!("cannot compute the token expiry: {e}")))?;
        let uid = account["metadata"]["uid"].as_str().unwrap_or_default();
        let token = self.tokens.issue(namespace, name, uid, Some(expires));
        let mut out_spec =
            json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null});
        if spec["boundObjectRef"].is_object() {
            out_spec["boundObjectRef"] = spec["boundObjectRef"].clone();
        }
        Ok((
            201,
            json!({
                "kind": KIND,
                "apiVersion": format!("{GROUP}/v1"),
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(now)},
                "spec": out_spec,
                "status": {"token": token, "expirationTimestamp": rfc3339(expires)},
            }),
        ))
    }
}

impl SubresourceHandler for TokenRequestHandler {
    fn handle<'a>(
        &'a self,
        cluster: &'a Cluster,
        request: SubresourceRequest,
    ) -> BoxFuture<'a, Result<(u16, Value), ApiError>> {
        Box::pin(async move {
            if request.method != "POST" {
                return Err(ApiError::method_not_allowed());
            }
            self.create(cluster, &request)
        })
    }
}
