//! Extension points for part 2: admission (called in the write pipeline before persistence)
//! and handler-served subresources (pods/eviction).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::Cluster;
use crate::error::ApiError;
use crate::resources::ResourceInfo;

/// The admission operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST (and server-side apply creating an object).
    Create,
    /// PUT / PATCH.
    Update,
    /// DELETE.
    Delete,
    /// CONNECT (unused in part 1).
    Connect,
}

/// What admission sees of a write (AdmissionReview `request` material).
#[derive(Clone, Debug)]
pub struct AdmissionRequest {
    /// The resource written (for subresource writes: the parent resource).
    pub resource: Arc<ResourceInfo>,
    /// `status`, `scale`, ... or None.
    pub subresource: Option<String>,
    /// Operation.
    pub operation: Operation,
    /// Namespace (`""` for cluster-scoped).
    pub namespace: String,
    /// Name (`""` on create with generateName, as upstream).
    pub name: String,
    /// The new object (None for DELETE). For scale writes: the Scale.
    pub object: Option<Value>,
    /// The current object (None for CREATE).
    pub old_object: Option<Value>,
    /// dryRun.
    pub dry_run: bool,
    /// The options object (`CreateOptions`/`UpdateOptions`/`DeleteOptions` JSON).
    pub options: Value,
}

/// Called on every API write that does not set `skip_admission`, in the upstream order:
/// `mutate` after decoding/defaulting (before system fields and validation), `validate` on
/// the fully formed object right before persistence.
pub trait AdmissionHook: Send + Sync {
    /// Returns `Some(object)` to replace the object, `None` to keep it, or an error to reject.
    fn mutate<'a>(&'a self, request: &'a AdmissionRequest) -> BoxFuture<'a, Result<Option<Value>, ApiError>>;
    /// Rejects with an error, or allows.
    fn validate<'a>(&'a self, request: &'a AdmissionRequest) -> BoxFuture<'a, Result<(), ApiError>>;
}

/// A request to a handler-served subresource.
#[derive(Clone, Debug)]
pub struct SubresourceRequest {
    /// The parent resource.
    pub resource: Arc<ResourceInfo>,
    /// Subresource name (`eviction`).
    pub subresource: String,
    /// HTTP method (`POST`, `GET`, ...).
    pub method: String,
    /// Namespace (`""` for cluster-scoped).
    pub namespace: String,
    /// Parent object name.
    pub name: String,
    /// Decoded body (JSON or protobuf), `Value::Null` when empty.
    pub body: Value,
    /// `dryRun=All` in the query.
    pub dry_run: bool,
}

/// Serves a subresource; returns the HTTP code and the JSON body.
pub trait SubresourceHandler: Send + Sync {
    /// Handles one request.
    fn handle<'a>(
        &'a self,
        cluster: &'a Cluster,
        request: SubresourceRequest,
    ) -> BoxFuture<'a, Result<(u16, Value), ApiError>>;
}
