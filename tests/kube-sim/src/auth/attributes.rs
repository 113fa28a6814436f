//! Request attributes for authorization: a port of the apiserver's `RequestInfoFactory`
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), computed from the
//! method, path and query alone, before routing (so unknown paths are authorized as upstream
//! authorizes them, before any 404).

/// What the authorizer sees of a request (`authorizer.Attributes`, minus the user).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `proxy`; for non-resource requests the lower-case HTTP method.
    pub verb: String,
    /// False for discovery, `/version`, `/healthz`, ... (then only `verb` and `path` count).
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
    /// API group (`""` for core).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Namespace (`""` for cluster scope; for `namespaces/NAME` requests, `NAME`).
    pub namespace: String,
    /// Resource plural.
    pub resource: String,
    /// Subresource or `""`.
    pub subresource: String,
    /// Object name, or the `metadata.name` a list/watch field selector pins; `""` otherwise.
    pub name: String,
}

impl RequestAttributes {
    /// A resource request (for tests and in-process checks).
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Self {
            verb: verb.to_string(),
            resource_request: true,
            api_group: group.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..Self::default()
        }
    }

    /// The same request on a subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_string();
        self
    }

    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Self { verb: verb.to_string(), path: path.to_string(), ..Self::default() }
    }

    /// Attributes of an HTTP request. `query` is the raw query string.
    pub fn from_request(method: &str, path: &str, query: &str) -> Self {
        let mut info = Self::non_resource(&method.to_lowercase(), path);
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return info;
        }
        let groupless = parts[0] == "api";
        parts.remove(0);
        if !groupless {
            // `/apis/GROUP/VERSION` alone is discovery.
            if parts.len() < 3 {
                return info;
            }
            info.api_group = parts.remove(0).to_string();
        }
        info.resource_request = true;
        info.api_version = parts.remove(0).to_string();

        if matches!(parts.first(), Some(&("watch" | "proxy"))) {
            if parts.len() < 2 {
                // Upstream returns an error here and the request is rejected; a non-resource
                // request is the closest (it is denied for everyone but system:masters).
                info.resource_request = false;
                return info;
            }
            info.verb = parts.remove(0).to_string();
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string();
        }

        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            info.namespace = parts[1].to_string();
            // `namespaces/NAME/status|finalize` are subresources of the namespace itself.
            if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
                parts.drain(..2);
            }
        }

        if parts.len() >= 3 && info.verb != "proxy" {
            info.subresource = parts[2].to_string();
        }
        if parts.len() >= 2 {
            info.name = parts[1].to_string();
        }
        if let Some(resource) = parts.first() {
            info.resource = (*resource).to_string();
        }

        if info.name.is_empty() && info.verb == "get" {
            let params = crate::http::route::parse_query(query);
            let value = |key: &str| params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
            info.verb = match value("watch") {
                Some(w) if !is_false(w) => "watch",
                _ => "list",
            }
            .to_string();
            if let Some(name) = value("fieldSelector").and_then(exact_name_match)
                && is_valid_path_segment(&name)
            {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        info
    }
}

/// `Convert_Slice_string_To_bool`: only `0`, `f` and `false` (any case) are false.
fn is_false(value: &str) -> bool {
    value == "0" || value.eq_ignore_ascii_case("f") || value.eq_ignore_ascii_case("false")
}

/// `fields.Selector.RequiresExactMatch("metadata.name")`: the value of a `metadata.name=X`
/// (or `==`) term.
fn exact_name_match(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let term = term.trim();
        if term.contains("!=") {
            return None;
        }
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        (field.trim() == "metadata.name").then(|| value.trim().to_string())
    })
}

/// `path.IsValidPathSegmentName`: not `.`/`..`, no `/` or `%`.
fn is_valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

#[cfg(test)]
mod tests {
    use super::RequestAttributes;

    fn attrs(method: &str, path: &str, query: &str) -> RequestAttributes {
        RequestAttributes::from_request(method, path, query)
    }

    #[test]
    fn resource_paths_map_to_upstream_verbs_and_scopes() {
        let a = attrs("GET", "/api/v1/namespaces/ns1/pods/web-1", "");
        assert_eq!(
            (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str(), a.name.as_str()),
            ("get", "ns1", "pods", "web-1")
        );
        assert!(a.resource_request);
        assert_eq!(attrs("GET", "/api/v1/namespaces/ns1/pods", "limit=500").verb, "list");
        assert_eq!(attrs("GET", "/api/v1/pods", "watch=true").verb, "watch");
        assert_eq!(attrs("GET", "/api/v1/pods", "watch=false").verb, "list");
        assert_eq!(attrs("GET", "/api/v1/watch/namespaces/ns1/pods", "").verb, "watch");
        assert_eq!(attrs("DELETE", "/api/v1/namespaces/ns1/pods", "").verb, "deletecollection");
        assert_eq!(attrs("DELETE", "/api/v1/namespaces/ns1/pods/a", "").verb, "delete");
        let d = attrs("PATCH", "/apis/apps/v1/namespaces/ns1/deployments/web/scale", "");
        assert_eq!(
            (d.verb.as_str(), d.api_group.as_str(), d.resource.as_str(), d.subresource.as_str()),
            ("patch", "apps", "deployments", "scale")
        );
        let e = attrs("POST", "/api/v1/namespaces/ns1/pods/web-1/eviction", "");
        assert_eq!(
            (e.verb.as_str(), e.subresource.as_str(), e.name.as_str()),
            ("create", "eviction", "web-1")
        );
    }

    #[test]
    fn a_namespace_is_its_own_scope() {
        let ns = attrs("GET", "/api/v1/namespaces/ns1", "");
        assert_eq!(
            (ns.resource.as_str(), ns.name.as_str(), ns.namespace.as_str()),
            ("namespaces", "ns1", "ns1")
        );
        let status = attrs("PUT", "/api/v1/namespaces/ns1/status", "");
        assert_eq!((status.subresource.as_str(), status.namespace.as_str()), ("status", "ns1"));
        let all = attrs("GET", "/api/v1/namespaces", "");
        assert_eq!((all.verb.as_str(), all.namespace.as_str()), ("list", ""));
    }

    #[test]
    fn a_metadata_name_field_selector_names_the_object_of_a_list_or_watch() {
        let a = attrs("GET", "/api/v1/namespaces/ns1/pods", "fieldSelector=metadata.name%3Dweb-1");
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "web-1"));
        let w = attrs("GET", "/api/v1/namespaces/ns1/pods", "watch=1&fieldSelector=metadata.name==web-1");
        assert_eq!((w.verb.as_str(), w.name.as_str()), ("watch", "web-1"));
        assert_eq!(attrs("GET", "/api/v1/pods", "fieldSelector=metadata.name!=web-1").name, "");
        assert_eq!(attrs("GET", "/api/v1/pods", "fieldSelector=spec.nodeName=n1").name, "");
        // Only get→list/watch take the name; deletecollection does not.
        assert_eq!(attrs("DELETE", "/api/v1/namespaces/a/pods", "fieldSelector=metadata.name=x").name, "");
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource_requests() {
        for path in
            ["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version", "/healthz", "/foo"]
        {
            let a = attrs("GET", path, "");
            assert!(!a.resource_request, "{path}");
            assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", path));
        }
        assert_eq!(attrs("POST", "/foo", "").verb, "post");
    }
}
