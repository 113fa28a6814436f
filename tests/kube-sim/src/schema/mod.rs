//! Unknown and duplicate fields, handled as the apiserver (v1.35) handles them.
//!
//! The apiserver decodes every body into its Go types, so a field the type does not have is
//! dropped; `?fieldValidation=` decides what the client hears about it (and about a key given
//! twice): `Strict` fails the request, `Warn` (the default) answers with one `Warning` header
//! per field, `Ignore` says nothing. Custom resources are pruned by their CRD's structural
//! schema instead. kube-sim has no Go types: it walks the field tree generated from them
//! ([`tree`], `schema/gen`) or the CRD's `openAPIV3Schema` ([`custom`]).
//!
//! What each write reports, with upstream's wording (taken from a real v1.35 apiserver, see
//! the tests):
//!
//! | Write | Checked | `Strict` |
//! |---|---|---|
//! | create, update | the body, in document order ([`decode`]; YAML and in-process objects in key order, as upstream's YAML→JSON conversion sorts them, after yaml.v2's error for a repeated key) | 400 `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus", duplicate field "data.a"` |
//! | merge / JSON patch | duplicates in the patch (JSON patch: also unknown keys of an operation, `json patch unknown field "[0].bogus"`), then unknown fields of the patched object | 422 ` "" is invalid: patch: Invalid value: "<patched object as JSON>": strict decoding error: …` |
//! | strategic merge patch | the same; the patched object's unknown fields sorted by message (the unstructured converter sorts them) | 422 with `Invalid value: "map[…]"`, the patch as Go's `%+v` prints it |
//! | server-side apply | the applied configuration ([`apply`]), whatever `fieldValidation` says | 500 `failed to create typed patch object (ns/name; apps/v1, Kind=Deployment): .spec.bogus: field not declared in schema` |
//!
//! Under `Warn` each error is one warning (`unknown field "bogus"`). The dropped fields are
//! never stored, under every directive.

mod apply;
mod custom;
mod decode;
mod patched;
mod prune;
mod strict;
mod structural_defaults;
mod tree;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use patched::PatchFields;
pub use strict::{Quoting, StrictError, StrictKind};

use crate::error::ApiError;
use crate::resources::ResourceInfo;
use strict::{Errors, Path};
use tree::{Node, tree};

/// `?fieldValidation=`: what a write answers about unknown and duplicate fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, one `Warning` header each (upstream's default).
    #[default]
    Warn,
    /// The write fails.
    Strict,
}

impl FieldValidation {
    /// The values upstream accepts (`""` is `Warn`); `None` for any other (a 422 upstream).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "" | "Warn" => Some(Self::Warn),
            "Ignore" => Some(Self::Ignore),
            "Strict" => Some(Self::Strict),
            _ => None,
        }
    }
    /// The supported values, as upstream's 422 lists them.
    pub const SUPPORTED: [&'static str; 4] = ["", "Ignore", "Strict", "Warn"];
}

/// What an object is checked against.
#[derive(Clone, Copy, Debug)]
pub enum Schema<'a> {
    /// A built-in kind (its struct in the generated tree).
    Builtin(usize),
    /// A custom resource version's structural schema (`openAPIV3Schema`).
    Custom(&'a Value),
    /// Nothing known: every field is kept and nothing reported.
    Unknown,
}

impl<'a> Schema<'a> {
    /// The schema of `info`'s objects.
    pub fn of(info: &'a ResourceInfo) -> Self {
        if !info.builtin {
            return info.schema.as_deref().map_or(Self::Unknown, Self::Custom);
        }
        tree().kind(&info.api_version(), &info.kind).map_or(Self::Unknown, Self::Builtin)
    }
    /// `autoscaling/v1 Scale`, the body of every `/scale` subresource.
    pub fn scale() -> Self {
        tree().kind("autoscaling/v1", "Scale").map_or(Self::Unknown, Self::Builtin)
    }
}

/// Decodes a JSON create/update body strictly: the object without its unknown fields and the
/// strict errors in upstream's order. `Err` when the body is not JSON (worded by the caller).
pub fn decode_json(schema: Schema<'_>, body: &[u8]) -> Result<(Value, Vec<StrictError>), serde_json::Error> {
    let tree = tree();
    match schema {
        Schema::Builtin(index) => decode::decode(tree, &Node::Struct(index), body),
        // A custom resource is decoded into a map (duplicates only), then pruned.
        Schema::Custom(s) => {
            let (mut object, mut errors) = decode::decode(tree, &Node::Any, body)?;
            errors.extend(custom::prune_custom(tree, s, &mut object));
            Ok((object, errors))
        }
        Schema::Unknown => Ok((serde_json::from_slice(body)?, Vec::new())),
    }
}

/// Decodes a YAML create/update body: the object (a repeated key's last value wins) without
/// its unknown fields, and the strict errors in upstream's order: yaml.v2's error for repeated
/// keys (kube-sim's YAML parser names the first one only), then the unknown fields in key
/// order (upstream converts YAML to JSON with sorted keys). `Err` when it is not YAML.
pub fn decode_yaml(schema: Schema<'_>, text: &str) -> Result<(Value, Vec<StrictError>), serde_saphyr::Error> {
    let (mut object, mut errors) = match serde_saphyr::from_str::<Value>(text) {
        Ok(object) => (object, Vec::new()),
        Err(error) => {
            let serde_saphyr::Error::DuplicateMappingKey { key, location } = error.without_snippet() else {
                return Err(error);
            };
            let mut lenient = serde_saphyr::Options::default();
            lenient.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
            let object = serde_saphyr::from_str_with_options::<Value>(text, lenient)?;
            let key = key.as_deref().map_or_else(|| "<key>".to_string(), crate::go_fmt::quote);
            (object, vec![StrictError::yaml_duplicate(location.line(), &key)])
        }
    };
    errors.extend(prune(schema, &mut object));
    Ok((object, errors))
}

/// Drops from an already decoded object the fields `schema` does not know; returns them as a
/// decoder reads them (sorted keys).
pub fn prune(schema: Schema<'_>, object: &mut Value) -> Vec<StrictError> {
    let tree = tree();
    match schema {
        Schema::Builtin(index) => {
            let mut errors = Errors::default();
            prune::prune(tree, &Node::Struct(index), object, &mut Path::default(), &mut errors, Quoting::Go);
            errors.0
        }
        Schema::Custom(s) => custom::prune_custom(tree, s, object),
        Schema::Unknown => Vec::new(),
    }
}

/// Applies a custom resource's null pruning and defaults to an object not decoded from a body
/// (a server-side apply's result; upstream defaults it too). Nothing for the built-in kinds.
pub fn default_custom(schema: Schema<'_>, object: &mut Value) {
    if let Schema::Custom(s) = schema {
        structural_defaults::prune_nulls(s, object);
        structural_defaults::apply(s, object);
    }
}

/// Answers a create/update body's strict errors per `directive` (upstream's create and update
/// handlers): `Strict` → the decoder's 400 naming the body's `kind` and `version`, `Warn` →
/// warnings.
pub fn report_decode(
    kind: &str,
    version: &str,
    errors: &[StrictError],
    directive: FieldValidation,
) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    match directive {
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            warn(errors);
            Ok(())
        }
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            join(errors),
        ))),
    }
}

/// Prunes an object decoded without the strict decoder (YAML, protobuf, in-process) and
/// answers per `directive`, as [`report_decode`].
pub fn check_object(
    kind: &str,
    version: &str,
    schema: Schema<'_>,
    object: &mut Value,
    directive: FieldValidation,
) -> Result<(), ApiError> {
    let errors = prune(schema, object);
    report_decode(kind, version, &errors, directive)
}

fn join(errors: &[StrictError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

fn warn(errors: &[StrictError]) {
    for warning in errors.iter().flat_map(StrictError::warnings) {
        crate::warnings::add(&warning);
    }
}
