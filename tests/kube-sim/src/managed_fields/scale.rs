//! The `/scale` subresource's view of the parent's managed fields (upstream's `ScaleHandler`,
//! `scalehandler.go`): a write to a Scale is tracked on the Scale (`spec.replicas`), then
//! mapped back onto the parent's entries.
//!
//! * To the Scale: every parent manager owning the replicas path owns `spec.replicas` there.
//! * Back to the parent: a manager still owning `spec.replicas` on the Scale keeps its entry; one
//!   that lost it loses the replicas path ("stolen"); a manager new on the Scale gets an entry
//!   owning the replicas path, at the parent's API version, with no time (upstream copies the
//!   time from the parent's entries, which it has none in).

use super::entries::{Managed, VersionedSet};
use super::fieldpath::{Path, PathElement, Set};

const SCALE_VERSION: &str = "autoscaling/v1";

fn scale_replicas() -> Path {
    vec![PathElement::field("spec"), PathElement::field("replicas")]
}

fn only(path: &Path) -> Set {
    let mut set = Set::new();
    set.insert(path);
    set
}

/// The parent's dotted replicas path (`.spec.replicas`) as a field path.
pub(crate) fn replicas_path(dotted: &str) -> Path {
    dotted.split('.').filter(|part| !part.is_empty()).map(PathElement::field).collect()
}

/// The managed fields of the Scale of a parent managed as `parent`.
pub(crate) fn to_subresource(parent: &Managed, replicas: &Path) -> Managed {
    let mut scale = Managed::default();
    for (manager, versioned) in &parent.fields {
        if versioned.set.has(replicas) {
            let set = only(&scale_replicas());
            scale.fields.insert(
                manager.clone(),
                VersionedSet { set, api_version: SCALE_VERSION.into(), applied: versioned.applied },
            );
            if let Some(time) = parent.times.get(manager) {
                scale.times.insert(manager.clone(), time.clone());
            }
        }
    }
    scale
}

/// The parent's managed fields after the Scale's became `scale`.
pub(crate) fn to_parent(parent: &Managed, scale: &Managed, replicas: &Path, parent_version: &str) -> Managed {
    let mut out = Managed::default();
    let mut scale_fields = scale.fields.clone();
    for (manager, versioned) in &parent.fields {
        let keep = |out: &mut Managed, versioned: VersionedSet| {
            out.fields.insert(manager.clone(), versioned);
            if let Some(time) = parent.times.get(manager) {
                out.times.insert(manager.clone(), time.clone());
            }
        };
        // Without the replicas, or still owning them on the Scale: kept as it is.
        if !versioned.set.has(replicas) || scale_fields.remove(manager).is_some() {
            keep(&mut out, versioned.clone());
        } else {
            let set = versioned.set.difference(&only(replicas));
            if !set.is_empty() {
                keep(&mut out, VersionedSet { set, ..versioned.clone() });
            }
        }
    }
    for (manager, versioned) in scale_fields {
        if !versioned.set.has(&scale_replicas()) {
            continue;
        }
        let set = only(replicas);
        out.fields.insert(
            manager.clone(),
            VersionedSet { set, api_version: parent_version.into(), applied: versioned.applied },
        );
        if let Some(time) = parent.times.get(&manager) {
            out.times.insert(manager, time.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::managed_fields::entries::{ManagerId, Operation, decode, encode};

    #[test]
    fn a_scale_write_steals_the_replicas() {
        // `kubectl create deployment` then `kubectl scale`, as the v1.35.4 apiserver recorded them.
        let parent = decode(Some(&json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2026-12-04T02:40:06Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}])))
        .expect("valid");
        let replicas = replicas_path(".spec.replicas");
        let scale = to_subresource(&parent, &replicas);
        assert_eq!(scale.fields.len(), 1);
        let mut after = Managed::default();
        let set = only(&scale_replicas());
        after.fields.insert(
            ManagerId::new("kubectl", Operation::Update, SCALE_VERSION, "scale"),
            VersionedSet { set, api_version: SCALE_VERSION.into(), applied: false },
        );
        let parent = to_parent(&parent, &after, &replicas, "apps/v1");
        assert_eq!(
            encode(&parent),
            // Without a time, the scale entry sorts first (as the real apiserver lists it).
            Some(json!([
                {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "subresource": "scale",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-12-04T02:40:06Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}
            ]))
        );
    }
}
