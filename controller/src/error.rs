//! The controller's one error type.

/// Everything that can go wrong in the controller runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// An evaluation took longer than it may (a slow or hung API call).
    #[error("took longer than {0:?} (an API call did not answer); given up")]
    TimedOut(std::time::Duration),
    /// A cleanup step failed with an error other than NotFound or a persistent Conflict.
    #[error("{what} failed: {}", message(api_error))]
    Step {
        /// The step, naming the object (e.g. `delete poddisruptionbudget team/web-eviction-autoscaler`).
        what: String,
        /// The API error (its message is in the display; not chained, so not printed twice).
        api_error: kube::Error,
    },
    /// `cleanup --stop-deployment`: the product could not be stopped, so nothing was cleaned
    /// up (a running replica would recreate it).
    #[error("the product's deployment {deployment} did not stop ({why}); nothing cleaned up while it runs")]
    ProductNotStopped {
        /// `namespace/name`.
        deployment: String,
        /// Why.
        why: String,
    },
    /// `audit`: a read it needs was refused or failed; the API server's message names the verb
    /// and resource (a 403 says which permission is missing).
    #[error("{what} failed: {}", message(api_error))]
    Read {
        /// The read, e.g. `list pods`.
        what: String,
        /// The API error.
        api_error: kube::Error,
    },
    /// `audit`: the product's settings cannot be used, or the node asked for is not there.
    #[error("{0}")]
    Settings(String),
    /// A background task of the controller stopped unexpectedly.
    #[error("controller task {0} stopped unexpectedly")]
    TaskStopped(&'static str),
}

impl Error {
    /// A short, stable name for the kind of failure (`reconcile_failures_total{error}`).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) if self.is_not_leader() => "not_leader",
            Error::Kube(kube::Error::Api(status)) => match status.code {
                403 => "forbidden",
                404 => "not_found",
                409 | 422 => "conflict",
                429 => "throttled",
                500.. => "server_error",
                _ => "refused",
            },
            Error::Kube(kube::Error::Service(e)) if e.is::<WriteTimedOut>() => "timeout",
            Error::Kube(_) => "unreachable",
            Error::TimedOut(_) => "timeout",
            Error::TaskStopped(_) => "task_stopped",
            Error::Step { .. } | Error::ProductNotStopped { .. } => "cleanup_step",
            Error::Read { .. } | Error::Settings(_) => "audit",
        }
    }

    /// A write the Lease holder's gate refused: we are no longer (surely) the holder.
    pub fn is_not_leader(&self) -> bool {
        matches!(self, Error::Kube(e) if is_not_leader(e))
    }
}

// The codes are checked as well as the reasons: an answer whose body is not a Status (the real
// apiserver's plain-text "404 page not found" for an API group that is not installed) reaches
// kube-rs as a Status with the code but no reason, and kube-core's `is_not_found` and
// `is_conflict` then answer false.

/// A write the writer gave up waiting for (`runtime::kube::write`).
#[derive(Debug, thiserror::Error)]
#[error("the API server did not answer the write within {0:?}; given up")]
pub struct WriteTimedOut(pub std::time::Duration);

/// A write the Lease holder's gate refused: it was never sent.
#[derive(Debug, thiserror::Error)]
#[error("not the Lease holder: the write was not sent")]
pub struct NotLeader;

/// Whether `e` is a write the gate refused.
pub fn is_not_leader(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.is::<NotLeader>())
}

/// 409 Conflict, or 422 from a failed JSON-patch `test`: re-read and recompute.
pub fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_conflict() || s.code == 409 || s.code == 422)
}

/// 403 Forbidden.
pub fn is_forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_forbidden())
}

/// 404 Not Found (a missing object, or an API that is not installed).
pub fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found() || s.code == 404)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What kube-rs makes of an answer whose body is not a Status.
    fn plain_text(code: u16, text: &str) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure(text, "Failed to parse error data").with_code(code),
        ))
    }

    #[test]
    fn a_plain_text_404_for_an_api_that_is_not_installed_is_not_found() {
        assert!(is_not_found(&plain_text(404, "404 page not found\n")));
        assert!(!is_not_found(&plain_text(500, "boom")));
    }

    #[test]
    fn failures_are_labelled_by_kind() {
        let api = |code| Error::Kube(plain_text(code, "x"));
        let cases = [
            (api(403), "forbidden"),
            (api(404), "not_found"),
            (api(409), "conflict"),
            (api(422), "conflict"),
            (api(429), "throttled"),
            (api(503), "server_error"),
            (api(400), "refused"),
            (Error::Kube(kube::Error::Service(Box::new(NotLeader))), "not_leader"),
            (
                Error::Kube(kube::Error::Service(Box::new(WriteTimedOut(std::time::Duration::from_secs(
                    20,
                ))))),
                "timeout",
            ),
            (Error::TimedOut(std::time::Duration::from_secs(20)), "timeout"),
            (Error::TaskStopped("cache"), "task_stopped"),
        ];
        for (error, label) in cases {
            assert_eq!(error.metric_label(), label, "{error}");
        }
    }

    #[test]
    fn conflicts_are_told_by_code_too() {
        assert!(is_conflict(&plain_text(409, "conflict")));
        assert!(is_conflict(&plain_text(422, "test failed")));
        assert!(!is_conflict(&plain_text(400, "bad")));
    }
}
