//! Discovery documents: `/version`, aggregated (v2) and legacy `/api`, `/apis`, group and
//! group-version resource lists, and the minimal OpenAPI v3 kubectl needs to validate.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;

/// The exact content type that makes kubectl treat `/api` and `/apis` as aggregated discovery.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// What a resource serves: the access reviews only `create`.
fn verbs(r: &ResourceInfo) -> &'static [&'static str] {
    if r.create_only { &["create"] } else { VERBS }
}

/// `/version`: minor "32" makes the kubectl dispatcher run its built-in 1.32.
pub fn version() -> Value {
    json!({"major": "1", "minor": "32", "gitVersion": "v1.32.0-kube-sim", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
        "platform": "linux/amd64"})
}

/// True when the Accept header asks for aggregated discovery.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.contains("as=APIGroupDiscoveryList")
}

fn response_kind(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut entry = json!({
        "resource": r.plural,
        "responseKind": response_kind(&r.group, &r.version, &r.kind),
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": verbs(r),
    });
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
    let mut subs = Vec::new();
    if r.status {
        subs.push(
            json!({"subresource": "status", "responseKind": response_kind(&r.group, &r.version, &r.kind),
            "verbs": ["get", "patch", "update"]}),
        );
    }
    if r.scale.is_some() {
        subs.push(
            json!({"subresource": "scale", "responseKind": response_kind("autoscaling", "v1", "Scale"),
            "verbs": ["get", "patch", "update"]}),
        );
    }
    for extra in &r.extra_subresources {
        subs.push(json!({"subresource": extra.name, "responseKind": response_kind(&extra.group, &extra.version, &extra.kind),
            "verbs": extra.verbs}));
    }
    if !subs.is_empty() {
        entry["subresources"] = Value::Array(subs);
    }
    entry
}

/// The resources of one version of a group.
type VersionResources = (String, Vec<Arc<ResourceInfo>>);

/// Groups (in first-registration order) with their versions (in registration order).
fn groups(all: &[Arc<ResourceInfo>]) -> Vec<(String, Vec<VersionResources>)> {
    let mut out: Vec<(String, Vec<VersionResources>)> = Vec::new();
    for r in all.iter().filter(|r| !r.group.is_empty()) {
        let gi = match out.iter().position(|(g, _)| *g == r.group) {
            Some(i) => i,
            None => {
                out.push((r.group.clone(), Vec::new()));
                out.len() - 1
            }
        };
        let versions = &mut out[gi].1;
        match versions.iter_mut().find(|(v, _)| *v == r.version) {
            Some((_, rs)) => rs.push(r.clone()),
            None => versions.push((r.version.clone(), vec![r.clone()])),
        }
    }
    out
}

fn version_entry(version: &str, resources: &[Arc<ResourceInfo>]) -> Value {
    json!({"version": version, "freshness": "Current",
        "resources": resources.iter().map(|r| aggregated_resource(r)).collect::<Vec<_>>()})
}

/// Aggregated `/api`.
pub fn aggregated_core(all: &[Arc<ResourceInfo>]) -> Value {
    let core: Vec<Arc<ResourceInfo>> = all.iter().filter(|r| r.group.is_empty()).cloned().collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
        "items": [{"metadata": {}, "versions": [version_entry("v1", &core)]}]})
}

/// Aggregated `/apis`.
pub fn aggregated_groups(all: &[Arc<ResourceInfo>]) -> Value {
    let items: Vec<Value> = groups(all)
        .into_iter()
        .map(|(g, versions)| {
            json!({"metadata": {"name": g},
                "versions": versions.iter().map(|(v, rs)| version_entry(v, rs)).collect::<Vec<_>>()})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// Legacy `/api`.
pub fn legacy_core(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

fn legacy_group(group: &str, versions: &[VersionResources]) -> Value {
    let vs: Vec<Value> =
        versions.iter().map(|(v, _)| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// Legacy `/apis`.
pub fn legacy_groups(all: &[Arc<ResourceInfo>]) -> Value {
    let gs: Vec<Value> = groups(all).iter().map(|(g, vs)| legacy_group(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

/// Legacy `/apis/GROUP`, or None when the group is not served.
pub fn legacy_group_doc(all: &[Arc<ResourceInfo>], group: &str) -> Option<Value> {
    groups(all).into_iter().find(|(g, _)| g == group).map(|(g, vs)| {
        let mut doc = legacy_group(&g, &vs);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        doc
    })
}

/// `APIResourceList` for `/api/v1` or `/apis/GROUP/VERSION`, or None when not served.
pub fn resource_list(all: &[Arc<ResourceInfo>], group: &str, version: &str) -> Option<Value> {
    let rs: Vec<&Arc<ResourceInfo>> =
        all.iter().filter(|r| r.group == group && r.version == version).collect();
    if rs.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for r in rs {
        let mut entry = json!({"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": verbs(r)});
        if !r.create_only {
            entry["storageVersionHash"] = json!(storage_version_hash(r));
        }
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        if r.status {
            resources.push(
                json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced,
                "kind": r.kind, "verbs": ["get", "patch", "update"]}),
            );
        }
        if r.scale.is_some() {
            resources.push(json!({"name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
        for extra in &r.extra_subresources {
            resources.push(json!({"name": format!("{}/{}", r.plural, extra.name), "singularName": "",
                "namespaced": r.namespaced, "group": extra.group, "version": extra.version, "kind": extra.kind,
                "verbs": extra.verbs}));
        }
    }
    // Upstream lists them by name.
    resources.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// Upstream's `StorageVersionHash`: the first 8 bytes of SHA-256 of the stored
/// `group/version/kind`, in base64 (events.k8s.io Events are stored as core Events).
fn storage_version_hash(r: &ResourceInfo) -> String {
    use base64::Engine as _;
    let gvk = format!("{}/{}/{}", r.storage_group, r.version, r.kind);
    let digest = ring::digest::digest(&ring::digest::SHA256, gvk.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// `/openapi/v3`: one entry per served group-version.
pub fn openapi_root(all: &[Arc<ResourceInfo>]) -> Value {
    let mut paths = Map::new();
    for r in all {
        let key = if r.group.is_empty() {
            format!("api/{}", r.version)
        } else {
            format!("apis/{}/{}", r.group, r.version)
        };
        let url = format!("/openapi/v3/{key}");
        paths.entry(key).or_insert_with(|| json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `/openapi/v3/<gv>`: for each kind, a PATCH operation declaring `fieldValidation`, which is
/// what makes kubectl's strict validation pass without a full schema.
pub fn openapi_group_version(all: &[Arc<ResourceInfo>], group: &str, version: &str) -> Option<Value> {
    let mut paths = Map::new();
    for r in all.iter().filter(|r| r.group == group && r.version == version) {
        let prefix =
            if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
        let path = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        paths.insert(
            path,
            json!({"patch": {"x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.kind},
                "parameters": [{"name": "fieldValidation", "in": "query"}]}}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths}))
}
