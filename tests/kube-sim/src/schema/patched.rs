//! The unknown-field check of one PATCH request, as upstream's patch handler does it
//! (`endpoints/handlers/patch.go`): the patch body's own strict errors (found once), then the
//! unknown fields of each attempt's patched object; server-side apply instead checks the
//! applied configuration with structured-merge-diff's rules ([`super::apply`]).

use serde_json::Value;

use super::strict::{Quoting, StrictError};
use super::tree::{JSON_PATCH_OP, Node, tree};
use super::{FieldValidation, Schema, apply, decode, join, prune, warn};
use crate::error::{ApiError, FieldError};
use crate::go_fmt;
use crate::patch::PatchType;
use crate::resources::ResourceInfo;

/// The check of one PATCH of `info`'s objects: build it once, then [`PatchFields::check`] each
/// patched object (guaranteed updates retry).
#[derive(Debug)]
pub struct PatchFields<'a> {
    info: &'a ResourceInfo,
    patch_type: PatchType,
    body: &'a [u8],
    directive: FieldValidation,
    /// The body's own strict errors (not looked for under `Ignore` or for apply).
    body_errors: Vec<StrictError>,
}

impl<'a> PatchFields<'a> {
    /// The check of a `patch_type` patch `body` under `directive`.
    pub fn new(
        info: &'a ResourceInfo,
        patch_type: PatchType,
        body: &'a [u8],
        directive: FieldValidation,
    ) -> Self {
        let looked_for = directive != FieldValidation::Ignore && patch_type != PatchType::Apply;
        let body_errors = if looked_for { body_errors(patch_type, body) } else { Vec::new() };
        Self { info, patch_type, body, directive, body_errors }
    }

    /// Drops the unknown fields of `patched` (checked against `schema`) and answers per the
    /// directive: `Strict` → 422 naming the patched object (a strategic patch: the patch, as
    /// Go's `%+v` prints it), `Warn` → warnings. Server-side apply → structured-merge-diff's
    /// 500 when the applied configuration has undeclared fields, whatever the directive.
    pub fn check(&self, schema: Schema<'_>, patched: &mut Value) -> Result<(), ApiError> {
        if self.patch_type == PatchType::Apply {
            return check_apply(self.info, schema, self.body);
        }
        // Upstream's 422 shows the patched object before it is pruned.
        let shown = (self.directive == FieldValidation::Strict).then(|| match self.patch_type {
            PatchType::StrategicMerge => match serde_json::from_slice(self.body) {
                Ok(patch @ Value::Object(_)) => go_fmt::value(&patch),
                _ => "map[]".to_string(), // `null` decodes into an empty map
            },
            _ => go_fmt::json(patched),
        });
        let mut found = prune(schema, patched);
        if self.patch_type == PatchType::StrategicMerge {
            // The unstructured converter reports its unknown fields sorted, unquoted.
            for e in &mut found {
                e.quoting = Quoting::Raw;
            }
            found.sort_by_key(ToString::to_string);
        }
        let errors: Vec<StrictError> = self.body_errors.iter().cloned().chain(found).collect();
        if self.directive == FieldValidation::Ignore || errors.is_empty() {
            return Ok(());
        }
        match shown {
            None => {
                warn(&errors);
                Ok(())
            }
            Some(shown) => {
                let detail = format!("strict decoding error: {}", join(&errors));
                let error = FieldError::invalid("patch", &go_fmt::quote(&shown), &detail);
                Err(ApiError::invalid("", "", "", "", &[error]))
            }
        }
    }
}

/// The strict errors of a patch body itself: duplicate keys (merge and strategic patches are
/// decoded into a map), and a JSON patch's unknown operation keys.
fn body_errors(patch_type: PatchType, body: &[u8]) -> Vec<StrictError> {
    let tree = tree();
    let decoded = match patch_type {
        PatchType::Json => tree.named(JSON_PATCH_OP).map(|op| {
            let ops = Node::List {
                elem: Box::new(Node::Struct(op)),
                keys: Vec::new(),
                defaults: Default::default(),
            };
            decode::decode(tree, &ops, body).map(|(_, errors)| errors)
        }),
        _ => Some(decode::decode(tree, &Node::Any, body).map(|(_, errors)| errors)),
    };
    // An undecodable body is answered by the patch itself.
    let mut errors = decoded.and_then(Result::ok).unwrap_or_default();
    if patch_type == PatchType::Json {
        for e in &mut errors {
            e.prefix = "json patch ";
        }
    }
    errors
}

/// Server-side apply's check of the applied configuration (`body`, YAML or JSON).
fn check_apply(info: &ResourceInfo, schema: Schema<'_>, body: &[u8]) -> Result<(), ApiError> {
    let Ok(applied) = serde_saphyr::from_slice::<Value>(body) else { return Ok(()) };
    let tree = tree();
    let errors = match schema {
        Schema::Builtin(index) => {
            apply::undeclared(tree, apply::Shape::Typed(&Node::Struct(index)), &applied)
        }
        Schema::Custom(s) => apply::undeclared(tree, apply::Shape::Custom(Some(s), true), &applied),
        Schema::Unknown => Vec::new(),
    };
    if errors.is_empty() {
        return Ok(());
    }
    let meta = &applied["metadata"];
    let name = format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default()
    );
    // Go's `GroupVersionKind.String()`: the core group is empty before the slash.
    let gvk = format!("{}/{}, Kind={}", info.group, info.version, info.kind);
    let listed = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(ApiError::plain_internal(format!("failed to create typed patch object ({name}; {gvk}): {listed}")))
}
