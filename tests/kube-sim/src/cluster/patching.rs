//! PATCH on the in-process API: every patch type on the main resource, `/status` and
//! `/scale`, and server-side apply (with field ownership) creating a missing object.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::options::{Gvr, WriteOptions};
use super::scale::to_scale;
use super::tracking::{ScaleChange, Tracking};
use super::write::{Target, check_type_meta};
use crate::error::{ApiError, FieldError};
use crate::managed_fields;
use crate::meta::meta_str;
use crate::patch::{PatchError, PatchType, apply_configuration, apply_patch};
use crate::resources::ResourceInfo;
use crate::schema::Schema;
use crate::store::object_rv;

fn patch_error(e: PatchError) -> ApiError {
    match e {
        PatchError::BadRequest(m) => ApiError::bad_request(m),
        // Upstream wraps these in `NewGenericServerResponse(422)`, which drops the message.
        PatchError::Unprocessable(_) => ApiError {
            code: 422,
            reason: "Invalid".into(),
            message: "the server rejected our request due to an error in our request".into(),
            details: Some(json!({})),
        },
        PatchError::UnsupportedMediaType(m) => ApiError::unsupported_media_type(m),
    }
}

/// Upstream's `ValidatePatchOptions`: apply needs a field manager, only apply takes `force`;
/// a field manager is at most 128 bytes of printable characters. (`dryRun` values are checked
/// where the query is read; over HTTP any `force` parameter counts as set.)
pub(crate) fn patch_option_errors(patch_type: PatchType, opts: &WriteOptions) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let manager = opts.field_manager.as_deref().unwrap_or_default();
    match patch_type {
        PatchType::Apply if manager.is_empty() => {
            errors.push(FieldError::required("fieldManager", "is required for apply patch"));
        }
        PatchType::Apply => {}
        _ if opts.force => {
            errors.push(FieldError::forbidden("force", "may not be specified for non-apply patch"));
        }
        _ => {}
    }
    errors.extend(field_manager_errors(manager));
    errors
}

/// Upstream's `ValidateFieldManager`.
pub(crate) fn field_manager_errors(manager: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if manager.len() > managed_fields::MAX_MANAGER_LENGTH {
        errors.push(FieldError {
            cause: "FieldValueTooLong",
            field: "fieldManager".into(),
            message: format!(
                "fieldManager: Too long: may not be more than {} bytes",
                managed_fields::MAX_MANAGER_LENGTH
            ),
        });
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() || (c != ' ' && c.is_whitespace()) {
            errors.push(FieldError::invalid(
                "fieldManager",
                &format!("\"{manager}\""),
                &format!("invalid character U+{:04X} (at position {i})", u32::from(c)),
            ));
        }
    }
    errors
}

/// Upstream's `checkName` and namespace check on a patched object.
fn check_name(info: &ResourceInfo, object: &Value, name: &str, ns: &str) -> Result<(), ApiError> {
    match meta_str(object, "name") {
        "" => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name} based on URL) was undeterminable: name must be provided"
            )));
        }
        object_name if object_name != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({object_name}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    let object_ns = meta_str(object, "namespace");
    if info.namespaced && !object_ns.is_empty() && object_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

impl Cluster {
    /// PATCH of the object or a subresource. Returns the answer and whether it created the
    /// object (server-side apply of a missing object → 201).
    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        patch: &[u8],
        opts: &WriteOptions,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let info = self.resource(gvr)?;
        let ns = Self::check_namespace_arg(&info, namespace)?;
        let target = Target::parse(&info, subresource)?;
        let option_errors = patch_option_errors(patch_type, opts);
        if !option_errors.is_empty() {
            return Err(ApiError::invalid(
                "PatchOptions.meta.k8s.io",
                "meta.k8s.io",
                "PatchOptions",
                "",
                &option_errors,
            ));
        }
        let fields = crate::schema::PatchFields::new(&info, patch_type, patch, opts.field_validation);
        let config = match (patch_type, target) {
            (PatchType::Apply, Target::Scale) => {
                Some(apply_configuration("autoscaling/v1", "Scale", true, patch).map_err(patch_error)?)
            }
            (PatchType::Apply, _) => Some(
                apply_configuration(&info.api_version(), &info.kind, info.builtin, patch)
                    .map_err(patch_error)?,
            ),
            _ => None,
        };
        let key = info.storage_key();
        if let Some(config) = &config
            && target == Target::Main
            && self.store().get(&key, &ns, name).is_none()
        {
            fields.check(Schema::of(&info), &mut json!({}))?;
            let mut object = self.with_write(&info, target, opts, |w| {
                managed_fields::track_apply(w, None, config, opts.force)
            })?;
            crate::schema::default_custom(Schema::of(&info), &mut object);
            check_name(&info, &object, name, &ns)?;
            check_type_meta(&info, &mut object)?;
            let namespace = Some(ns.as_str()).filter(|n| !n.is_empty());
            let created = self.create_checked(&info, namespace, object, opts, Tracking::Keep).await?;
            return Ok((Self::served_form(&info, created), true));
        }
        let result = self
            .guaranteed_update(&info, &ns, name, target, opts, |current| {
                let served = Self::served_form(&info, current.clone());
                match (target, &info.scale) {
                    (Target::Scale, Some(paths)) => {
                        let mut change_of;
                        let change = match &config {
                            Some(config) => {
                                fields.check(Schema::scale(), &mut json!({}))?;
                                ScaleChange::Apply { config, force: opts.force }
                            }
                            None => {
                                change_of = apply_patch(
                                    "autoscaling/v1",
                                    "Scale",
                                    true,
                                    &to_scale(paths, current),
                                    patch_type,
                                    patch,
                                )
                                .map_err(patch_error)?;
                                fields.check(Schema::scale(), &mut change_of)?;
                                ScaleChange::To(&change_of)
                            }
                        };
                        let (object, scale) = self.scale_write(&info, paths, current, change, opts)?;
                        if object_rv(&scale) != object_rv(current) {
                            return Err(ApiError::optimistic_lock(&info.group, &info.plural, name));
                        }
                        crate::validation::validate_scale(name, &scale)?;
                        Ok((object, Tracking::Keep))
                    }
                    _ => {
                        let (mut patched, tracking) = match &config {
                            Some(config) => {
                                fields.check(Schema::of(&info), &mut json!({}))?;
                                let mut applied = self.with_write(&info, target, opts, |w| {
                                    managed_fields::track_apply(w, Some(&served), config, opts.force)
                                })?;
                                crate::schema::default_custom(Schema::of(&info), &mut applied);
                                (applied, Tracking::Keep)
                            }
                            None => (
                                apply_patch(
                                    &info.api_version(),
                                    &info.kind,
                                    info.builtin,
                                    &served,
                                    patch_type,
                                    patch,
                                )
                                .map_err(patch_error)?,
                                Tracking::Update,
                            ),
                        };
                        if tracking == Tracking::Update {
                            fields.check(Schema::of(&info), &mut patched)?;
                        }
                        if object_rv(&patched) != object_rv(current) {
                            return Err(ApiError::optimistic_lock(&info.group, &info.plural, name));
                        }
                        if target == Target::Main {
                            check_name(&info, &patched, name, &ns)?;
                        }
                        if info.group == "events.k8s.io" {
                            patched = crate::event_mapping::to_core(&patched);
                        }
                        Ok((patched, tracking))
                    }
                }
            })
            .await?;
        Ok((self.answer_form(&info, target, result), false))
    }
}
