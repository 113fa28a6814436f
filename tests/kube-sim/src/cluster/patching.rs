//! PATCH on the in-process API: every patch type on the main resource, `/status` and
//! `/scale`, and server-side apply creating a missing object.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::options::{Gvr, WriteOptions};
use super::scale::{apply_scale, to_scale};
use super::write::{Target, check_type_meta};
use crate::error::ApiError;
use crate::meta::meta_mut;
use crate::patch::{PatchError, PatchType, apply_patch};
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

impl Cluster {
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
        let fields = crate::schema::PatchFields::new(&info, patch_type, patch, opts.field_validation);
        let key = info.storage_key();
        if target == Target::Main
            && patch_type == PatchType::Apply
            && self.store().get(&key, &ns, name).is_none()
        {
            let empty = json!({});
            let mut object =
                apply_patch(&info.api_version(), &info.kind, info.builtin, &empty, patch_type, patch)
                    .map_err(patch_error)?;
            fields.check(Schema::of(&info), &mut object)?;
            check_type_meta(&info, &mut object)?;
            let meta = meta_mut(&mut object);
            meta.insert("name".into(), json!(name));
            let created = self
                .create_checked(&info, Some(&ns).filter(|n| !n.is_empty()).map(|n| n.as_str()), object, opts)
                .await?;
            return Ok((Self::served_form(&info, created), true));
        }
        let result = self
            .guaranteed_update(&info, &ns, name, target, opts, |current| {
                let served = Self::served_form(&info, current.clone());
                match (target, &info.scale) {
                    (Target::Scale, Some(paths)) => {
                        let scale = to_scale(paths, current);
                        let mut patched =
                            apply_patch("autoscaling/v1", "Scale", true, &scale, patch_type, patch)
                                .map_err(patch_error)?;
                        fields.check(Schema::scale(), &mut patched)?;
                        if object_rv(&patched) != object_rv(current) {
                            return Err(ApiError::optimistic_lock(&info.group, &info.plural, name));
                        }
                        crate::validation::validate_scale(name, &patched)?;
                        Ok(apply_scale(paths, current, &patched))
                    }
                    _ => {
                        let mut patched = apply_patch(
                            &info.api_version(),
                            &info.kind,
                            info.builtin,
                            &served,
                            patch_type,
                            patch,
                        )
                        .map_err(patch_error)?;
                        fields.check(Schema::of(&info), &mut patched)?;
                        if object_rv(&patched) != object_rv(current) {
                            return Err(ApiError::optimistic_lock(&info.group, &info.plural, name));
                        }
                        if info.group == "events.k8s.io" {
                            patched = crate::event_mapping::to_core(&patched);
                        }
                        Ok(patched)
                    }
                }
            })
            .await?;
        Ok((self.answer_form(&info, target, result), false))
    }
}
