//! `Impersonate-User` / `Impersonate-Group` / `Impersonate-Uid` (`endpoints/filters/impersonation.go`):
//! a user allowed to `impersonate` them (kubectl's `--as`, `--as-group`) is served as the
//! impersonated user. A ServiceAccount name (`system:serviceaccount:NS:NAME`) is checked against
//! `serviceaccounts` in its namespace and gets the ServiceAccount groups.

use super::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, RbacObjects, RequestAttributes, SERVICE_ACCOUNTS_GROUP, UserInfo,
    authorize, forbidden::forbidden,
};
use crate::error::ApiError;

/// What a request asks to be served as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impersonation {
    /// `Impersonate-User`.
    pub user: Option<String>,
    /// Every `Impersonate-Group`.
    pub groups: Vec<String>,
    /// `Impersonate-Uid`.
    pub uid: Option<String>,
}

impl Impersonation {
    /// True when the request asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.groups.is_empty() && self.uid.is_none()
    }
}

/// The user `requester` is served as, or the 403 for the first impersonation it may not do.
pub fn impersonate(
    objects: &dyn RbacObjects,
    requester: &UserInfo,
    asked: &Impersonation,
) -> Result<UserInfo, ApiError> {
    if asked.is_empty() {
        return Ok(requester.clone());
    }
    let Some(username) = asked.user.as_deref() else {
        return Err(ApiError::bad_request("requested impersonation without a user name"));
    };
    let check = |attrs: RequestAttributes| {
        let decision = authorize(objects, requester, &attrs);
        if decision.allowed { Ok(()) } else { Err(forbidden(requester, &attrs, &decision.reason)) }
    };
    let service_account = username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty());
    let mut groups = Vec::new();
    match service_account {
        Some((namespace, name)) => {
            check(RequestAttributes::resource("impersonate", "", "serviceaccounts", namespace, name))?;
            groups
                .extend([SERVICE_ACCOUNTS_GROUP.to_owned(), format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}")]);
        }
        None => check(RequestAttributes::resource("impersonate", "", "users", "", username))?,
    }
    for group in &asked.groups {
        check(RequestAttributes::resource("impersonate", "", "groups", "", group))?;
        groups.push(group.clone());
    }
    if let Some(uid) = &asked.uid {
        check(RequestAttributes::resource("impersonate", "authentication.k8s.io", "uids", "", uid))?;
    }
    if username != ANONYMOUS_USER && !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    Ok(UserInfo {
        username: username.to_owned(),
        uid: asked.uid.clone().unwrap_or_default(),
        groups,
        ..UserInfo::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use serde_json::Value;

    struct NoRbac;
    impl RbacObjects for NoRbac {
        fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
            Vec::new()
        }
        fn role_bindings(&self, _namespace: &str) -> Vec<Arc<Value>> {
            Vec::new()
        }
        fn cluster_role(&self, _name: &str) -> Option<Arc<Value>> {
            None
        }
        fn role(&self, _namespace: &str, _name: &str) -> Option<Arc<Value>> {
            None
        }
    }

    fn asked(user: &str) -> Impersonation {
        Impersonation { user: Some(user.into()), ..Impersonation::default() }
    }

    #[test]
    fn the_admin_becomes_the_service_account_with_its_groups() {
        let user = impersonate(&NoRbac, &UserInfo::admin(), &asked("system:serviceaccount:team:bot"))
            .expect("allowed");
        assert_eq!(user.username, "system:serviceaccount:team:bot");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]
        );
    }

    #[test]
    fn a_user_without_the_right_is_refused_as_upstream_words_it() {
        let bot = UserInfo::service_account("team", "bot", "uid-1");
        let err = impersonate(&NoRbac, &bot, &asked("alice")).expect_err("refused");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "users \"alice\" is forbidden: User \"system:serviceaccount:team:bot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
    }
}
