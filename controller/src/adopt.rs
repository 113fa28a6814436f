//! Taking over what the Go project (Azure/eviction-autoscaler) left in a cluster
//! (ARCHITECTURE.md §4.4). Its surge annotations need nothing here: they use the same keys and
//! the surge state machine resumes them. What remains is releasing its EAS finalizers and
//! restoring PDBs it pinned with its (default-off) floor feature.

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::keys;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::{Value, json};

/// The finalizers the Go project puts on EAS objects. Our revert state lives on the scaled
/// object, so nothing depends on them: they are released (also on EAS being deleted, which
/// they would otherwise keep Terminating forever once the Go controller is gone).
pub const GO_FINALIZERS: [&str; 2] = [keys::FINALIZER_SURGE_REVERT, keys::FINALIZER_PDB_FLOOR];

/// A JSON Patch releasing the Go finalizers from `eas`, guarded by a `test` of the current
/// list (a concurrent edit makes it fail with 422, and the caller re-reads). `None` when
/// there is nothing to release.
pub fn release_go_finalizers(eas: &EvictionAutoScaler) -> Option<Value> {
    let current = eas.metadata.finalizers.clone().unwrap_or_default();
    if !current.iter().any(|f| GO_FINALIZERS.contains(&f.as_str())) {
        return None;
    }
    let remaining: Vec<&String> = current.iter().filter(|f| !GO_FINALIZERS.contains(&f.as_str())).collect();
    Some(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
    ]))
}

/// The `original-pdb-spec` annotation as the Go project writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OriginalPdbSpec {
    #[serde(default)]
    min_available: Option<IntOrString>,
    #[serde(default)]
    max_unavailable: Option<IntOrString>,
}

/// How to undo a Go floor pin on a PDB.
#[derive(Debug, PartialEq)]
pub enum PinnedPdb {
    /// Not pinned.
    No,
    /// A merge patch (guarded by resourceVersion) restoring the original budget and dropping
    /// the pin annotations.
    Restore(Value),
    /// The recorded original cannot be read: the PDB is left alone and this message reported,
    /// so a human can fix it.
    Unreadable(String),
}

/// Decides how to restore a PDB the Go project pinned.
pub fn restore_pinned_pdb(pdb: &PodDisruptionBudget) -> PinnedPdb {
    let annotations = pdb.metadata.annotations.as_ref();
    let Some(raw) = annotations.and_then(|a| a.get(keys::ORIGINAL_PDB_SPEC)) else {
        return PinnedPdb::No;
    };
    let original: OriginalPdbSpec = match serde_json::from_str(raw) {
        Ok(original) => original,
        Err(e) => {
            return PinnedPdb::Unreadable(format!(
                "annotation {} = {raw:?} is not valid: {e}",
                keys::ORIGINAL_PDB_SPEC
            ));
        }
    };
    PinnedPdb::Restore(json!({
        "metadata": {
            "resourceVersion": pdb.metadata.resource_version,
            "annotations": {keys::ORIGINAL_PDB_SPEC: null, keys::PINNED_FLOOR: null},
        },
        "spec": {
            "minAvailable": original.min_available,
            "maxUnavailable": original.max_unavailable,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_finalizers_are_released_and_others_kept() {
        let mut eas = EvictionAutoScaler::new("web", Default::default());
        assert_eq!(release_go_finalizers(&eas), None);
        eas.metadata.finalizers = Some(vec![
            keys::FINALIZER_SURGE_REVERT.into(),
            "example.com/keep".into(),
            keys::FINALIZER_PDB_FLOOR.into(),
        ]);
        let patch = release_go_finalizers(&eas).expect("patch");
        assert_eq!(patch[0]["op"], "test", "guarded by the list we saw");
        assert_eq!(patch[1]["value"], json!(["example.com/keep"]));
    }

    #[test]
    fn pinned_pdb_gets_its_original_budget_back() {
        let mut pdb = PodDisruptionBudget::default();
        assert_eq!(restore_pinned_pdb(&pdb), PinnedPdb::No);
        pdb.metadata.resource_version = Some("9".into());
        pdb.metadata.annotations = Some(
            [
                (keys::ORIGINAL_PDB_SPEC.to_owned(), r#"{"maxUnavailable":"20%"}"#.to_owned()),
                (keys::PINNED_FLOOR.to_owned(), "3".to_owned()),
            ]
            .into(),
        );
        let PinnedPdb::Restore(patch) = restore_pinned_pdb(&pdb) else { panic!("expected a restore") };
        assert_eq!(patch["spec"], json!({"minAvailable": null, "maxUnavailable": "20%"}));
        assert_eq!(patch["metadata"]["resourceVersion"], "9");
        assert_eq!(patch["metadata"]["annotations"][keys::PINNED_FLOOR], Value::Null);

        if let Some(a) = pdb.metadata.annotations.as_mut() {
            a.insert(keys::ORIGINAL_PDB_SPEC.into(), "{".into());
        }
        assert!(matches!(restore_pinned_pdb(&pdb), PinnedPdb::Unreadable(_)));
    }
}
