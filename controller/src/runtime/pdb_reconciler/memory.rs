//! What the default-PDB reconciler remembers: the owner's UID, user PDBs seen at admission
//! but not yet stored, Deployments just deleted, and per Deployment its last skip reason and
//! its recent creates.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::Value;
use tokio::time::Instant;

use crate::pdb::{ADMISSION_GRACE, OwnedPdb};

use crate::runtime::queue::MAX_BACKOFF;
use crate::runtime::queue::{ObjectKey, shrink_if_sparse};

/// How long a PDB seen at admission counts as stored: the apiserver stores it within moments,
/// and if it never does (refused after the webhooks) the default PDB comes back after this.
const ADMITTED_PDB_TTL: Duration = Duration::from_secs(15);

/// A quiet spell this long after our last create of a default PDB starts its back-off over.
const CREATE_WINDOW: Duration = Duration::from_secs(600);

/// This replica's creates of one default PDB in a row (each within [`CREATE_WINDOW`] of the
/// one before), and the last.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Creates {
    count: u32,
    last: Instant,
}

impl Creates {
    /// The record after one more create at `now`.
    fn after(recent: Option<Self>, now: Instant) -> Self {
        match recent.filter(|r| now.duration_since(r.last) < CREATE_WINDOW) {
            Some(r) => Self { count: r.count.saturating_add(1), last: now },
            None => Self { count: 1, last: now },
        }
    }

    /// When the next create may go out (`None`: now). A PDB that keeps vanishing after we
    /// create it (deleted by a garbage collector that sees a stale owner, or by another tool)
    /// is created again after 1 s, 2 s, 4 s … up to [`MAX_BACKOFF`], never in a hot loop.
    fn blocked_until(recent: Option<Self>, now: Instant) -> Option<Instant> {
        let r = recent.filter(|r| now.duration_since(r.last) < CREATE_WINDOW)?;
        let at = r.last + Duration::from_secs(1_u64 << r.count.saturating_sub(1).min(9)).min(MAX_BACKOFF);
        (now < at).then_some(at)
    }
}

/// Per Deployment.
#[derive(Debug, Default)]
struct Entry {
    /// The planner's last skip reason (its Event is emitted on change only).
    skip: Option<&'static str>,
    /// This replica's recent creates of the default PDB: their back-off.
    creates: Option<Creates>,
    /// Our last patch of its default PDB, and the resourceVersion it was planned from (boxed:
    /// most entries are only a create's record).
    patched: Option<Box<(Option<String>, Value)>>,
}

impl Entry {
    fn is_empty(&self, now: Instant) -> bool {
        self.skip.is_none()
            && self.patched.is_none()
            && self.creates.is_none_or(|c| now.duration_since(c.last) >= CREATE_WINDOW)
    }
}

/// The default-PDB reconciler's memory.
#[derive(Debug, Default)]
pub struct PdbMemory {
    /// UID of the EvictionAutoScaler CRD (owner of default PDBs) while it exists: kept by a
    /// watch, so a deleted CRD stops default-PDB creation and a re-created one is the owner.
    crd_uid: Mutex<Option<String>>,
    /// User PDBs seen at CREATE/UPDATE admission, with when: admission runs before the
    /// apiserver stores the object, so for [`ADMITTED_PDB_TTL`] they are planned with as if
    /// stored, and a default PDB retired for one is not re-created before it lands.
    admitted: Mutex<Vec<(PodDisruptionBudget, Instant)>>,
    /// Deployments whose deletion the watch brought, with when: their PDB goes at once, not
    /// after [`ADMISSION_GRACE`] (only PDBs younger than that ask, so that is how long a
    /// record lasts).
    deleted: Mutex<HashMap<ObjectKey, Instant>>,
    deployments: Mutex<HashMap<ObjectKey, Entry>>,
}

impl PdbMemory {
    /// The EvictionAutoScaler CRD's UID, if it exists (see [`Self::set_crd_uid`]).
    pub fn crd_uid(&self) -> Option<String> {
        self.crd_uid.lock().clone()
    }

    /// Records the CRD's UID as read or watched (`None`: deleted, or not readable).
    pub fn set_crd_uid(&self, uid: Option<String>) {
        *self.crd_uid.lock() = uid;
    }

    /// Remembers a user PDB just admitted (see the field `admitted`).
    pub fn remember_admitted(&self, pdb: PodDisruptionBudget) {
        let now = Instant::now();
        let mut admitted = self.admitted.lock();
        admitted.retain(|(p, at)| {
            now < *at + ADMITTED_PDB_TTL
                && (p.metadata.namespace != pdb.metadata.namespace || p.metadata.name != pdb.metadata.name)
        });
        admitted.push((pdb, now));
    }

    /// The user PDBs admitted in `namespace` that still count as stored, and when the first of
    /// them stops counting.
    pub fn admitted(&self, namespace: &str) -> (Vec<PodDisruptionBudget>, Option<Instant>) {
        let now = Instant::now();
        let mut admitted = self.admitted.lock();
        admitted.retain(|(_, at)| now < *at + ADMITTED_PDB_TTL);
        let here = admitted.iter().filter(|(p, _)| p.metadata.namespace.as_deref() == Some(namespace));
        let until = here.clone().map(|(_, at)| *at + ADMITTED_PDB_TTL).min();
        (here.map(|(p, _)| p.clone()).collect(), until)
    }

    /// Records the skip reason of `key` (`None`: not skipped); whether it changed.
    pub fn skipped(&self, key: &ObjectKey, reason: Option<&'static str>) -> bool {
        let mut deployments = self.deployments.lock();
        let entry = deployments.entry(key.clone()).or_default();
        let changed = std::mem::replace(&mut entry.skip, reason) != reason;
        // Only Deployments with something to remember take memory, not every one planned.
        if entry.is_empty(Instant::now()) {
            deployments.remove(key);
            shrink_if_sparse(&mut deployments);
        }
        changed
    }

    /// When the next create of `key`'s default PDB may go out (`None`: now).
    pub fn create_blocked_until(&self, key: &ObjectKey, now: Instant) -> Option<Instant> {
        Creates::blocked_until(self.deployments.lock().get(key).and_then(|e| e.creates), now)
    }

    /// We created `key`'s default PDB at `now`.
    pub fn created(&self, key: &ObjectKey, now: Instant) {
        let mut deployments = self.deployments.lock();
        let entry = deployments.entry(key.clone()).or_default();
        entry.creates = Some(Creates::after(entry.creates, now));
    }

    /// Whether `patch` of `pdb` was already sent for `key` while the cache still shows the
    /// version it was planned from: evaluations close together (the Deployment's status moving
    /// as it scales) would otherwise both send it before the watch brings the first.
    /// A record the cache has moved past is dropped: it only bridges the moment until the
    /// watch delivers our patch.
    pub fn already_patched(&self, key: &ObjectKey, pdb: &OwnedPdb, patch: &Value) -> bool {
        let mut deployments = self.deployments.lock();
        let Some(entry) = deployments.get_mut(key) else { return false };
        let sent = match entry.patched.as_deref() {
            Some((version, sent)) if version.as_deref() == pdb.resource_version() => sent == patch,
            Some(_) => {
                entry.patched = None;
                false
            }
            None => false,
        };
        if entry.is_empty(Instant::now()) {
            deployments.remove(key);
            shrink_if_sparse(&mut deployments);
        }
        sent
    }

    /// We patched `pdb` for `key` (see [`Self::already_patched`]).
    pub fn patched(&self, key: &ObjectKey, pdb: &OwnedPdb, patch: Value) {
        let mut deployments = self.deployments.lock();
        deployments.entry(key.clone()).or_default().patched =
            Some(Box::new((pdb.resource_version().map(str::to_owned), patch)));
    }

    /// Forgets a Deployment that is not (or no longer) cached.
    pub fn forget(&self, key: &ObjectKey) {
        let mut deployments = self.deployments.lock();
        deployments.remove(key);
        shrink_if_sparse(&mut deployments);
    }

    /// The watch brought Deployment `key`'s deletion (not merely its absence from the cache:
    /// a Deployment not stored yet is absent too).
    pub fn deployment_deleted(&self, key: &ObjectKey) {
        let now = Instant::now();
        let mut deleted = self.deleted.lock();
        deleted.retain(|_, at| now < *at + ADMISSION_GRACE);
        shrink_if_sparse(&mut deleted);
        deleted.insert(key.clone(), now);
    }

    /// Whether the watch brought Deployment `key`'s deletion a moment ago.
    pub fn was_deleted(&self, key: &ObjectKey) -> bool {
        self.deleted.lock().get(key).is_some_and(|at| Instant::now() < *at + ADMISSION_GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_pdb_that_keeps_vanishing_is_created_again_on_a_back_off_schedule() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(Creates::blocked_until(None, at(0)), None, "the first create goes out at once");
        // Each create that vanishes doubles the wait after it: 1 s, 2 s, 4 s, ... 300 s, and
        // a loop at the cap stays there.
        let (mut recent, mut now) = (None, 0);
        for wait in [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300] {
            recent = Some(Creates::after(recent, at(now)));
            assert_eq!(Creates::blocked_until(recent, at(now)), Some(at(now + wait)), "after {now} s");
            assert_eq!(Creates::blocked_until(recent, at(now + wait)), None, "due after {wait} s");
            now += wait;
        }
        // Ten quiet minutes after the last create, the next goes out at once and the
        // schedule starts over.
        let quiet = now + 600;
        assert_eq!(Creates::blocked_until(recent, at(quiet)), None);
        assert_eq!(Creates::after(recent, at(quiet)), Creates { count: 1, last: at(quiet) });
    }

    #[test]
    fn the_same_patch_from_the_same_cached_version_is_sent_once() {
        let memory = PdbMemory::default();
        let key = ("ns".to_owned(), "web".to_owned());
        let read = OwnedPdb::for_test("ns", "web-eviction-autoscaler", "uid", "7");
        let patch = serde_json::json!([{"op": "add", "path": "/spec/minAvailable", "value": 5}]);
        assert!(!memory.already_patched(&key, &read, &patch));
        memory.patched(&key, &read, patch.clone());
        assert!(memory.already_patched(&key, &read, &patch), "the cache has not caught up");
        let other = serde_json::json!([{"op": "add", "path": "/spec/minAvailable", "value": 6}]);
        assert!(!memory.already_patched(&key, &read, &other), "another patch goes out");
        let newer = OwnedPdb::for_test("ns", "web-eviction-autoscaler", "uid", "8");
        assert!(!memory.already_patched(&key, &newer, &patch), "planned from a newer version");
        assert_eq!(memory.deployments.lock().len(), 0, "and the record is dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_deleted_deployment_is_remembered_for_the_admission_grace() {
        let memory = PdbMemory::default();
        let (web, api) = (("ns".to_owned(), "web".to_owned()), ("ns".to_owned(), "api".to_owned()));
        memory.forget(&api);
        assert!(!memory.was_deleted(&api), "absent from the cache is not deleted");
        memory.deployment_deleted(&web);
        assert!(memory.was_deleted(&web));
        assert!(!memory.was_deleted(&api), "only the one deleted");
        tokio::time::advance(ADMISSION_GRACE).await;
        assert!(!memory.was_deleted(&web), "no longer than the grace");
        memory.deployment_deleted(&api);
        assert_eq!(memory.deleted.lock().len(), 1, "and expired records are dropped");
    }

    #[test]
    fn a_skip_is_reported_when_its_reason_changes() {
        let memory = PdbMemory::default();
        let key = ("ns".to_owned(), "web".to_owned());
        assert!(memory.skipped(&key, Some("a")));
        assert!(!memory.skipped(&key, Some("a")), "the same reason again");
        assert!(memory.skipped(&key, None));
        assert!(memory.skipped(&key, Some("a")), "the reason came back");
        assert!(memory.skipped(&key, None));
        let other = ("ns".to_owned(), "api".to_owned());
        assert!(!memory.skipped(&other, None));
        assert_eq!(memory.deployments.lock().len(), 0, "nothing remembered of Deployments not skipped");
    }
}
