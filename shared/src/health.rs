//! Readiness shared by the webhook server, the controller's caches and the health endpoint.
//!
//! A replica is ready when its serving certificate is loaded and the caches it needs are
//! synced; leadership plays no part (followers serve admissions too). Flags are atomics so the
//! `/readyz` probe and the setters never contend.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Cheap, cloneable readiness state; every clone sees the same flags.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<Flags>);

#[derive(Debug, Default)]
struct Flags {
    cert_loaded: AtomicBool,
    caches_synced: AtomicBool,
    /// A problem with where the certificate comes from (the self-managed Secret), shown by
    /// `/readyz`; set rarely, read only by the probe.
    cert_problem: Mutex<Option<String>>,
}

impl Readiness {
    /// A new state with nothing ready yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records whether a serving certificate is loaded.
    pub fn set_cert_loaded(&self, loaded: bool) {
        self.0.cert_loaded.store(loaded, Ordering::Release);
    }

    /// Records whether the caches this process needs have completed their initial sync.
    pub fn set_caches_synced(&self, synced: bool) {
        self.0.caches_synced.store(synced, Ordering::Release);
    }

    /// Records (or, with `None`, clears) a problem with the certificate's source. It does not
    /// make the replica unready by itself: the loaded certificate is still served.
    pub fn set_cert_problem(&self, problem: Option<String>) {
        *self.0.cert_problem.lock().unwrap_or_else(PoisonError::into_inner) = problem;
    }

    /// The certificate source's problem, if any.
    pub fn cert_problem(&self) -> Option<String> {
        self.0.cert_problem.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether a serving certificate is loaded.
    pub fn cert_loaded(&self) -> bool {
        self.0.cert_loaded.load(Ordering::Acquire)
    }

    /// Whether the caches are synced.
    pub fn caches_synced(&self) -> bool {
        self.0.caches_synced.load(Ordering::Acquire)
    }

    /// Ready = certificate loaded and caches synced.
    pub fn is_ready(&self) -> bool {
        self.cert_loaded() && self.caches_synced()
    }

    /// What is still missing, for the probe's response body (empty when ready).
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.cert_loaded() {
            missing.push("certificate not loaded");
        }
        if !self.caches_synced() {
            missing.push("caches not synced");
        }
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_both_flags_are_set_and_clones_share_them() {
        let readiness = Readiness::new();
        let probe = readiness.clone();
        assert!(!probe.is_ready());
        assert_eq!(probe.missing(), ["certificate not loaded", "caches not synced"]);
        readiness.set_cert_loaded(true);
        assert!(!probe.is_ready());
        assert_eq!(probe.missing(), ["caches not synced"]);
        readiness.set_caches_synced(true);
        assert!(probe.is_ready());
        assert!(probe.missing().is_empty());
        readiness.set_caches_synced(false);
        assert!(!probe.is_ready(), "a re-list that loses sync makes the replica unready again");
    }
}
