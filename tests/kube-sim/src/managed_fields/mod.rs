//! Field ownership: `metadata.managedFields` as the apiserver (v1.35) maintains it on every
//! write, and server-side apply with its conflicts. A pure port of upstream's field manager
//! (`k8s.io/apimachinery/pkg/util/managedfields`, the managers wrapped by
//! `NewDefaultFieldManager`) over structured-merge-diff (`merge.Updater`), on JSON objects.
//!
//! What a write does to the entries ([`track_update`], [`track_apply`]):
//!
//! * The manager is `?fieldManager=`, else the User-Agent's product (the text before its first
//!   `/`: `kubectl-client-side-apply`, `kube-controller-manager`), else `unknown`
//!   ([`manager_name`]).
//! * **Create, update, non-apply patch** (`Update` entries, one per manager, API version and
//!   subresource): the manager gets what it added or changed (a create compares with the kind's
//!   zero object), everyone else loses those fields and every removed field. Its entry is
//!   merged with its earlier one and gets the time only when it changed something. An object
//!   without entries is not tracked by updates; a create always is. Entries the request sends
//!   are used instead of the stored ones (kubectl rewrites them that way); `managedFields: []`
//!   clears them (and so ends tracking); on `/status` and `/scale` they are ignored.
//! * **Apply** (`Apply` entries, one per manager and subresource): see [`updater`]. Applying to
//!   an object without entries first gives everything in it to `before-first-apply`. A no-op
//!   apply still records the applier's fields, without a time.
//! * Never tracked: `apiVersion`, `kind`, `metadata` itself and its `name`, `namespace`, `uid`,
//!   `resourceVersion`, `generation`, `creationTimestamp`, `selfLink`, `managedFields`; nor
//!   the fields the endpoint's strategy resets ([`reset_fields`]: `status` on the main
//!   resource, `spec` on `/status`).
//! * More than 10 updaters: the oldest are merged into `ancient-changes` per API version.
//! * `/scale`: tracked on the Scale, then mapped onto the parent ([`scale`]).
//! * `kubectl` (the manager of `kubectl apply --server-side`): [`last_applied`].
//!
//! Simplified: entries of other API versions are compared as if they were of the request's
//! (kube-sim serves one version per kind; upstream converts the objects); events written
//! through `events.k8s.io` are tracked in their stored core/v1 form.

mod entries;
pub(crate) mod fieldpath;
mod last_applied;
pub(crate) mod scale;
mod schema;
mod skeleton;
mod typed;
mod updater;

use serde_json::{Value, json};

use crate::error::ApiError;
use entries::{Managed, ManagerId, Operation, VersionedSet};
use fieldpath::{Path, PathElement, Set, path_string};
pub(crate) use schema::Slot;
use updater::{ApplyError, Updater};

/// Upstream's `FieldManagerMaxLength`.
pub(crate) const MAX_MANAGER_LENGTH: usize = 128;

/// Upstream's `DefaultMaxUpdateManagers`.
const MAX_UPDATE_MANAGERS: usize = 10;

/// One write, as field tracking sees it.
#[derive(Clone, Debug)]
pub(crate) struct Write<'a> {
    /// The object's kind (its schema).
    pub kind: &'a str,
    /// The `openAPIV3Schema` of a custom resource's version; `None` for built-in kinds.
    pub crd_schema: Option<&'a Value>,
    /// The request's group/version (`apps/v1`), recorded in the entries.
    pub api_version: &'a str,
    /// `""`, `status` or `scale`.
    pub subresource: &'a str,
    /// The fields the endpoint resets ([`reset_fields`]).
    pub reset: Set,
    /// The manager ([`manager_name`]).
    pub manager: &'a str,
    /// The time of the write (RFC 3339, seconds).
    pub now: &'a str,
}

/// The manager of a write: `fieldManager`, else the User-Agent up to its first `/` without
/// unprintable characters, cut at 128 bytes (`managerOrUserAgent`). Empty becomes `unknown`
/// in the entries.
pub(crate) fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let product = user_agent.unwrap_or_default().split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in product.chars().filter(|c| !c.is_control() && (*c == ' ' || !c.is_whitespace())) {
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

fn path(parts: &[&str]) -> Path {
    parts.iter().map(|p| PathElement::field(p)).collect()
}

fn set_of(paths: &[&[&str]]) -> Set {
    let mut set = Set::new();
    for parts in paths {
        set.insert(&path(parts));
    }
    set
}

/// The fields the endpoint's strategy resets (`GetResetFields`), which nobody owns through it:
/// `status` on the main resource of kinds with a status subresource; on `/status`, `spec`
/// (Deployments also `metadata.labels`, Pods `metadata.deletionTimestamp` and
/// `metadata.ownerReferences`, CRDs all `metadata`).
pub(crate) fn reset_fields(group: &str, plural: &str, has_status: bool, subresource: &str) -> Set {
    match subresource {
        "" if has_status => set_of(&[&["status"]]),
        "status" => match (group, plural) {
            ("apps", "deployments") => set_of(&[&["spec"], &["metadata", "labels"]]),
            ("", "pods") => {
                set_of(&[&["spec"], &["metadata", "deletionTimestamp"], &["metadata", "ownerReferences"]])
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => set_of(&[&["metadata"], &["spec"]]),
            _ => set_of(&[&["spec"]]),
        },
        _ => Set::new(),
    }
}

/// The paths no entry ever holds (`stripMetaManager`).
fn never_tracked() -> Set {
    let metadata = ["name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation"];
    let mut set = set_of(&[&["apiVersion"], &["kind"], &["metadata"], &["metadata", "managedFields"]]);
    for field in metadata.iter().chain(&["resourceVersion"]) {
        set.insert(&path(&["metadata", field]));
    }
    set
}

fn strip(fields: &mut entries::Fields, manager: &ManagerId) {
    if let Some(versioned) = fields.get_mut(manager) {
        versioned.set = versioned.set.difference(&never_tracked());
        if versioned.set.is_empty() {
            fields.remove(manager);
        }
    }
}

fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
        metadata.remove("managedFields");
    }
    copy
}

fn managed_fields_of(object: &Value) -> Option<&Value> {
    object.get("metadata")?.get("managedFields")
}

impl Write<'_> {
    fn updater(&self) -> Updater<'_> {
        Updater {
            slot: Slot::root(self.kind, self.crd_schema),
            api_version: self.api_version.to_string(),
            reset: self.reset.clone(),
        }
    }

    /// An update by `manager` from the capping manager down (`capManagersManager` →
    /// `buildManagerInfoManager` → `managedFieldsUpdater` → `stripMetaManager` → the updater).
    fn update(
        &self,
        live: &Value,
        new: &Value,
        mut managed: Managed,
        manager: &str,
    ) -> Result<Managed, String> {
        let id = ManagerId::new(manager, Operation::Update, self.api_version, self.subresource);
        let current = ManagerId::placeholder("current-operation");
        let mut fields = self.updater().update(live, new, managed.fields, &current)?;
        strip(&mut fields, &current);
        // The operation took fields: the object changed, so the manager's entry (merged with
        // its earlier one) gets the time.
        if let Some(taken) = fields.remove(&current) {
            let set = match fields.get(&id) {
                Some(previous) => taken.set.union(&previous.set),
                None => taken.set,
            };
            fields.insert(id.clone(), VersionedSet { set, ..taken });
            managed.times.insert(id, self.now.to_string());
        }
        managed.fields = fields;
        cap_update_managers(&mut managed);
        Ok(managed)
    }

    /// An apply by the write's manager from the skipping manager down, returning the new
    /// object (without entries; `live` itself when nothing changed) and the entries.
    fn apply(
        &self,
        live: &Value,
        config: &Value,
        mut managed: Managed,
        force: bool,
    ) -> Result<(Value, Managed), ApplyError> {
        if managed.fields.is_empty() && !live.as_object().is_none_or(serde_json::Map::is_empty) {
            // Nobody applied yet: what is there belongs to `before-first-apply`.
            let empty = skeleton::empty_object(self.kind);
            managed =
                self.update(&empty, live, managed, "before-first-apply").map_err(ApplyError::Invalid)?;
        }
        let id = ManagerId::new(self.manager, Operation::Apply, "", self.subresource);
        let (new, mut fields) = self.updater().apply(live, config, managed.fields, &id, force)?;
        strip(&mut fields, &id);
        managed.fields = fields;
        let object = match new {
            Some(mut object) => {
                managed.times.insert(id, self.now.to_string());
                typed::drop_nulls(&mut object);
                object
            }
            None => live.clone(),
        };
        Ok((object, managed))
    }

    /// An apply with kubectl's last-applied rules (`lastAppliedManager`,
    /// `lastAppliedUpdater`).
    fn apply_as_kubectl(
        &self,
        live: &Value,
        config: &Value,
        managed: Managed,
        force: bool,
    ) -> Result<(Value, Managed), ApplyError> {
        let kubectl = self.manager == "kubectl";
        let (mut object, managed) = match self.apply(live, config, managed.clone(), force) {
            Err(ApplyError::Conflicts(conflicts)) if kubectl => {
                let slot = Slot::root(self.kind, self.crd_schema);
                let Some(allowed) = last_applied::allowed_conflicts(live, self.api_version, slot) else {
                    return Err(ApplyError::Conflicts(conflicts));
                };
                let remaining: Vec<_> =
                    conflicts.into_iter().filter(|(_, path)| !allowed.has(path)).collect();
                if !remaining.is_empty() {
                    return Err(ApplyError::Conflicts(remaining));
                }
                self.apply(live, config, managed, true)?
            }
            other => other?,
        };
        if kubectl {
            last_applied::update_annotation(&mut object, config);
        }
        Ok((object, managed))
    }
}

/// Merges the oldest update entries into `ancient-changes` buckets (one per API version) so
/// that at most 10 remain (`capManagersManager`).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> =
        managed.fields.iter().filter(|(_, v)| !v.applied).map(|(id, _)| id.clone()).collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let seconds = |id: &ManagerId| {
        managed.times.get(id).and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, |t| t.as_second())
    };
    updaters.sort_by(|a, b| (seconds(a), a).cmp(&(seconds(b), b)));
    let mut first_of_version: std::collections::HashMap<String, ManagerId> = std::collections::HashMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(versioned) = managed.fields.get(&manager).cloned() else { continue };
        let time = managed.times.get(&manager).cloned();
        let bucket = ManagerId::new("ancient-changes", Operation::Update, &versioned.api_version, "");
        match first_of_version.get(&versioned.api_version) {
            Some(first) => {
                if !managed.fields.contains_key(&bucket)
                    && let Some(moved) = managed.fields.remove(first)
                {
                    managed.fields.insert(bucket.clone(), moved);
                }
                let union = managed
                    .fields
                    .get(&bucket)
                    .map_or_else(Set::new, |b| b.set.clone())
                    .union(&versioned.set);
                managed
                    .fields
                    .insert(bucket.clone(), VersionedSet { set: union, applied: false, ..versioned });
                managed.fields.remove(&manager);
                length -= 1;
                match time {
                    Some(time) => managed.times.insert(bucket, time),
                    None => managed.times.remove(&bucket),
                };
            }
            None => {
                first_of_version.insert(versioned.api_version.clone(), manager);
            }
        }
    }
}

/// The entries the request's object says to start from (`decodeLiveOrNew`): the object's when
/// it sends valid non-empty ones (not on subresources), none when it sends `[]`, else the
/// stored ones. Undecodable entries count as none.
fn starting_entries(write: &Write<'_>, live: Option<&Value>, new: &Value) -> Managed {
    let stored = || entries::decode(live.and_then(managed_fields_of)).unwrap_or_default();
    if !write.subresource.is_empty() {
        return stored();
    }
    match managed_fields_of(new) {
        Some(sent) if entries::is_reset(sent) => Managed::default(),
        sent => match entries::decode(sent) {
            Ok(managed) if !managed.fields.is_empty() => managed,
            _ => stored(),
        },
    }
}

/// The `managedFields` to store for an update (create when `live` is `None`) that makes the
/// object `new`; `None` for none. `new` may carry entries of the request.
pub(crate) fn track_update(write: &Write<'_>, live: Option<&Value>, new: &Value) -> Option<Value> {
    let managed = starting_entries(write, live, new);
    if managed.fields.is_empty() && live.is_some() {
        // Updates do not start tracking an object that has no entries.
        return None;
    }
    let empty;
    let live = match live {
        Some(live) => without_managed_fields(live),
        None => {
            empty = skeleton::empty_object(write.kind);
            empty
        }
    };
    // An object the schema cannot describe is stored without entries, as upstream does.
    let managed = write.update(&live, &without_managed_fields(new), managed, write.manager).ok()?;
    entries::encode(&managed)
}

/// Server-side apply of `config` by the write's manager to `live` (`None`: the object does
/// not exist yet). Returns the new object with its `managedFields`; `live` unchanged (with
/// possibly new entries) when the configuration changes nothing. 409 with upstream's message
/// on conflicts (unless `force`).
pub(crate) fn track_apply(
    write: &Write<'_>,
    live: Option<&Value>,
    config: &Value,
    force: bool,
) -> Result<Value, ApiError> {
    let managed = entries::decode(live.and_then(managed_fields_of))
        .map_err(|e| ApiError::internal(format!("failed to decode managed fields: {e}")))?;
    let live = live.map_or_else(|| json!({}), without_managed_fields);
    let (mut object, managed) =
        write.apply_as_kubectl(&live, config, managed, force).map_err(|error| match error {
            ApplyError::Conflicts(conflicts) => conflict_error(&conflicts),
            // Upstream's plain 500 for a configuration its schema rejects (duplicate keys, ...).
            ApplyError::Invalid(message) => {
                let meta =
                    |field: &str| config.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str);
                let (group, version) = crate::meta::split_api_version(write.api_version);
                ApiError::plain_internal(format!(
                    "failed to create typed patch object ({}/{}; {group}/{version}, Kind={}): {message}",
                    meta("namespace").unwrap_or_default(),
                    meta("name").unwrap_or_default(),
                    write.kind
                ))
            }
        })?;
    set_managed_fields(&mut object, entries::encode(&managed));
    Ok(object)
}

/// The schema of a custom resource whose CRD has none: everything untyped but `metadata`.
pub(crate) const NO_SCHEMA: &Value = &Value::Null;

/// The object an apply of `config` makes of `live` without field ownership (nothing removed,
/// no conflicts), `null` fields dropped. For a custom resource without a known schema, lists
/// are replaced and objects merged.
pub(crate) fn merge_configuration(
    kind: &str,
    builtin: bool,
    live: &Value,
    config: &Value,
) -> Result<Value, String> {
    let slot = Slot::root(kind, (!builtin).then_some(NO_SCHEMA));
    let mut merged = typed::merge(Some(live), Some(config), slot)?.unwrap_or(Value::Null);
    typed::drop_nulls(&mut merged);
    Ok(merged)
}

/// Puts `entries` into `object`'s metadata (removes them for `None`).
pub(crate) fn set_managed_fields(object: &mut Value, entries: Option<Value>) {
    let Some(Value::Object(metadata)) = object.get_mut("metadata") else {
        if let (Some(entries), Value::Object(map)) = (entries, object) {
            map.insert("metadata".into(), json!({"managedFields": entries}));
        }
        return;
    };
    match entries {
        Some(entries) => metadata.insert("managedFields".into(), entries),
        None => metadata.remove("managedFields"),
    };
}

/// The 409 of an apply with conflicts (`NewConflictError`).
fn conflict_error(conflicts: &[(ManagerId, Path)]) -> ApiError {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(manager, path)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", manager.describe()),
                "field": path_string(path)})
        })
        .collect();
    let message = match conflicts {
        [(manager, path)] => {
            format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                manager.describe(),
                path_string(path)
            )
        }
        _ => {
            let mut lines = Vec::new();
            let mut last: Option<&ManagerId> = None;
            // Conflicts come grouped by manager, in the order of their identities.
            for (manager, path) in conflicts {
                if last != Some(manager) {
                    lines.push(format!("conflicts with {}:", manager.describe()));
                    last = Some(manager);
                }
                lines.push(format!("- {}", path_string(path)));
            }
            format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
        }
    };
    ApiError { code: 409, reason: "Conflict".into(), message, details: Some(json!({"causes": causes})) }
}

/// The `/scale` write of `manager`: the parent's new entries, given its stored ones and the
/// entries the Scale's update (tracked with [`track_update`] on the Scale) produced.
pub(crate) fn scale_to_parent(
    parent_entries: Option<&Value>,
    scale_entries: Option<&Value>,
    replicas_path: &str,
    parent_version: &str,
) -> Option<Value> {
    let parent = entries::decode(parent_entries).unwrap_or_default();
    let scale_managed = entries::decode(scale_entries).unwrap_or_default();
    let path = scale::replicas_path(replicas_path);
    entries::encode(&scale::to_parent(&parent, &scale_managed, &path, parent_version))
}

/// The entries of the Scale view of a parent with `parent_entries`.
pub(crate) fn scale_entries(parent_entries: Option<&Value>, replicas_path: &str) -> Option<Value> {
    let parent = entries::decode(parent_entries).unwrap_or_default();
    entries::encode(&scale::to_subresource(&parent, &scale::replicas_path(replicas_path)))
}

#[cfg(test)]
mod tests;
