//! Authentication and RBAC authorization, as the apiserver does them.
//!
//! * [`authenticator`]: bearer tokens → [`UserInfo`] (the admin token of the kubeconfig,
//!   ServiceAccount tokens from [`tokens`], anonymous without a token, 401 for unknown ones).
//! * [`attributes`]: the request attributes (`RequestInfo` port: verb, group, resource,
//!   subresource, namespace, name, or a non-resource path).
//! * [`rbac`]: the pure RBAC authorizer over Roles, RoleBindings, ClusterRoles and
//!   ClusterRoleBindings (`plugin/pkg/auth/authorizer/rbac`), plus `system:masters`.
//! * [`forbidden`]: the 401/403 `Status` bodies with the apiserver's messages.
//! * [`bootstrap`]: the upstream default ClusterRoles/Bindings that make discovery work.
//! * [`token_request`]: the `serviceaccounts/token` subresource (TokenRequest).

pub mod attributes;
pub mod authenticator;
pub mod bootstrap;
pub mod forbidden;
pub(crate) mod protobuf_bodies;
pub mod rbac;
pub mod token_request;
pub mod tokens;

#[cfg(test)]
mod rbac_tests;

pub use attributes::RequestAttributes;
pub use authenticator::Authenticator;
pub use rbac::{Decision, RbacObjects, authorize};
pub use tokens::TokenRegistry;

/// The admin identity of the kubeconfig written at start.
pub const ADMIN_USER: &str = "kube-sim-admin";
/// The group every request from it is allowed by (upstream's privileged group).
pub const MASTERS_GROUP: &str = "system:masters";
/// Added to every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The only group of the anonymous user.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of all ServiceAccounts (`system:serviceaccounts:<ns>` holds one namespace's).
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// Who made a request (`user.Info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    /// `system:serviceaccount:ns:name`, `kube-sim-admin`, `system:anonymous`.
    pub username: String,
    /// The ServiceAccount's uid; empty for the others.
    pub uid: String,
    /// Groups, `system:authenticated` included for authenticated users.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The all-powerful admin of the kubeconfig written at start.
    pub fn admin() -> Self {
        Self {
            username: ADMIN_USER.to_string(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.to_string(), AUTHENTICATED_GROUP.to_string()],
        }
    }

    /// A request without credentials.
    pub fn anonymous() -> Self {
        Self {
            username: ANONYMOUS_USER.to_string(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.to_string()],
        }
    }

    /// A ServiceAccount, with the groups upstream's token authenticator gives it.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            username: service_account_username(namespace, name),
            uid: uid.to_string(),
            groups: vec![
                SERVICE_ACCOUNTS_GROUP.to_string(),
                format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
                AUTHENTICATED_GROUP.to_string(),
            ],
        }
    }

    /// True when the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}
