//! ServiceAccount tokens: opaque random strings kept in memory (not JWTs: nothing outside
//! kube-sim validates them). A token is bound to its ServiceAccount's uid, so deleting (or
//! recreating) the ServiceAccount revokes it, as upstream's bound tokens are.

use std::collections::HashMap;
use std::sync::Mutex;

use super::UserInfo;
use crate::cluster::{Cluster, Gvr};

/// One issued token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedToken {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// The ServiceAccount's uid when the token was issued.
    pub uid: String,
    /// Expiry; None = never (tokens for kubeconfigs written by kube-sim itself).
    pub expires: Option<jiff::Timestamp>,
    /// The token's id (a bound token's `jti` claim).
    pub jti: String,
}

/// Every ServiceAccount token issued by this server.
#[derive(Debug, Default)]
pub struct TokenRegistry {
    tokens: Mutex<HashMap<String, IssuedToken>>,
}

/// Why a token does not authenticate (all answered with the same 401).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Never issued here.
    #[error("unknown token")]
    Unknown,
    /// Past its expiry.
    #[error("token has expired")]
    Expired,
    /// Its ServiceAccount is gone, being deleted, or was recreated with another uid.
    #[error("service account {0} has been deleted")]
    Revoked(String),
}

pub(crate) fn service_accounts() -> Gvr {
    Gvr::new("", "v1", "serviceaccounts")
}

impl TokenRegistry {
    /// Issues a new token for the ServiceAccount `namespace/name` with uid `uid`.
    pub fn issue(&self, namespace: &str, name: &str, uid: &str, expires: Option<jiff::Timestamp>) -> String {
        let token = format!("kube-sim-sa.{}", uuid::Uuid::new_v4().simple());
        let jti = uuid::Uuid::new_v4().to_string();
        let issued =
            IssuedToken { namespace: namespace.into(), name: name.into(), uid: uid.into(), expires, jti };
        self.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(token.clone(), issued);
        token
    }

    /// The identity of `token`, checked against the ServiceAccount in `cluster` now.
    pub fn authenticate(&self, cluster: &Cluster, token: &str) -> Result<UserInfo, TokenError> {
        let issued = self
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(token)
            .cloned()
            .ok_or(TokenError::Unknown)?;
        if issued.expires.is_some_and(|at| at <= jiff::Timestamp::now()) {
            return Err(TokenError::Expired);
        }
        let revoked = || TokenError::Revoked(format!("{}/{}", issued.namespace, issued.name));
        let account =
            cluster.get(&service_accounts(), Some(&issued.namespace), &issued.name).map_err(|_| revoked())?;
        let meta = &account["metadata"];
        if meta["uid"].as_str() != Some(issued.uid.as_str()) || meta["deletionTimestamp"].is_string() {
            return Err(revoked());
        }
        // What upstream's ServiceAccount token authenticator adds for a bound token.
        let mut user = UserInfo::service_account(&issued.namespace, &issued.name, &issued.uid);
        user.extra
            .insert("authentication.kubernetes.io/credential-id".into(), vec![format!("JTI={}", issued.jti)]);
        Ok(user)
    }
}
