//! `generic.Webhook.ShouldCallHook` (k8s-semantics §3.2): exemption, namespaceSelector,
//! objectSelector, rules (with subresources and `matchPolicy: Equivalent`).

use serde_json::{Map, Value};

use super::labels_of;
use crate::selector::LabelSelector;

/// The admission operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST.
    Create,
    /// PUT / PATCH.
    Update,
    /// DELETE.
    Delete,
    /// CONNECT.
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

/// A resource with its kind in one group/version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRef {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource (`pods`).
    pub resource: String,
    /// The kind sent for this resource and subresource (`Eviction` for `pods/eviction`).
    pub kind: ResourceKind,
}

/// A group/version/kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceKind {
    /// API group of the kind (`policy` for Eviction).
    pub group: String,
    /// Version of the kind.
    pub version: String,
    /// Kind.
    pub kind: String,
}

impl ResourceRef {
    /// Builds a reference: resource `group/version/resource`, kind `kind_api_version`/`kind`.
    pub fn new(group: &str, version: &str, resource: &str, kind_api_version: &str, kind: &str) -> Self {
        let (kind_group, kind_version) = kind_api_version.split_once('/').unwrap_or(("", kind_api_version));
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            kind: ResourceKind { group: kind_group.into(), version: kind_version.into(), kind: kind.into() },
        }
    }
}

/// What admission knows about a request.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionAttributes {
    /// The requested resource and kind.
    pub resource: ResourceRef,
    /// `eviction`, `status`, `scale`, or `""`.
    pub subresource: String,
    /// The operation.
    pub operation: Operation,
    /// Namespace (`""` for cluster-scoped objects; a Namespace's own name for namespaces).
    pub namespace: String,
    /// Object name (`""` on create with generateName).
    pub name: String,
    /// The new object (None for DELETE); for evictions the Eviction, for scale the Scale.
    pub object: Option<Value>,
    /// The stored object (None for CREATE and CONNECT).
    pub old_object: Option<Value>,
    /// `?dryRun=All` (not an eviction body's deleteOptions.dryRun).
    pub dry_run: bool,
    /// The `CreateOptions`/`UpdateOptions`/`DeleteOptions` JSON (Null for CONNECT).
    pub options: Value,
    /// The requester (`{"username": ..., "groups": [...]}`).
    pub user_info: Value,
    /// Other group/versions serving the same resource, for `matchPolicy: Equivalent`.
    pub equivalents: Vec<ResourceRef>,
}

/// A webhook to call, with the resource and kind it is sent (after Equivalent matching).
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// The resource sent as `resource`.
    pub resource: ResourceRef,
}

const EXEMPT: &[&str] = &[
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
];

fn selector_of(webhook: &Value, field: &str) -> Result<LabelSelector, String> {
    match webhook.get(field) {
        None | Some(Value::Null) => Ok(LabelSelector::default()),
        Some(selector) => LabelSelector::from_api(selector),
    }
}

fn is_namespace_resource(resource: &ResourceRef) -> bool {
    resource.group.is_empty() && resource.version == "v1" && resource.resource == "namespaces"
}

fn matches_any(items: &[Value], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// upstream `rules.Matcher.Matches` for one rule against `resource`.
fn rule_matches(rule: &Value, attributes: &AdmissionAttributes, resource: &ResourceRef) -> bool {
    let list = |field: &str| rule.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "*" => true,
        "Namespaced" => !is_namespace_resource(resource) && !attributes.namespace.is_empty(),
        "Cluster" => is_namespace_resource(resource) || attributes.namespace.is_empty(),
        _ => false,
    };
    let resource_ok = list("resources").iter().filter_map(Value::as_str).any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
        (res == "*" || res == resource.resource) && (sub == "*" || sub == attributes.subresource)
    });
    scope_ok
        && matches_any(&list("operations"), attributes.operation.as_str())
        && matches_any(&list("apiGroups"), &resource.group)
        && matches_any(&list("apiVersions"), &resource.version)
        && resource_ok
}

/// Whether `webhook` must be called for the request, and with which resource.
///
/// `namespace_labels` are the labels of the request's Namespace object (None when it does
/// not exist). An error (a selector that does not parse, or a needed namespace that is
/// missing) is returned only when the rules match, as upstream: the caller answers it as a
/// 500 (`Internal error occurred: ...`) or 404 for the namespace.
pub fn should_call_hook(
    webhook: &Value,
    attributes: &AdmissionAttributes,
    namespace_labels: Option<&Map<String, Value>>,
) -> Result<Option<Invocation>, String> {
    if attributes.resource.group == "admissionregistration.k8s.io"
        && EXEMPT.contains(&attributes.resource.resource.as_str())
    {
        return Ok(None);
    }
    let namespace_match: Result<bool, String> = (|| {
        if attributes.namespace.is_empty() && attributes.resource.resource != "namespaces" {
            return Ok(true);
        }
        let selector = selector_of(webhook, "namespaceSelector")?;
        if selector.is_empty() {
            return Ok(true);
        }
        if is_namespace_resource(&attributes.resource) {
            let object = attributes.object.as_ref().or(attributes.old_object.as_ref());
            return Ok(selector.matches_labels(labels_of(object)));
        }
        match namespace_labels {
            Some(labels) => Ok(selector.matches_labels(Some(labels))),
            None => Err(format!("namespaces \"{}\" not found", attributes.namespace)),
        }
    })();
    if namespace_match == Ok(false) {
        return Ok(None);
    }
    // A null object (oldObject on CREATE, object on DELETE) never matches a non-empty selector.
    let object_match: Result<bool, String> = selector_of(webhook, "objectSelector").map(|selector| {
        let matches =
            |object: &Option<Value>| object.is_some() && selector.matches_labels(labels_of(object.as_ref()));
        selector.is_empty() || matches(&attributes.object) || matches(&attributes.old_object)
    });
    if object_match == Ok(false) {
        return Ok(None);
    }
    let rules = webhook.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut invocation = rules
        .iter()
        .any(|rule| rule_matches(rule, attributes, &attributes.resource))
        .then(|| Invocation { resource: attributes.resource.clone() });
    if invocation.is_none()
        && webhook.get("matchPolicy").and_then(Value::as_str).unwrap_or("Equivalent") == "Equivalent"
    {
        invocation = rules.iter().find_map(|rule| {
            attributes
                .equivalents
                .iter()
                .filter(|e| **e != attributes.resource)
                .find(|e| rule_matches(rule, attributes, e))
                .map(|e| Invocation { resource: e.clone() })
        });
    }
    if invocation.is_none() {
        return Ok(None);
    }
    namespace_match?;
    object_match?;
    Ok(invocation)
}
