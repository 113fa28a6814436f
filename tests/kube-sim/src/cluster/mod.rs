//! The in-process API: every verb on JSON objects with the same semantics as over HTTP.
//! The HTTP layer is a thin translation onto these methods; in-process controllers (part 2)
//! use them directly.

mod binding;
mod crds;
mod delete;
mod hooks;
mod namespaces;
mod options;
mod patching;
mod scale;
mod services;
mod tracking;
mod watch;
mod write;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

pub use binding::bind;
pub use hooks::{AdmissionHook, AdmissionRequest, Operation, SubresourceHandler, SubresourceRequest};
pub use options::{DeleteOptions, DeleteOutcome, Gvr, ListOptions, ListResult, WatchOptions, WriteOptions};
pub(crate) use patching::{field_manager_errors, patch_option_errors};
pub use watch::{WatchEvent, WatchEventType, WatchStream};

use crate::error::ApiError;
use crate::request_log::RequestLog;
use crate::resources::{Catalogue, ExtraSubresource, ResourceInfo};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Store;

/// Tunables of a simulated cluster.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// How many watch events are kept for resuming watches (older → 410 Expired).
    pub history_limit: usize,
    /// Interval between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Watch duration when the client sets no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// Deleting a Pod bound to a node with a non-zero grace period only marks it
    /// (`deletionTimestamp`, `deletionGracePeriodSeconds`); a later delete with grace 0 (the
    /// kubelet's) removes it. Off by default: without a kubelet, pods are removed at once.
    pub graceful_pod_deletion: bool,
    /// `propagationPolicy: Foreground|Orphan` add the `foregroundDeletion`/`orphan` finalizer
    /// (for a garbage collector to process). Off by default: the policy is ignored.
    pub deletion_finalizers: bool,
    /// A namespace controller runs: a deleted Namespace stays `Terminating` until it has
    /// removed the content and the `kubernetes` finalizer. Off by default: the API layer
    /// removes the content and the namespace right after answering the DELETE.
    pub namespace_controller: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            history_limit: 100_000,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            graceful_pod_deletion: false,
            deletion_finalizers: false,
            namespace_controller: false,
        }
    }
}

type SubresourceKey = (String, String, String);

struct Inner {
    store: Store,
    catalogue: Catalogue,
    log: RequestLog,
    config: ClusterConfig,
    admission: RwLock<Option<Arc<dyn AdmissionHook>>>,
    subresources: RwLock<HashMap<SubresourceKey, Arc<dyn SubresourceHandler>>>,
    shutdown: tokio::sync::watch::Sender<bool>,
    service_reservations: std::sync::Mutex<services::Reservations>,
}

/// A simulated cluster: store, served resources, hooks and request log. Cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("resource_version", &self.inner.store.current_rv()).finish()
    }
}

impl Default for Cluster {
    fn default() -> Self {
        Self::new(ClusterConfig::default())
    }
}

/// The namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Cluster {
    /// A cluster with the initial namespaces.
    pub fn new(config: ClusterConfig) -> Self {
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let cluster = Self {
            inner: Arc::new(Inner {
                store: Store::new(config.history_limit),
                catalogue: Catalogue::default(),
                log: RequestLog::default(),
                config,
                admission: RwLock::new(None),
                subresources: RwLock::new(HashMap::new()),
                shutdown,
                service_reservations: std::sync::Mutex::default(),
            }),
        };
        for ns in INITIAL_NAMESPACES {
            let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
            // Cannot fail: fresh store, valid names.
            let _ = cluster.create_blocking_internal(object);
        }
        cluster.register_binding();
        // `PUT namespaces/NAME/finalize` is served by the write pipeline; listed for discovery.
        cluster.inner.catalogue.add_extra_subresource(
            "",
            "namespaces",
            ExtraSubresource {
                name: "finalize".into(),
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                verbs: vec!["update".into()],
            },
        );
        cluster
    }

    /// The object store (low level: no validation, no admission).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }
    /// The served resources.
    pub fn catalogue(&self) -> &Catalogue {
        &self.inner.catalogue
    }
    /// The request log (HTTP requests only).
    pub fn request_log(&self) -> &RequestLog {
        &self.inner.log
    }
    /// The configuration.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }
    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.store.current_rv()
    }
    /// Drops the watch history: every watch (open or resumed) from an older version gets an
    /// `ERROR` event with 410 Expired, so clients relist. Returns the new resourceVersion.
    pub fn compact_history(&self) -> u64 {
        self.inner.store.compact()
    }
    /// Ends every open watch (server shutdown).
    pub fn close_watches(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Installs the admission hook called on every write before persistence.
    pub fn set_admission_hook(&self, hook: Option<Arc<dyn AdmissionHook>>) {
        *self.inner.admission.write().unwrap_or_else(std::sync::PoisonError::into_inner) = hook;
    }
    pub(crate) fn admission_hook(&self) -> Option<Arc<dyn AdmissionHook>> {
        self.inner.admission.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Serves `group`/`plural`/`sub.name` with `handler` and lists it in discovery.
    pub fn register_subresource(
        &self,
        group: &str,
        plural: &str,
        sub: ExtraSubresource,
        handler: Arc<dyn SubresourceHandler>,
    ) {
        let key = (group.to_string(), plural.to_string(), sub.name.clone());
        self.inner
            .subresources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, handler);
        self.inner.catalogue.add_extra_subresource(group, plural, sub);
    }
    /// The handler registered for a subresource.
    pub fn subresource_handler(
        &self,
        group: &str,
        plural: &str,
        sub: &str,
    ) -> Option<Arc<dyn SubresourceHandler>> {
        let key = (group.to_string(), plural.to_string(), sub.to_string());
        self.inner.subresources.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned()
    }

    /// The served resource for `gvr`, or 404 (`the server could not find the requested resource`).
    pub fn resource(&self, gvr: &Gvr) -> Result<Arc<ResourceInfo>, ApiError> {
        self.inner.catalogue.find(&gvr.group, &gvr.version, &gvr.resource).ok_or_else(ApiError::no_route)
    }

    fn check_namespace_arg(info: &ResourceInfo, namespace: Option<&str>) -> Result<String, ApiError> {
        match (info.namespaced, namespace) {
            (true, Some(ns)) if !ns.is_empty() => Ok(ns.to_string()),
            (true, _) => Err(ApiError::bad_request(
                "the server could not find the requested resource: a namespace is required",
            )),
            (false, _) => Ok(String::new()),
        }
    }

    /// Converts a stored object to the form served at `info` (events.k8s.io mapping,
    /// `apiVersion` of the requested version).
    pub(crate) fn served_form(info: &ResourceInfo, object: Arc<Value>) -> Arc<Value> {
        if info.plural == "events" && info.group == "events.k8s.io" {
            return Arc::new(crate::event_mapping::to_events_v1(&object));
        }
        if object["apiVersion"].as_str() != Some(info.api_version().as_str()) && !object.is_null() {
            let mut copy = (*object).clone();
            copy["apiVersion"] = Value::String(info.api_version());
            return Arc::new(copy);
        }
        object
    }

    /// GET one object.
    pub fn get(&self, gvr: &Gvr, namespace: Option<&str>, name: &str) -> Result<Arc<Value>, ApiError> {
        let info = self.resource(gvr)?;
        let ns = Self::check_namespace_arg(&info, namespace)?;
        let object = self
            .inner
            .store
            .get(&info.storage_key(), &ns, name)
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
        Ok(Self::served_form(&info, object))
    }

    /// LIST objects (`namespace: None` = all namespaces).
    pub fn list(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let info = self.resource(gvr)?;
        let namespace = namespace.filter(|ns| !ns.is_empty() && info.namespaced);
        let (labels, fields) =
            parse_selectors(&info, opts.label_selector.as_deref(), opts.field_selector.as_deref())?;
        let resource_version = opts.resource_version.as_deref().unwrap_or_default();
        if opts.resource_version_match.as_deref().is_some_and(|m| !m.is_empty())
            && resource_version.is_empty()
        {
            let error = crate::error::FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            );
            return Err(ApiError::invalid(
                "ListOptions.meta.k8s.io",
                "meta.k8s.io",
                "ListOptions",
                "",
                &[error],
            ));
        }
        if !resource_version.is_empty() {
            parse_resource_version(resource_version)
                .map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}")))?;
        }
        let start_after = match opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(decode_continue(token)?),
            None => None,
        };
        let filter = |o: &Value| selectors_match(labels.as_ref(), fields.as_ref(), o);
        let page =
            self.inner.store.list(&info.storage_key(), namespace, start_after.as_ref(), opts.limit, &filter);
        let continue_token = page.next.as_ref().map(|k| encode_continue(page.rv, k));
        Ok(ListResult {
            resource_version: page.rv,
            items: page.items.into_iter().map(|o| Self::served_form(&info, o)).collect(),
            continue_token,
            remaining_item_count: (page.remaining > 0).then_some(page.remaining),
        })
    }

    /// Creates an object bypassing admission (used for the initial namespaces).
    fn create_blocking_internal(&self, object: Value) -> Result<Arc<Value>, ApiError> {
        let info = self
            .inner
            .catalogue
            .find_kind(
                object["apiVersion"].as_str().unwrap_or_default(),
                object["kind"].as_str().unwrap_or_default(),
            )
            .ok_or_else(ApiError::no_route)?;
        let mut object = object;
        // Created by the apiserver itself, as upstream's system namespaces are.
        let options = WriteOptions::from_user_agent("kube-apiserver");
        let entries = self.with_write(&info, write::Target::Main, &options, |w| {
            crate::managed_fields::track_update(w, None, &object)
        });
        crate::managed_fields::set_managed_fields(&mut object, entries);
        let meta = crate::meta::meta_mut(&mut object);
        meta.insert("uid".into(), Value::String(crate::meta::new_uid()));
        meta.insert("creationTimestamp".into(), Value::String(crate::meta::now_rfc3339()));
        self.inner
            .store
            .commit(crate::store::Mutation::Create { key: info.storage_key(), object })
            .map_err(|_| ApiError::already_exists(&info.group, &info.plural, ""))
    }
}

/// Parses the selectors of a list/watch (400 on syntax errors or unsupported fields).
pub(crate) fn parse_selectors(
    info: &ResourceInfo,
    label_selector: Option<&str>,
    field_selector: Option<&str>,
) -> Result<(Option<LabelSelector>, Option<FieldSelector>), ApiError> {
    let labels = match label_selector.filter(|s| !s.trim().is_empty()) {
        Some(s) => Some(LabelSelector::parse(s).map_err(ApiError::bad_request)?),
        None => None,
    };
    let fields = match field_selector.filter(|s| !s.trim().is_empty()) {
        Some(s) => Some(FieldSelector::parse(&info.plural, s).map_err(ApiError::bad_request)?),
        None => None,
    };
    Ok((labels, fields))
}

/// True when the object passes both (optional) selectors.
pub(crate) fn selectors_match(
    labels: Option<&LabelSelector>,
    fields: Option<&FieldSelector>,
    object: &Value,
) -> bool {
    labels.is_none_or(|l| l.matches_object(object)) && fields.is_none_or(|f| f.matches_object(object))
}

/// A `resourceVersion` parameter as the storage layer reads it, with its error worded as
/// upstream's (`resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`).
pub(crate) fn parse_resource_version(rv: &str) -> Result<u64, String> {
    rv.parse().map_err(|e: std::num::ParseIntError| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow => "value out of range",
            _ => "invalid syntax",
        };
        format!("resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}")
    })
}

fn encode_continue(rv: u64, key: &(String, String)) -> String {
    let token = serde_json::json!({"v": "meta.k8s.io/v1", "rv": rv, "start": [key.0, key.1]});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// Upstream's `storage.DecodeContinue` errors, as the list answers them (400 `invalid continue
/// token: …`); kube-sim's start key is its own (namespace and name), so its errors are generic.
fn decode_continue(token: &str) -> Result<(String, String), ApiError> {
    let bad = |why: String| {
        ApiError::bad_request(format!("invalid continue token: continue key is not valid{why}"))
    };
    // Go's `RawURLEncoding` is not strict: it ignores the unused bits of the last character.
    let lenient = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    let bytes = lenient.decode(token).map_err(|e| {
        // Go's `CorruptInputError` names the offset of the first byte it cannot use.
        let offset = match e {
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            base64::DecodeError::InvalidLength(at) => at,
            base64::DecodeError::InvalidPadding => token.len(),
        };
        bad(format!(": illegal base64 data at input byte {offset}"))
    })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(": {}", crate::go_json::syntax_error(&bytes).unwrap_or_else(|| e.to_string())))
    })?;
    match value["v"].as_str() {
        Some("meta.k8s.io/v1") => {}
        other => {
            return Err(bad(format!(
                ": server does not recognize this encoded version {}",
                other.unwrap_or_default()
            )));
        }
    }
    let start = |i: usize| value["start"][i].as_str().map(str::to_owned).ok_or_else(|| bad(String::new()));
    Ok((start(0)?, start(1)?))
}
