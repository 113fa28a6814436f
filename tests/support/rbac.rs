//! Least privilege, checked against what the product really did: the rules of the shipped
//! Roles and ClusterRoles, matched with the apiserver's audit log the way the RBAC authorizer
//! matches a request (verb, API group, resource[/subresource], resourceNames — a list or watch
//! pinned with `fieldSelector=metadata.name=X` counts as naming X).

use super::Request;
use serde_json::Value;

use super::{PRODUCT_AGENT, repo_path};

/// One verb of one rule: `(verb, apiGroups, resources, resourceNames)`.
#[derive(Clone, Debug)]
pub struct Grant {
    pub role: String,
    pub verb: String,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} {:?} {:?}", self.role, self.verb, self.api_groups, self.resources)?;
        if !self.resource_names.is_empty() {
            write!(f, " names {:?}", self.resource_names)?;
        }
        Ok(())
    }
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// Every verb of every rule of the Roles and ClusterRoles in deploy/`file`.
pub fn grants(file: &str) -> Vec<Grant> {
    let text = std::fs::read_to_string(repo_path(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let objects: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut grants = Vec::new();
    for object in objects.iter().filter(|o| matches!(o["kind"].as_str(), Some("Role" | "ClusterRole"))) {
        let role = format!("{} {}", object["kind"].as_str().unwrap_or_default(), object["metadata"]["name"]);
        for rule in object["rules"].as_array().into_iter().flatten() {
            for verb in strings(&rule["verbs"]) {
                grants.push(Grant {
                    role: role.clone(),
                    verb,
                    api_groups: strings(&rule["apiGroups"]),
                    resources: strings(&rule["resources"]),
                    resource_names: strings(&rule["resourceNames"]),
                });
            }
        }
    }
    grants
}

/// The object a request names: its path's name, or a list/watch's `metadata.name` selector.
fn named(record: &Request) -> String {
    if !record.name.is_empty() {
        return record.name.clone();
    }
    record
        .query
        .split('&')
        .filter_map(|pair| pair.strip_prefix("fieldSelector="))
        .map(|v| v.replace("%3D", "=").replace("%3d", "="))
        .find_map(|v| v.strip_prefix("metadata.name=").map(str::to_owned))
        .unwrap_or_default()
}

fn covers(grant: &Grant, record: &Request) -> bool {
    let resource = if record.subresource.is_empty() {
        record.resource.clone()
    } else {
        format!("{}/{}", record.resource, record.subresource)
    };
    grant.verb == record.verb
        && grant.api_groups.contains(&record.group)
        && grant.resources.contains(&resource)
        && (grant.resource_names.is_empty() || grant.resource_names.contains(&named(record)))
}

/// The grants in `grants` that no product request in `requests` used.
pub fn unused<'a>(grants: &'a [Grant], requests: &[Request]) -> Vec<&'a Grant> {
    let product: Vec<&Request> = requests
        .iter()
        .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT) && !matches!(r.code, 401 | 403))
        .collect();
    grants.iter().filter(|g| !product.iter().any(|r| covers(g, r))).collect()
}
