//! The controller's one error type.

/// Everything that can go wrong in the controller runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// A write was refused with 403 (an admission policy or RBAC forbids it).
    #[error("{what} was forbidden: {message}")]
    Forbidden {
        /// What was being written.
        what: String,
        /// The API server's message.
        message: String,
    },
    /// A background task of the controller stopped unexpectedly.
    #[error("controller task {0} stopped unexpectedly")]
    TaskStopped(&'static str),
}

impl Error {
    /// HTTP status of an API error, if this is one.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Error::Kube(kube::Error::Api(status)) => Some(status.code),
            Error::Forbidden { .. } => Some(403),
            _ => None,
        }
    }
}

/// 409 Conflict, or 422 from a failed JSON-patch `test`: re-read and recompute.
pub fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_conflict() || s.code == 422)
}

/// 403 Forbidden.
pub fn is_forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_forbidden())
}

/// 404 Not Found.
pub fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found())
}

/// 409 AlreadyExists on create.
pub fn is_already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_already_exists())
}

/// The API server's message for an API error, else the error's text.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}
