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
//! * [`access_review`]: SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview.
//! * [`impersonation`]: `Impersonate-User`/`-Group`/`-Uid` (kubectl's `--as`).

pub mod access_review;
pub mod attributes;
pub mod authenticator;
pub mod bootstrap;
pub mod forbidden;
pub mod impersonation;
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

/// The admin identity of the kubeconfig written at start (named as the real control plane of
/// `tests/cluster` names its admin, so both answer alike).
pub const ADMIN_USER: &str = "admin";
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// `system:serviceaccount:ns:name`, `admin`, `system:anonymous`.
    pub username: String,
    /// The ServiceAccount's uid; empty for the others.
    pub uid: String,
    /// Groups, `system:authenticated` included for authenticated users.
    pub groups: Vec<String>,
    /// Extra attributes (a bound ServiceAccount token's `authentication.kubernetes.io/credential-id`).
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The all-powerful admin of the kubeconfig written at start.
    pub fn admin() -> Self {
        Self {
            username: ADMIN_USER.to_string(),
            // A static-token user's uid is its name (tests/cluster's token file does the same).
            uid: ADMIN_USER.to_string(),
            groups: vec![MASTERS_GROUP.to_string(), AUTHENTICATED_GROUP.to_string()],
            extra: Default::default(),
        }
    }

    /// A request without credentials.
    pub fn anonymous() -> Self {
        Self {
            username: ANONYMOUS_USER.to_string(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.to_string()],
            extra: Default::default(),
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
            extra: Default::default(),
        }
    }

    /// Who kube-sim's in-process controllers write as: kube-controller-manager's own identity
    /// (upstream may also run each controller under its own ServiceAccount).
    pub fn controller_manager() -> Self {
        Self {
            username: CONTROLLER_MANAGER_USER.to_string(),
            uid: String::new(),
            groups: vec![AUTHENTICATED_GROUP.to_string()],
            extra: Default::default(),
        }
    }

    /// True when the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The AdmissionReview's `request.userInfo` (`authentication/v1` UserInfo: empty fields
    /// are omitted, as Go's `omitempty` does).
    pub fn to_review_json(&self) -> serde_json::Value {
        let mut info = serde_json::json!({"username": self.username});
        if !self.uid.is_empty() {
            info["uid"] = self.uid.clone().into();
        }
        if !self.groups.is_empty() {
            info["groups"] = self.groups.clone().into();
        }
        if !self.extra.is_empty() {
            info["extra"] = serde_json::json!(self.extra);
        }
        info
    }
}

/// kube-controller-manager's user name.
pub const CONTROLLER_MANAGER_USER: &str = "system:kube-controller-manager";

tokio::task_local! {
    /// The user of the API request being served (upstream: `request.UserFrom(ctx)`); unset
    /// while kube-sim's own controllers write.
    static REQUEST_USER: UserInfo;
}

/// Serves `work` as a request of `user`: admission reviews made meanwhile name this user.
pub async fn serve_as<F: std::future::Future>(user: UserInfo, work: F) -> F::Output {
    REQUEST_USER.scope(user, work).await
}

/// The user of the request being served, or kube-controller-manager for an in-process write.
pub fn current_user() -> UserInfo {
    REQUEST_USER.try_with(UserInfo::clone).unwrap_or_else(|_| UserInfo::controller_manager())
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}
