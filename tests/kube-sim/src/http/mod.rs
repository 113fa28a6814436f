//! The HTTP front end: one handler that parses the path, dispatches to discovery or the
//! in-process API, logs the request and sets the common headers.

mod resource;
pub mod respond;
pub mod route;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, header};
use serde_json::json;

use crate::cluster::Cluster;
use crate::discovery;
use crate::request_log::RequestRecord;
use route::Route;

/// Shared state of the HTTP handler.
#[derive(Clone, Debug)]
pub struct HttpState {
    /// The cluster served.
    pub cluster: Cluster,
    /// `host:port` the server listens on (legacy `/api` `serverAddressByClientCIDRs`).
    pub server_address: String,
}

/// The axum router serving the whole API.
pub fn router(state: HttpState) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(state)
}

fn header_str(req: &Request<Body>, name: header::HeaderName) -> String {
    req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

async fn handle(
    axum::extract::State(state): axum::extract::State<HttpState>,
    req: Request<Body>,
) -> Response<Body> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let accept = header_str(&req, header::ACCEPT);
    let content_type = header_str(&req, header::CONTENT_TYPE);
    let user_agent = header_str(&req, header::USER_AGENT);
    let timestamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let route = route::parse(&path, state.cluster.catalogue());
    let mut record = RequestRecord {
        seq: 0,
        timestamp,
        method: method.clone(),
        path: path.clone(),
        query: query.clone(),
        verb: method.to_lowercase(),
        group: String::new(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        user_agent,
        accept: accept.clone(),
        content_type: content_type.clone(),
        code: 0,
    };
    let log = !matches!(route, Route::DebugRequests);
    let mut resp = match route {
        Route::Resource(rp) => {
            record.group = rp.group.clone();
            record.resource = rp.plural.clone();
            record.subresource = rp.subresource.clone().unwrap_or_default();
            record.namespace = rp.namespace.clone().unwrap_or_default();
            record.name = rp.name.clone().unwrap_or_default();
            let params = route::parse_query(&query);
            record.verb = resource::verb(&method, &rp, &params).to_string();
            resource::handle(&state.cluster, rp, &method, &params, &accept, &content_type, req.into_body())
                .await
        }
        other => non_resource(&state, other, &method, &accept, &query),
    };
    record.code = resp.status().as_u16();
    if log {
        state.cluster.request_log().record(record);
    }
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(respond::CACHE_CONTROL));
    resp
}

fn non_resource(state: &HttpState, route: Route, method: &str, accept: &str, query: &str) -> Response<Body> {
    let cluster = &state.cluster;
    let all = cluster.catalogue().all();
    if method != "GET" && !(method == "DELETE" && route == Route::DebugRequests) {
        return respond::error(&crate::error::ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        )));
    }
    let aggregated = discovery::wants_aggregated(accept);
    let found = |doc: Option<serde_json::Value>| match doc {
        Some(d) => respond::json(200, &d),
        None => respond::error(&crate::error::ApiError::no_route()),
    };
    match route {
        Route::Version => respond::json(200, &discovery::version()),
        Route::Health => respond::bytes(200, "text/plain; charset=utf-8", b"ok".to_vec()),
        Route::Metrics => {
            respond::bytes(200, "text/plain; version=0.0.4", metrics_text(cluster).into_bytes())
        }
        Route::DebugRequests => {
            if method == "DELETE" {
                cluster.request_log().clear();
                return respond::json(200, &json!({"cleared": true}));
            }
            // `?since=SEQ` returns only the records after that sequence number.
            let since = route::parse_query(query)
                .into_iter()
                .find(|(k, _)| k == "since")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let log = cluster.request_log();
            respond::json(
                200,
                &json!({"requests": log.records_since(since), "counters": log.counters(), "last_seq": log.last_seq()}),
            )
        }
        Route::ApiRoot if aggregated => aggregated_doc(&discovery::aggregated_core(&all)),
        Route::ApisRoot if aggregated => aggregated_doc(&discovery::aggregated_groups(&all)),
        Route::ApiRoot => respond::json(200, &discovery::legacy_core(&state.server_address)),
        Route::ApisRoot => respond::json(200, &discovery::legacy_groups(&all)),
        Route::Group(g) => found(discovery::legacy_group_doc(&all, &g)),
        Route::GroupVersion(g, v) => found(discovery::resource_list(&all, &g, &v)),
        Route::OpenApiV3Root => respond::json(200, &discovery::openapi_root(&all)),
        Route::OpenApiV3GroupVersion(g, v) => found(discovery::openapi_group_version(&all, &g, &v)),
        Route::Resource(_) | Route::Unknown => respond::error(&crate::error::ApiError::no_route()),
    }
}

fn aggregated_doc(doc: &serde_json::Value) -> Response<Body> {
    respond::bytes(200, discovery::AGGREGATED_CONTENT_TYPE, serde_json::to_vec(doc).unwrap_or_default())
}

/// A small Prometheus text exposition of the request counters.
fn metrics_text(cluster: &Cluster) -> String {
    let mut out = String::from(
        "# HELP apiserver_request_total Counter of apiserver requests.\n# TYPE apiserver_request_total counter\n",
    );
    for (key, n) in cluster.request_log().counters() {
        let (verb, resource) = key.split_once(' ').unwrap_or((key.as_str(), ""));
        out.push_str(&format!("apiserver_request_total{{verb=\"{verb}\",resource=\"{resource}\"}} {n}\n"));
    }
    out
}
