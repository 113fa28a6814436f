//! Building responses: JSON bodies, Status errors, lists, tables; common headers.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use crate::cluster::ListResult;
use crate::error::ApiError;
use crate::resources::ResourceInfo;

/// `Cache-Control` of every answer (kubectl's dispatcher caches `/version` otherwise).
pub const CACHE_CONTROL: &str = "no-cache, private";
const TABLE_CONTENT_TYPE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// A response with `body` bytes and `content_type`.
pub fn bytes(code: u16, content_type: &str, body: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(ct) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    resp
}

/// A JSON response.
pub fn json(code: u16, value: &Value) -> Response<Body> {
    bytes(code, "application/json", serde_json::to_vec(value).unwrap_or_default())
}

/// A Status error response (with `Retry-After` when the error carries one).
pub fn error(err: &ApiError) -> Response<Body> {
    let mut resp = json(err.code, &err.to_status());
    if let Some(secs) = err.retry_after_seconds()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// True when the Accept header asks for a `meta.k8s.io` Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|part| part.contains("as=Table"))
}

fn list_metadata(list: &ListResult) -> Value {
    let mut meta = json!({"resourceVersion": list.resource_version.to_string()});
    if let Some(c) = &list.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = list.remaining_item_count {
        meta["remainingItemCount"] = json!(n);
    }
    meta
}

/// A `<Kind>List` answer, serialized item by item without copying the items.
pub fn list(info: &ResourceInfo, list: &ListResult) -> Response<Body> {
    let mut out = Vec::with_capacity(64 + list.items.len() * 1024);
    out.extend_from_slice(b"{\"kind\":");
    out.extend_from_slice(json!(info.list_kind()).to_string().as_bytes());
    out.extend_from_slice(b",\"apiVersion\":");
    out.extend_from_slice(json!(info.api_version()).to_string().as_bytes());
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(list_metadata(list).to_string().as_bytes());
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in list.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Items of built-in kinds carry no apiVersion/kind (upstream converts them without their
        // TypeMeta); custom resources keep theirs.
        let written = match &**item {
            Value::Object(map) if info.builtin => {
                let fields = map.iter().filter(|(k, _)| *k != "apiVersion" && *k != "kind");
                serde_json::to_writer(&mut out, &fields.collect::<std::collections::BTreeMap<_, _>>())
            }
            item => serde_json::to_writer(&mut out, item),
        };
        if written.is_err() {
            return error(&ApiError::internal("cannot serialize an object"));
        }
    }
    out.extend_from_slice(b"]}");
    bytes(200, "application/json", out)
}

/// A Table answer for a list or a single object.
pub fn table(
    info: &ResourceInfo,
    list_meta: Value,
    objects: &[Arc<Value>],
    include_object: &str,
) -> Response<Body> {
    let owned: Vec<Value> = objects.iter().map(|o| (**o).clone()).collect();
    let table = crate::table::render(
        &info.group,
        &info.plural,
        info.printer_columns.as_deref(),
        list_meta,
        &owned,
        include_object,
        jiff::Timestamp::now(),
    );
    bytes(200, TABLE_CONTENT_TYPE, serde_json::to_vec(&table).unwrap_or_default())
}

/// Table for a list result.
pub fn list_table(info: &ResourceInfo, result: &ListResult, include_object: &str) -> Response<Body> {
    table(info, list_metadata(result), &result.items, include_object)
}

/// Go's `http.NotFound`: what the apiserver's mux answers for a path nothing serves.
pub fn page_not_found() -> Response<Body> {
    bytes(404, "text/plain; charset=utf-8", b"404 page not found\n".to_vec())
}
