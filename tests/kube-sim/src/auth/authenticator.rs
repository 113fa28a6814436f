//! From the `Authorization` header to a user, as the apiserver's authenticator chain
//! (bearer token, then anonymous) does it.

use std::sync::Arc;

use super::{TokenRegistry, UserInfo};
use crate::cluster::Cluster;
use crate::error::ApiError;

/// The admin token plus the ServiceAccount tokens.
#[derive(Debug)]
pub struct Authenticator {
    admin_token: String,
    tokens: Arc<TokenRegistry>,
}

impl Authenticator {
    /// `admin_token` authenticates as [`UserInfo::admin`].
    pub fn new(admin_token: String, tokens: Arc<TokenRegistry>) -> Self {
        Self { admin_token, tokens }
    }

    /// The ServiceAccount tokens.
    pub fn tokens(&self) -> &Arc<TokenRegistry> {
        &self.tokens
    }

    /// The user of a request with this `Authorization` header value. No header, another
    /// scheme or an empty bearer token → anonymous (as upstream's bearer authenticator
    /// declines them); an unknown, expired or revoked bearer token → 401.
    pub fn authenticate(&self, cluster: &Cluster, authorization: Option<&str>) -> Result<UserInfo, ApiError> {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Ok(UserInfo::anonymous());
        };
        if token == self.admin_token {
            return Ok(UserInfo::admin());
        }
        self.tokens.authenticate(cluster, token).map_err(|_| super::forbidden::unauthorized())
    }
}

/// The token of `Bearer TOKEN` (scheme case-insensitive), None otherwise.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_parsed_like_upstream() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Basic dXNlcjpwdw=="), None);
        assert_eq!(bearer_token("Bearer"), None);
    }

    #[test]
    fn admin_anonymous_and_unknown_tokens() {
        let cluster = Cluster::default();
        let auth = Authenticator::new("admin-token".into(), Arc::default());
        assert_eq!(auth.authenticate(&cluster, Some("Bearer admin-token")), Ok(UserInfo::admin()));
        assert_eq!(auth.authenticate(&cluster, None), Ok(UserInfo::anonymous()));
        assert_eq!(auth.authenticate(&cluster, Some("Basic eDp5")), Ok(UserInfo::anonymous()));
        assert_eq!(auth.authenticate(&cluster, Some("Bearer nope")).map_err(|e| e.code), Err(401));
    }
}
