//! Patch application: JSON patch, JSON merge patch, strategic merge patch and the
//! configuration of a server-side apply, with kube-apiserver's error classes.
//!
//! | Content type | Semantics | Errors |
//! |---|---|---|
//! | `application/json-patch+json` | RFC 6902 (`json-patch` crate) | body not a patch: 400 `error decoding patch: …` (Go's wording); an operation fails, e.g. `test`: 422 (upstream's generic message; the reason stays in the `PatchError`) |
//! | `application/merge-patch+json` | RFC 7386: `null` deletes, objects merge, anything else replaces | body not a JSON object: 400 `error decoding patch: …` (Go's wording), `null`: `Invalid JSON Patch` |
//! | `application/strategic-merge-patch+json` | built-in kinds only: lists with a `patchMergeKey` merge by it | custom resources: 415; body not an object or bad directive: 400 |
//! | `application/apply-patch+yaml` | see "Server-side apply" below | undecodable YAML/JSON, wrong `apiVersion`/`kind`, `metadata.managedFields` set: 400 (checked by [`apply_configuration`]) |
//!
//! Strategic merge patch follows `k8s.io/apimachinery/pkg/util/strategicpatch`: `null` deletes
//! a key; lists merge by the Go struct tags' merge keys (containers, initContainers,
//! ephemeralContainers, volumes, env, imagePullSecrets and webhooks by `name`; container `ports`
//! by `containerPort`; Service `ports` by `port`; `volumeMounts` by `mountPath`; `conditions` and
//! node `addresses` by `type`; `hostAliases`/`podIPs` by `ip`; `ownerReferences` by `uid`;
//! `finalizers` and `podCIDRs` as sets). Every other list, including pod `tolerations` and node
//! `taints` (untagged upstream), is replaced. Kinds without a schema here get lists replaced
//! everywhere except in `metadata`. The directives `$patch: replace|delete|merge`,
//! `$setElementOrder/<list>`, `$retainKeys` and `$deleteFromPrimitiveList/<list>` are honoured.
//! As upstream, an item added to a merge list without `$setElementOrder` goes to the front.
//! `api_version` is not used to pick the schema (the tags used here are equal across versions).
//!
//! Server-side apply: this module reads and checks the configuration ([`apply_configuration`]:
//! the endpoint's `apiVersion` and `kind`, no `managedFields`); the cluster applies it with
//! field ownership through [`crate::managed_fields`]: a structured merge (objects field by
//! field, keyed lists by their `x-kubernetes-list-map-keys`, sets by value, everything else
//! replaced), removal of the fields the same manager applied before and omits now, conflicts
//! (409) with other managers, `force`, and `metadata.managedFields` on every write.
//! [`apply_patch`] with [`PatchType::Apply`] only merges (no ownership). `null` in a
//! configuration removes the field; keys starting with `$` are dropped for built-in kinds (no
//! field is named so; upstream drops unknown fields). `application/apply-patch+cbor` bodies are
//! read as YAML too, so they fail with 400. YAML nested deeper than serde-saphyr's default
//! budget (64 levels) is a 400.
//!
//! Other deviations: errors upstream answers with 500 (a list item without its merge key, an
//! unknown `$patch` value) or 413 (more than 10000 JSON patch operations) are 400 here. Any patch
//! nested deeper than [`MAX_DEPTH`] is rejected with 400 instead of exhausting the stack, and a
//! JSON patch that replaces the whole object by a non-object is a 422.

mod order;
pub(crate) mod schema;
mod strategic;

use serde_json::{Map, Value};

/// The deepest nesting accepted in a patch body (and in a JSON-patched object).
pub const MAX_DEPTH: usize = 100;

/// Upstream's limit on operations in one JSON patch (`maxJSONPatchOperations`).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The four patch content types the apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply)
    Apply,
}

impl PatchType {
    /// Maps a request `Content-Type` (parameters ignored) to a patch type.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        match content_type.split(';').next().unwrap_or("").trim() {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::StrategicMerge),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Why a patch could not be applied; each maps to the apiserver's status code.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PatchError {
    /// The patch body is not valid for its type: 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well formed but cannot be applied (e.g. a JSON patch `test` failed): 422.
    #[error("{0}")]
    Unprocessable(String),
    /// The patch type is not supported for this kind (strategic merge on a custom resource): 415.
    #[error("{0}")]
    UnsupportedMediaType(String),
}

/// The apiserver's 415 message for custom resources, which accept every type but strategic merge.
const CUSTOM_RESOURCE_MEDIA_TYPES: &str = "the body of the request was in an unknown format - \
     accepted media types include: application/json-patch+json, application/merge-patch+json, \
     application/apply-patch+yaml";

/// Applies `patch` (the raw request body) of `patch_type` to `original`.
///
/// `api_version`/`kind` select the strategic-merge schema (list merge keys) for built-in types;
/// `builtin` is false for custom resources.
pub fn apply_patch(
    api_version: &str,
    kind: &str,
    builtin: bool,
    original: &Value,
    patch_type: PatchType,
    patch: &[u8],
) -> Result<Value, PatchError> {
    match patch_type {
        PatchType::Json => json_patch(original, patch),
        PatchType::Merge => merge_patch(original, patch),
        PatchType::StrategicMerge if !builtin => {
            Err(PatchError::UnsupportedMediaType(CUSTOM_RESOURCE_MEDIA_TYPES.into()))
        }
        PatchType::StrategicMerge => strategic_merge_patch(kind, original, patch),
        PatchType::Apply => server_side_apply(api_version, kind, builtin, original, patch),
    }
}

fn bad_request(message: impl Into<String>) -> PatchError {
    PatchError::BadRequest(message.into())
}

/// The nesting depth below `roots` (a scalar root adds nothing), computed without recursion.
fn depth<'a>(roots: impl IntoIterator<Item = &'a Value>) -> usize {
    let mut deepest = 0;
    let mut pending: Vec<(&Value, usize)> = roots.into_iter().map(|root| (root, 1)).collect();
    while let Some((value, level)) = pending.pop() {
        match value {
            Value::Object(map) => {
                deepest = deepest.max(level);
                pending.extend(map.values().map(|child| (child, level + 1)));
            }
            Value::Array(items) => {
                deepest = deepest.max(level);
                pending.extend(items.iter().map(|child| (child, level + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Rejects a patch nested deeper than [`MAX_DEPTH`]: the merges recurse along the patch.
fn check_depth(patch: &Map<String, Value>) -> Result<(), PatchError> {
    if 1 + depth(patch.values()) > MAX_DEPTH {
        return Err(bad_request(format!(
            "the patch is nested deeper than the maximum of {MAX_DEPTH} levels"
        )));
    }
    Ok(())
}

fn object_or_empty(original: &Value) -> Map<String, Value> {
    match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

/// A patch body as JSON; malformed, the error in Go's wording.
fn parse_json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body)
        .map_err(|error| crate::go_json::syntax_error(body).unwrap_or_else(|| error.to_string()))
}

fn json_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    // Upstream first decodes the operations strictly (fieldValidation defaults to Warn).
    let decode_error = |e: String| bad_request(format!("error decoding patch: {e}"));
    let parsed = parse_json(body).map_err(decode_error)?;
    if !parsed.is_array() {
        return Err(decode_error(format!(
            "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
            json_type_name(&parsed)
        )));
    }
    let operations: json_patch::Patch =
        serde_json::from_value(parsed).map_err(|error| bad_request(error.to_string()))?;
    if operations.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(bad_request(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            operations.0.len()
        )));
    }
    let mut patched = original.clone();
    json_patch::patch(&mut patched, &operations.0).map_err(|error| {
        PatchError::Unprocessable(match error.kind {
            // evanphx/json-patch's wording, which the apiserver returns.
            json_patch::PatchErrorKind::TestFailed => {
                format!("testing value {} failed: test failed", error.path)
            }
            _ => error.to_string(),
        })
    })?;
    if !patched.is_object() {
        return Err(PatchError::Unprocessable("the JSON patch replaced the object with a non-object".into()));
    }
    // `add` can nest a value under a deep path: bound the result so that it stays serialisable.
    if depth([&patched]) > MAX_DEPTH.max(depth([original])) {
        return Err(bad_request(format!(
            "the patched object is nested deeper than the maximum of {MAX_DEPTH} levels"
        )));
    }
    Ok(patched)
}

fn merge_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    // evanphx/json-patch's `ErrBadJSONPatch`, which the apiserver returns as 400.
    // Upstream first decodes it strictly into a map (fieldValidation defaults to Warn).
    let patch = parse_json(body).map_err(|e| bad_request(format!("error decoding patch: {e}")))?;
    let patch = match patch {
        Value::Object(patch) => patch,
        Value::Null => return Err(bad_request("Invalid JSON Patch")),
        other => {
            return Err(bad_request(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_type_name(&other)
            )));
        }
    };
    check_depth(&patch)?;
    let mut patched = original.clone();
    merge_patch_value(&mut patched, Value::Object(patch));
    Ok(patched)
}

/// RFC 7386 `MergePatch`. Like evanphx/json-patch, nulls are also dropped from objects nested in
/// a replacing value (e.g. inside a list). Recursion follows the depth-checked patch.
fn merge_patch_value(target: &mut Value, patch: Value) {
    let Value::Object(patch) = patch else {
        *target = prune_nulls(patch);
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(&key);
            } else {
                merge_patch_value(target.entry(key).or_insert(Value::Null), value);
            }
        }
    }
}

fn prune_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key, prune_nulls(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(prune_nulls).collect()),
        scalar => scalar,
    }
}

fn strategic_merge_patch(kind: &str, original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let patch = parse_json(body).map_err(bad_request)?;
    let patch = match patch {
        Value::Object(map) => map,
        // Go's json.Unmarshal of `null` into a map leaves it empty: a no-op patch.
        Value::Null => Map::new(),
        other => {
            return Err(bad_request(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_type_name(&other)
            )));
        }
    };
    check_depth(&patch)?;
    let merged = strategic::strategic_merge(object_or_empty(original), patch, schema::root_for_kind(kind))?;
    Ok(Value::Object(merged))
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The configuration of a server-side apply (`application/apply-patch+yaml`), checked as
/// upstream checks it before applying: an object of the endpoint's `apiVersion` and `kind`
/// without `metadata.managedFields`. For built-in kinds, keys starting with `$` (strategic merge
/// directives, never field names) are dropped, as upstream drops unknown fields.
pub fn apply_configuration(
    api_version: &str,
    kind: &str,
    builtin: bool,
    body: &[u8],
) -> Result<Value, PatchError> {
    // YAML is a superset of JSON, so this also reads the JSON that kubectl sends.
    let applied: Value = serde_saphyr::from_slice(body)
        .map_err(|error| bad_request(format!("error decoding YAML: {error}")))?;
    let Value::Object(mut applied) = applied else {
        return Err(bad_request(format!(
            "error decoding YAML: the apply configuration must be an object, not {}",
            json_type_name(&applied)
        )));
    };
    let applied_version = applied.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if applied_version != api_version {
        return Err(bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: \
             {applied_version}, expected: {api_version}"
        )));
    }
    match applied.get("kind").and_then(Value::as_str) {
        Some(applied_kind) if applied_kind == kind => {}
        Some(applied_kind) => {
            return Err(bad_request(format!(
                "the kind in the apply configuration ({applied_kind}) does not match the \
                 resource's kind ({kind})"
            )));
        }
        None => {
            return Err(bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                Value::Object(applied.clone())
            )));
        }
    }
    let managed_fields = applied.get("metadata").and_then(|metadata| metadata.get("managedFields"));
    if managed_fields.is_some_and(|fields| !fields.is_null()) {
        return Err(bad_request("metadata.managedFields must be nil"));
    }
    check_depth(&applied)?;
    if builtin {
        drop_directives(&mut applied);
    }
    Ok(Value::Object(applied))
}

fn drop_directives(map: &mut Map<String, Value>) {
    map.retain(|key, _| !key.starts_with('$'));
    for value in map.values_mut() {
        match value {
            Value::Object(inner) => drop_directives(inner),
            Value::Array(items) => {
                items.iter_mut().filter_map(Value::as_object_mut).for_each(drop_directives)
            }
            _ => {}
        }
    }
}

/// What an apply does to the object, without field ownership (the cluster applies through
/// [`crate::managed_fields`], which also removes fields and detects conflicts).
fn server_side_apply(
    api_version: &str,
    kind: &str,
    builtin: bool,
    original: &Value,
    body: &[u8],
) -> Result<Value, PatchError> {
    let applied = apply_configuration(api_version, kind, builtin, body)?;
    crate::managed_fields::merge_configuration(
        kind,
        builtin,
        &Value::Object(object_or_empty(original)),
        &applied,
    )
    .map_err(bad_request)
}

#[cfg(test)]
mod tests;
