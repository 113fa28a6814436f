//! Option and result types of the in-process API.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// A group/version/resource, e.g. `Gvr::new("apps", "v1", "deployments")`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gvr {
    /// Group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
}

impl Gvr {
    /// Builds a Gvr.
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Self { group: group.into(), version: version.into(), resource: resource.into() }
    }
    /// `apps/v1` + `deployments`, or `v1` + `pods`.
    pub fn from_api_version(api_version: &str, resource: &str) -> Self {
        let (group, version) = crate::meta::split_api_version(api_version);
        Self::new(group, version, resource)
    }
}

/// Options of create/update/patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and admit, store nothing.
    pub dry_run: bool,
    /// `fieldManager`: the manager `metadata.managedFields` records the write under (required
    /// for server-side apply).
    pub field_manager: Option<String>,
    /// The client's `User-Agent`: without `field_manager`, its product (the text before the
    /// first `/`) is the manager, as upstream derives it; `unknown` when neither is set.
    pub user_agent: Option<String>,
    /// `force` of server-side apply: take the fields other managers own instead of failing
    /// with a conflict.
    pub force: bool,
    /// Skip admission hooks (writes the server makes itself).
    pub skip_admission: bool,
    /// Keep `status` from the body on create and main-resource updates (seeding, fixtures).
    pub keep_status: bool,
    /// Leave `metadata.managedFields` as they are (server writes upstream makes without field
    /// tracking, such as a pod's binding).
    pub skip_field_tracking: bool,
    /// `fieldValidation`: what the write answers about unknown and duplicate fields (they are
    /// dropped either way). Kube-sim's own writes keep the default `Warn`, whose warnings go
    /// nowhere outside an HTTP request.
    pub field_validation: crate::schema::FieldValidation,
}

impl WriteOptions {
    /// The options of a client identified by `user_agent` (e.g. `kube-controller-manager`).
    pub fn from_user_agent(user_agent: &str) -> Self {
        Self { user_agent: Some(user_agent.to_string()), ..Self::default() }
    }

    /// The field manager of a write with these options (before `unknown` replaces an empty
    /// one).
    pub fn manager(&self) -> String {
        crate::managed_fields::manager_name(self.field_manager.as_deref(), self.user_agent.as_deref())
    }
}

/// Options of list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector` query syntax.
    pub label_selector: Option<String>,
    /// `fieldSelector` query syntax.
    pub field_selector: Option<String>,
    /// Page size, 0 = everything.
    pub limit: usize,
    /// `continue` token from the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion` (accepted; lists are always served from the latest state).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
}

/// A list answer.
#[derive(Clone, Debug)]
pub struct ListResult {
    /// The list's `metadata.resourceVersion`.
    pub resource_version: u64,
    /// The items (shared, never copied).
    pub items: Vec<Arc<Value>>,
    /// `metadata.continue` when more items remain.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`.
    pub remaining_item_count: Option<usize>,
}

/// Options of delete (a subset of `DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy` (recorded; garbage collection is not simulated in part 1).
    pub propagation_policy: Option<String>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// Skip admission hooks.
    pub skip_admission: bool,
}

impl DeleteOptions {
    /// Reads a `DeleteOptions` JSON body (`{}` or null → defaults).
    pub fn from_json(body: &Value) -> Self {
        let dry_run = body["dryRun"].as_array().is_some_and(|a| a.iter().any(|v| v == "All"));
        Self {
            dry_run,
            grace_period_seconds: body["gracePeriodSeconds"].as_i64(),
            propagation_policy: body["propagationPolicy"].as_str().map(String::from).or_else(|| {
                body["orphanDependents"]
                    .as_bool()
                    .map(|o| if o { "Orphan" } else { "Background" }.to_string())
            }),
            precondition_uid: body["preconditions"]["uid"].as_str().map(String::from),
            precondition_resource_version: body["preconditions"]["resourceVersion"]
                .as_str()
                .map(String::from),
            skip_admission: false,
        }
    }
}

/// What a delete did.
#[derive(Clone, Debug)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Deleted(Arc<Value>),
    /// The object has finalizers: it now has `deletionTimestamp` and stays until they are removed.
    Terminating(Arc<Value>),
}

impl DeleteOutcome {
    /// The object in either case.
    pub fn object(&self) -> &Arc<Value> {
        match self {
            Self::Deleted(o) | Self::Terminating(o) => o,
        }
    }
}

/// Options of watch.
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion`: unset/"0" = synthetic ADDED for the current state first.
    pub resource_version: Option<String>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`: ADDED for the current state, then a BOOKMARK marking their end.
    pub send_initial_events: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
}
