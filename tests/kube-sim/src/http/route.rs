//! Parsing request paths into routes (the apiserver's `RequestInfo`).

use crate::resources::Catalogue;

/// A resource request path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// Group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural.
    pub plural: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource.
    pub subresource: Option<String>,
}

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and sub-paths).
    Health,
    /// `/metrics`.
    Metrics,
    /// `/debug/requests`.
    DebugRequests,
    /// `/api`.
    ApiRoot,
    /// `/apis`.
    ApisRoot,
    /// `/apis/GROUP`.
    Group(String),
    /// `/api/v1` or `/apis/GROUP/VERSION`.
    GroupVersion(String, String),
    /// `/openapi/v3`.
    OpenApiV3Root,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/G/V`.
    OpenApiV3GroupVersion(String, String),
    /// A resource path.
    Resource(ResourcePath),
    /// Anything else.
    Unknown,
}

/// Parses `path` (already percent-decoded segments are not needed: names are plain).
pub fn parse(path: &str, catalogue: &Catalogue) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["metrics"] => Route::Metrics,
        ["debug", "requests"] => Route::DebugRequests,
        ["api"] => Route::ApiRoot,
        ["apis"] => Route::ApisRoot,
        ["apis", group] => Route::Group((*group).to_string()),
        ["api", version] => Route::GroupVersion(String::new(), (*version).to_string()),
        ["apis", group, version] => Route::GroupVersion((*group).to_string(), (*version).to_string()),
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", "api", v] => Route::OpenApiV3GroupVersion(String::new(), (*v).to_string()),
        ["openapi", "v3", "apis", g, v] => Route::OpenApiV3GroupVersion((*g).to_string(), (*v).to_string()),
        ["api", version, rest @ ..] => resource("", version, rest, catalogue),
        ["apis", group, version, rest @ ..] => resource(group, version, rest, catalogue),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str], catalogue: &Catalogue) -> Route {
    let base =
        ResourcePath { group: group.to_string(), version: version.to_string(), ..ResourcePath::default() };
    let s = |x: &str| Some(x.to_string());
    let namespaced_collection = |ns: &str, plural: &str| {
        catalogue.find(group, version, plural).is_some_and(|r| r.namespaced) && !ns.is_empty()
    };
    let path = match rest {
        ["namespaces", ns, plural, tail @ ..] if namespaced_collection(ns, plural) => {
            let (name, sub) = match tail {
                [] => (None, None),
                [name] => (s(name), None),
                [name, sub] => (s(name), s(sub)),
                _ => return Route::Unknown,
            };
            ResourcePath { plural: (*plural).to_string(), namespace: s(ns), name, subresource: sub, ..base }
        }
        [plural] => ResourcePath { plural: (*plural).to_string(), ..base },
        [plural, name] => ResourcePath { plural: (*plural).to_string(), name: s(name), ..base },
        [plural, name, sub] => {
            ResourcePath { plural: (*plural).to_string(), name: s(name), subresource: s(sub), ..base }
        }
        _ => return Route::Unknown,
    };
    Route::Resource(path)
}

/// Decodes a query string into (key, value) pairs.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
