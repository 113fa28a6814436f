//! Resource requests: maps HTTP method + path + query onto the in-process API.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use super::respond;
use super::route::ResourcePath;
use crate::cluster::{
    Cluster, DeleteOptions, DeleteOutcome, Gvr, ListOptions, SubresourceRequest, WatchEventType,
    WatchOptions, WriteOptions,
};
use crate::error::ApiError;
use crate::patch::PatchType;
use crate::resources::ResourceInfo;
use crate::schema::{FieldValidation, Schema};

const MAX_BODY: usize = 256 * 1024 * 1024;

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn flag(params: &[(String, String)], key: &str) -> bool {
    matches!(param(params, key), Some("true" | "1"))
}

/// The Kubernetes verb of a resource request.
pub fn verb(method: &str, rp: &ResourcePath, params: &[(String, String)]) -> &'static str {
    match (method, rp.name.is_some()) {
        ("GET", false) if flag(params, "watch") => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => "unknown",
    }
}

fn write_options(params: &[(String, String)], user_agent: &str) -> WriteOptions {
    WriteOptions {
        dry_run: param(params, "dryRun") == Some("All"),
        field_manager: param(params, "fieldManager").map(String::from),
        user_agent: Some(user_agent.to_string()).filter(|ua| !ua.is_empty()),
        force: flag(params, "force"),
        skip_admission: false,
        keep_status: false,
        skip_field_tracking: false,
        field_validation: FieldValidation::parse(field_validation(params)).unwrap_or_default(),
    }
}

/// The `fieldValidation` query value: the first one, as Go's query decoding takes it.
fn field_validation(params: &[(String, String)]) -> &str {
    params.iter().find(|(k, _)| k == "fieldValidation").map_or("", |(_, v)| v.as_str())
}

/// Decodes a create/update body. JSON and YAML go through the strict decoders of
/// [`crate::schema`] (unknown and duplicate fields, answered per `fieldValidation`); protobuf
/// is decoded as it is (it has no unknown fields to report).
fn decode_object(
    info: &ResourceInfo,
    subresource: Option<&str>,
    content_type: &str,
    body: &[u8],
    directive: FieldValidation,
) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    let (schema, kind, version) = match subresource {
        Some("scale") => (Schema::scale(), "Scale", "v1"),
        _ => (Schema::of(info), info.kind.as_str(), info.version.as_str()),
    };
    // Undecodable: `decode_body` words the error as upstream's decoder does.
    let decoded = match media {
        _ if body.is_empty() => None,
        "" | "application/json" => crate::schema::decode_json(schema, body).ok(),
        "application/yaml" => {
            std::str::from_utf8(body).ok().and_then(|text| crate::schema::decode_yaml(schema, text).ok())
        }
        _ => None,
    };
    match decoded {
        Some((object, errors)) => {
            crate::schema::report_decode(kind, version, &errors, directive)?;
            Ok(object)
        }
        None => decode_body(content_type, body, &info.kind),
    }
}

fn list_options(params: &[(String, String)]) -> ListOptions {
    ListOptions {
        label_selector: param(params, "labelSelector").map(String::from),
        field_selector: param(params, "fieldSelector").map(String::from),
        limit: param(params, "limit").and_then(|l| l.parse().ok()).unwrap_or(0),
        continue_token: param(params, "continue").map(String::from),
        resource_version: param(params, "resourceVersion").map(String::from),
        resource_version_match: param(params, "resourceVersionMatch").map(String::from),
    }
}

/// Decodes a request body by content type (JSON, YAML, protobuf); `kind` is what the body must
/// be (named in the error for malformed JSON, as upstream's `transformDecodeError`).
fn decode_body(content_type: &str, body: &[u8], kind: &str) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    match ct {
        // kubectl create token/role/rolebinding send protobuf bodies the auth module decodes.
        "application/vnd.kubernetes.protobuf" => match crate::auth::protobuf_bodies::decode(body) {
            Some(decoded) => decoded.map_err(ApiError::bad_request),
            None => crate::protobuf::decode(body)
                .map_err(|e| ApiError::bad_request(format!("unable to decode protobuf body: {e}"))),
        },
        "application/yaml" | "application/apply-patch+yaml" => {
            let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
        }
        "" | "application/json" => serde_json::from_slice(body).map_err(|e| {
            // Go's wording of the syntax error; serde's for what Go would accept (huge numbers).
            let error = crate::go_json::syntax_error(body).unwrap_or_else(|| e.to_string());
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {error} ({})",
                summarize(body)
            ))
        }),
        _ => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )),
    }
}

/// The kind a subresource's POST body is.
fn subresource_kind(subresource: &str) -> &'static str {
    match subresource {
        "eviction" => "Eviction",
        "binding" => "Binding",
        "token" => "TokenRequest",
        _ => "Object",
    }
}

/// Upstream's `summarizeData(body, 30)`: an object's first 30 bytes as text, anything else's
/// in hex.
fn summarize(body: &[u8]) -> String {
    let (head, more) = (&body[..body.len().min(30)], if body.len() > 30 { " ..." } else { "" });
    if body.first() == Some(&b'{') {
        format!("{}{more}", String::from_utf8_lossy(head))
    } else {
        format!("{}{more}", head.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

fn object_response(
    code: u16,
    object: &Arc<Value>,
    info: &crate::resources::ResourceInfo,
    accept: &str,
    params: &[(String, String)],
) -> Response<Body> {
    if respond::wants_table(accept) {
        let include = param(params, "includeObject").unwrap_or("Metadata");
        return respond::table(info, json!({"resourceVersion": ""}), std::slice::from_ref(object), include);
    }
    respond::json(code, object)
}

/// One resource request's headers the handling depends on.
pub struct Headers<'a> {
    /// `Accept`.
    pub accept: &'a str,
    /// `Content-Type`.
    pub content_type: &'a str,
    /// `User-Agent` (names the field manager of writes without `fieldManager`).
    pub user_agent: &'a str,
}

/// Handles one resource request.
pub async fn handle(
    cluster: &Cluster,
    rp: ResourcePath,
    method: &str,
    params: &[(String, String)],
    headers: Headers<'_>,
    body: Body,
) -> Response<Body> {
    let served = handle_inner(cluster, rp, method, params, headers, body);
    let (answer, warnings) = crate::warnings::collect(served).await;
    let mut resp = answer.unwrap_or_else(|err| respond::error(&err));
    for warning in warnings {
        if let Ok(value) = axum::http::HeaderValue::from_bytes(warning.as_bytes()) {
            resp.headers_mut().append(axum::http::header::WARNING, value);
        }
    }
    resp
}

async fn handle_inner(
    cluster: &Cluster,
    rp: ResourcePath,
    method: &str,
    params: &[(String, String)],
    headers: Headers<'_>,
    body: Body,
) -> Result<Response<Body>, ApiError> {
    let Headers { accept, content_type, user_agent } = headers;
    let gvr = Gvr::new(&rp.group, &rp.version, &rp.plural);
    let info = cluster.resource(&gvr)?;
    if info.namespaced && rp.namespace.is_none() && rp.name.is_some() {
        return Err(ApiError::no_route());
    }
    let ns = rp.namespace.as_deref();
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("cannot read the request body: {e}")))?;
    if info.create_only {
        if method != "POST" || rp.name.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        let review = decode_body(content_type, &body, &info.kind)?;
        let user = crate::auth::current_user();
        let answer =
            crate::auth::access_review::review(cluster, &user, &info, ns.unwrap_or_default(), &review)?;
        return Ok(respond::json(201, &answer));
    }
    let sub = rp.subresource.as_deref();
    // `finalize` takes only PUT, as upstream's `FinalizeREST` (an Updater, not a Getter).
    if sub == Some("finalize") && method != "PUT" && info.group.is_empty() && info.plural == "namespaces" {
        return Err(ApiError::method_not_allowed());
    }
    if let (Some(name), Some(sub_name)) = (rp.name.as_deref(), sub)
        && !matches!(sub_name, "status" | "scale" | "finalize")
    {
        {
            let handler = cluster
                .subresource_handler(&info.group, &info.plural, sub_name)
                .ok_or_else(ApiError::no_route)?;
            let request = SubresourceRequest {
                resource: info.clone(),
                subresource: sub_name.to_string(),
                method: method.to_string(),
                namespace: ns.unwrap_or_default().to_string(),
                name: name.to_string(),
                body: decode_body(content_type, &body, subresource_kind(sub_name))?,
                dry_run: param(params, "dryRun") == Some("All"),
            };
            let (code, value) = handler.handle(cluster, request).await?;
            return Ok(respond::json(code, &value));
        }
    }
    let verb = verb(method, &rp, params);
    let patch_type = PatchType::from_content_type(content_type);
    let mut options = write_options(params, user_agent);
    // Any `force` counts as set for the options check (upstream's `*bool`).
    options.force |=
        verb == "patch" && patch_type != Some(PatchType::Apply) && param(params, "force").is_some();
    check_options(verb, params, patch_type, &options)?;
    match (verb, rp.name.as_deref()) {
        ("list", _) => {
            let result = cluster.list(&gvr, ns, &list_options(params))?;
            if respond::wants_table(accept) {
                return Ok(respond::list_table(
                    &info,
                    &result,
                    param(params, "includeObject").unwrap_or("Metadata"),
                ));
            }
            Ok(respond::list(&info, &result))
        }
        ("watch", _) => watch(cluster, &gvr, ns, params, accept),
        ("get", Some(name)) => {
            let object = match sub {
                Some(s) => cluster.get_subresource(&gvr, ns, name, s)?,
                None => cluster.get(&gvr, ns, name)?,
            };
            Ok(object_response(200, &object, &info, accept, params))
        }
        ("create", None) => {
            let object = decode_object(&info, None, content_type, &body, options.field_validation)?;
            let created = cluster.create(&gvr, ns, object, &options).await?;
            Ok(respond::json(201, &created))
        }
        ("update", Some(name)) => {
            let object = decode_object(&info, sub, content_type, &body, options.field_validation)?;
            let updated = cluster.update(&gvr, ns, name, sub, object, &options).await?;
            Ok(respond::json(200, &updated))
        }
        ("patch", Some(name)) => {
            let patch_type = patch_type.ok_or_else(|| {
                ApiError::unsupported_media_type(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json",
                )
            })?;
            let (object, created) = cluster.patch(&gvr, ns, name, sub, patch_type, &body, &options).await?;
            Ok(respond::json(if created { 201 } else { 200 }, &object))
        }
        ("delete", Some(name)) => {
            let mut opts = DeleteOptions::from_json(&decode_body(content_type, &body, "DeleteOptions")?);
            opts.dry_run |= param(params, "dryRun") == Some("All");
            if let Some(g) = param(params, "gracePeriodSeconds").and_then(|g| g.parse().ok()) {
                opts.grace_period_seconds = Some(g);
            }
            if let Some(p) = param(params, "propagationPolicy") {
                opts.propagation_policy = Some(p.to_string());
            }
            match cluster.delete(&gvr, ns, name, &opts).await? {
                DeleteOutcome::Deleted(object) if !returns_deleted_object(&info) => {
                    Ok(respond::json(200, &deleted_status(&info, &object)))
                }
                outcome => Ok(respond::json(200, outcome.object())),
            }
        }
        ("deletecollection", None) => {
            let mut opts = DeleteOptions::from_json(&decode_body(content_type, &body, "DeleteOptions")?);
            opts.dry_run |= param(params, "dryRun") == Some("All");
            let deleted = cluster.delete_collection(&gvr, ns, &list_options(params), &opts).await?;
            let result = crate::cluster::ListResult {
                resource_version: cluster.resource_version(),
                items: deleted,
                continue_token: None,
                remaining_item_count: None,
            };
            Ok(respond::list(&info, &result))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The verb's options checked as upstream's `Validate*Options` do, in their order (the field
/// manager, `dryRun`, which takes only `All`, and `fieldValidation` on create, update and patch);
/// any error is a 422 on the options.
fn check_options(
    verb: &str,
    params: &[(String, String)],
    patch_type: Option<PatchType>,
    options: &WriteOptions,
) -> Result<(), ApiError> {
    let kind = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        // An unknown patch type is refused first (415).
        "patch" if patch_type.is_none() => return Ok(()),
        "patch" => "PatchOptions",
        "delete" | "deletecollection" => "DeleteOptions",
        _ => return Ok(()),
    };
    let mut errors = match (verb, patch_type) {
        ("patch", Some(patch_type)) => crate::cluster::patch_option_errors(patch_type, options),
        ("create" | "update" | "patch", _) => {
            crate::cluster::field_manager_errors(options.field_manager.as_deref().unwrap_or_default())
        }
        _ => Vec::new(),
    };
    let values: Vec<&str> = params.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    if !values.iter().all(|v| *v == "All") {
        errors.push(crate::error::FieldError {
            cause: "FieldValueNotSupported",
            field: "dryRun".into(),
            message: format!("dryRun: Unsupported value: {}: supported values: \"All\"", json!(values)),
        });
    }
    let directive = field_validation(params);
    if matches!(verb, "create" | "update" | "patch") && FieldValidation::parse(directive).is_none() {
        errors.push(crate::error::FieldError::not_supported(
            "fieldValidation",
            directive,
            &FieldValidation::SUPPORTED,
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(&format!("{kind}.meta.k8s.io"), "meta.k8s.io", kind, "", &errors))
}

/// Kinds whose registry answers a finished DELETE with the object (`ReturnDeletedObject`);
/// every other kind answers `Status` `Success` naming it. An object that waits for finalizers
/// or a grace period is returned either way.
fn returns_deleted_object(info: &ResourceInfo) -> bool {
    info.builtin
        && info.group.is_empty()
        && matches!(
            info.plural.as_str(),
            "pods"
                | "namespaces"
                | "services"
                | "serviceaccounts"
                | "podtemplates"
                | "resourcequotas"
                | "persistentvolumes"
                | "persistentvolumeclaims"
        )
}

/// The `Status` of a finished DELETE (upstream's `finalizeDelete`: `details.kind` is the
/// resource).
fn deleted_status(info: &ResourceInfo, object: &Value) -> Value {
    let mut details =
        json!({"name": object["metadata"]["name"], "kind": info.plural, "uid": object["metadata"]["uid"]});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

fn watch(
    cluster: &Cluster,
    gvr: &Gvr,
    ns: Option<&str>,
    params: &[(String, String)],
    accept: &str,
) -> Result<Response<Body>, ApiError> {
    let opts = WatchOptions {
        label_selector: param(params, "labelSelector").map(String::from),
        field_selector: param(params, "fieldSelector").map(String::from),
        resource_version: param(params, "resourceVersion").map(String::from),
        allow_bookmarks: flag(params, "allowWatchBookmarks"),
        send_initial_events: flag(params, "sendInitialEvents"),
        timeout: param(params, "timeoutSeconds").and_then(|t| t.parse().ok()).map(Duration::from_secs),
    };
    let info = cluster.resource(gvr)?;
    let stream = cluster.watch(gvr, ns, &opts)?;
    let table = respond::wants_table(accept);
    let body = stream.map(move |ev| {
        let line = if table && !matches!(ev.event_type, WatchEventType::Bookmark | WatchEventType::Error) {
            let rendered = crate::table::render(
                &info.group,
                &info.plural,
                info.printer_columns.as_deref(),
                json!({"resourceVersion": ev.object["metadata"]["resourceVersion"]}),
                std::slice::from_ref(&*ev.object),
                "Metadata",
                jiff::Timestamp::now(),
            );
            let mut line = serde_json::to_vec(&json!({"type": ev.event_type.as_str(), "object": rendered}))
                .unwrap_or_default();
            line.push(b'\n');
            line
        } else {
            ev.to_line()
        };
        Ok::<_, Infallible>(Bytes::from(line))
    });
    Ok(respond::bytes(200, "application/json", Vec::new()).map(|_| Body::from_stream(body)))
}
