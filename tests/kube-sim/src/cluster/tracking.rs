//! Field ownership on the write pipeline: the [`Write`] a request is for field tracking (its
//! manager, schema, API version, subresource and reset fields) and the `/scale` subresource's
//! mapping of entries onto its parent. The rules themselves are in [`crate::managed_fields`].

use serde_json::Value;

use super::Cluster;
use super::options::WriteOptions;
use super::scale::{apply_scale, to_scale};
use super::write::Target;
use crate::error::ApiError;
use crate::managed_fields::{self, NO_SCHEMA, Write};
use crate::meta::now_rfc3339;
use crate::resources::{ResourceInfo, ScalePaths, StorageKey};

/// How a write's `managedFields` are decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tracking {
    /// As an update by the write's manager, from the entries the request sends (main resource)
    /// or the stored ones.
    Update,
    /// Already decided (an apply, a `/scale` write): the requested object's are kept.
    Keep,
}

/// What a `/scale` write does to the Scale.
pub(super) enum ScaleChange<'a> {
    /// Replaced by (PUT) or patched into this Scale.
    To(&'a Value),
    /// Server-side apply of this configuration.
    Apply { config: &'a Value, force: bool },
}

/// The `openAPIV3Schema` of `version` in a CRD object.
fn version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    let versions = crd.get("spec")?.get("versions")?.as_array()?;
    let served = versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    served.get("schema")?.get("openAPIV3Schema").filter(|s| s.is_object())
}

impl Cluster {
    /// Runs `tracked` with the field-tracking view of a write by `opts` to `target` of `info`.
    pub(super) fn with_write<R>(
        &self,
        info: &ResourceInfo,
        target: Target,
        opts: &WriteOptions,
        tracked: impl FnOnce(&Write<'_>) -> R,
    ) -> R {
        // A custom resource is tracked with its CRD's schema (untyped when there is none).
        let crd = match info.builtin {
            true => None,
            false => {
                let key = StorageKey {
                    group: "apiextensions.k8s.io".into(),
                    plural: "customresourcedefinitions".into(),
                };
                self.store().get(&key, "", &format!("{}.{}", info.plural, info.group))
            }
        };
        let crd_schema = match &crd {
            Some(crd) => Some(version_schema(crd, &info.version).unwrap_or(NO_SCHEMA)),
            None if !info.builtin => Some(NO_SCHEMA),
            None => None,
        };
        let subresource = target.name().unwrap_or_default();
        let manager = opts.manager();
        let now = now_rfc3339();
        let api_version = info.api_version();
        let write = Write {
            kind: &info.kind,
            crd_schema,
            api_version: &api_version,
            subresource: &subresource,
            reset: managed_fields::reset_fields(&info.group, &info.plural, info.status, &subresource),
            manager: &manager,
            now: &now,
        };
        tracked(&write)
    }

    /// The object after a write to its `/scale` subresource, with the parent's new entries:
    /// the change is tracked on the Scale (whose entries are the parent's owners of the
    /// replicas), then mapped back (upstream's `ScaleHandler`).
    pub(super) fn scale_write(
        &self,
        info: &ResourceInfo,
        paths: &ScalePaths,
        current: &Value,
        change: ScaleChange<'_>,
        opts: &WriteOptions,
    ) -> Result<(Value, Value), ApiError> {
        let parent_entries = current.get("metadata").and_then(|m| m.get("managedFields"));
        let mut old_scale = to_scale(paths, current);
        managed_fields::set_managed_fields(
            &mut old_scale,
            managed_fields::scale_entries(parent_entries, &paths.spec_replicas),
        );
        let scale_info = ResourceInfo {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            builtin: true,
            status: false,
            ..info.clone()
        };
        let (new_scale, scale_entries) =
            self.with_write(&scale_info, Target::Scale, opts, |write| match change {
                ScaleChange::To(new) => {
                    Ok((new.clone(), managed_fields::track_update(write, Some(&old_scale), new)))
                }
                ScaleChange::Apply { config, force } => {
                    let mut applied = managed_fields::track_apply(write, Some(&old_scale), config, force)?;
                    let entries = applied
                        .get_mut("metadata")
                        .and_then(|m| m.as_object_mut())
                        .and_then(|m| m.remove("managedFields"));
                    Ok::<_, ApiError>((applied, entries))
                }
            })?;
        let mut object = apply_scale(paths, current, &new_scale);
        let entries = managed_fields::scale_to_parent(
            parent_entries,
            scale_entries.as_ref(),
            &paths.spec_replicas,
            &info.api_version(),
        );
        managed_fields::set_managed_fields(&mut object, entries);
        Ok((object, new_scale))
    }
}
