//! The HTTP front end: one handler that authenticates and authorizes the request, parses the
//! path, dispatches to discovery or the in-process API, logs the request and sets the common
//! headers.

mod resource;
pub mod respond;
pub mod route;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, header};
use serde_json::json;

use crate::auth::impersonation::Impersonation;
use crate::auth::{Authenticator, RequestAttributes, UserInfo};
use crate::cluster::Cluster;
use crate::discovery;
use crate::error::ApiError;
use crate::request_log::RequestRecord;
use route::Route;

/// Shared state of the HTTP handler.
#[derive(Clone, Debug)]
pub struct HttpState {
    /// The cluster served.
    pub cluster: Cluster,
    /// `host:port` the server listens on (legacy `/api` `serverAddressByClientCIDRs`).
    pub server_address: String,
    /// Bearer tokens → users.
    pub auth: std::sync::Arc<Authenticator>,
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
        user: String::new(),
        code: 0,
    };
    let log = !matches!(route, Route::DebugRequests);
    let authorization = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let impersonation = impersonation_of(&req);
    let request = AccessRequest {
        authorization,
        impersonation: &impersonation,
        method: &method,
        path: &path,
        query: &query,
    };
    let checked = check_access(&state, &route, &request);
    if let Some(user) = &checked.user {
        record.user = user.username.clone();
    }
    let mut resp = match (checked.denial, route) {
        (None, route) if !served(&state.cluster, &route) => respond::page_not_found(),
        (Some(err), _) => {
            describe_resource(&mut record, &RequestAttributes::from_request(&method, &path, &query));
            respond::error(&err)
        }
        (None, Route::Resource(rp)) => {
            record.group = rp.group.clone();
            record.resource = rp.plural.clone();
            record.subresource = rp.subresource.clone().unwrap_or_default();
            record.namespace = rp.namespace.clone().unwrap_or_default();
            record.name = rp.name.clone().unwrap_or_default();
            let params = route::parse_query(&query);
            record.verb = resource::verb(&method, &rp, &params).to_string();
            let headers = resource::Headers {
                accept: &accept,
                content_type: &content_type,
                user_agent: &record.user_agent,
            };
            let served = resource::handle(&state.cluster, rp, &method, &params, headers, req.into_body());
            match checked.user {
                Some(user) => crate::auth::serve_as(user, served).await,
                None => served.await,
            }
        }
        (None, other) => non_resource(&state, other, &method, &accept, &query),
    };
    record.code = resp.status().as_u16();
    if log {
        state.cluster.request_log().record(record);
    }
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(respond::CACHE_CONTROL));
    resp
}

/// False for paths the apiserver's mux has no handler for — unknown paths and groups — which
/// it answers with Go's plain-text 404 (a known group's unknown version or resource gets a
/// `Status`).
fn served(cluster: &Cluster, route: &Route) -> bool {
    let group = match route {
        Route::Unknown => return false,
        Route::Group(group) | Route::GroupVersion(group, _) => group,
        Route::Resource(rp) => &rp.group,
        _ => return true,
    };
    group.is_empty() || cluster.catalogue().all().iter().any(|r| &r.group == group)
}

/// The outcome of authentication and authorization.
struct Access {
    /// The authenticated user (None: 401).
    user: Option<UserInfo>,
    /// The 401/403 to answer instead of serving the request.
    denial: Option<ApiError>,
}

/// What a request says about who sends it and what it asks.
struct AccessRequest<'a> {
    authorization: Option<&'a str>,
    impersonation: &'a Impersonation,
    method: &'a str,
    path: &'a str,
    query: &'a str,
}

fn impersonation_of(req: &Request<Body>) -> Impersonation {
    let values = |name: &str| -> Vec<String> {
        req.headers().get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
    };
    Impersonation {
        user: values("impersonate-user").into_iter().next(),
        groups: values("impersonate-group"),
        uid: values("impersonate-uid").into_iter().next(),
    }
}

/// Authenticates, impersonates and authorizes a request before anything else is done with it
/// (as the apiserver's filters do, ahead of admission). The test hooks `/debug/*` and
/// `/metrics` are open to everyone.
fn check_access(state: &HttpState, route: &Route, request: &AccessRequest<'_>) -> Access {
    let AccessRequest { authorization, impersonation, method, path, query } = request;
    let open = matches!(route, Route::DebugRequests | Route::Metrics) || path.starts_with("/debug/");
    let user = match state.auth.authenticate(&state.cluster, *authorization) {
        Ok(user) => user,
        Err(_) if open => return Access { user: None, denial: None },
        Err(err) => return Access { user: None, denial: Some(err) },
    };
    if open {
        return Access { user: Some(user), denial: None };
    }
    let user = match crate::auth::impersonation::impersonate(&state.cluster, &user, impersonation) {
        Ok(user) => user,
        Err(err) => return Access { user: Some(user), denial: Some(err) },
    };
    let attrs = RequestAttributes::from_request(method, path, query);
    let decision = crate::auth::authorize(&state.cluster, &user, &attrs);
    let denial =
        (!decision.allowed).then(|| crate::auth::forbidden::forbidden(&user, &attrs, &decision.reason));
    Access { user: Some(user), denial }
}

/// Fills the record's resource fields of a request answered before routing (401/403).
fn describe_resource(record: &mut RequestRecord, attrs: &RequestAttributes) {
    if attrs.resource_request {
        record.verb = attrs.verb.clone();
        record.group = attrs.api_group.clone();
        record.resource = attrs.resource.clone();
        record.subresource = attrs.subresource.clone();
        record.namespace = attrs.namespace.clone();
        record.name = attrs.name.clone();
    }
}

fn non_resource(state: &HttpState, route: Route, method: &str, accept: &str, query: &str) -> Response<Body> {
    let cluster = &state.cluster;
    let all = cluster.catalogue().all();
    if method != "GET" && !(method == "DELETE" && route == Route::DebugRequests) {
        return respond::error(&crate::error::ApiError::method_not_allowed());
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
                &json!({
                    "requests": log.records_since(since),
                    "counters": log.counters(),
                    "last_seq": log.last_seq(),
                    "webhookFailures": log.webhook_failures(),
                }),
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
