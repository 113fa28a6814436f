//! Which PDBs are ours, and the only handles through which a PDB can be written.
//!
//! "Ours" means annotation `ownedBy: EvictionAutoScaler`, exactly. Every planned write names
//! its PDB through [`OwnedPdb`] (only constructible from a PDB carrying that annotation) or
//! [`HandOverPdb`] (only constructible from a PDB WITHOUT it that still has our owner
//! reference, and whose only possible write is removing that reference). So a plan that
//! modifies or deletes a user's PDB cannot be expressed. Every write also carries a
//! precondition, so a PDB handed over between the plan and the write is left alone: the write
//! fails with Conflict. Patches to an owned PDB test its UID and `ownedBy`, not its
//! resourceVersion: the disruption controller rewrites the status (and so the
//! resourceVersion) whenever a selected pod changes, and on a real cluster two of three
//! resourceVersion-guarded patches failed on that alone. Deletes cannot test an annotation,
//! so they pin UID and resourceVersion; the hand-over patch (which must find `ownedBy`
//! still absent) pins both too.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Preconditions};
use serde_json::{Value, json};

use eviction_autoscaler_shared::keys;

/// Name of the EvictionAutoScaler CustomResourceDefinition: the owner of every default PDB.
pub const CRD_NAME: &str = "evictionautoscalers.eviction-autoscaler.azure.com";
/// apiVersion of a CustomResourceDefinition owner reference.
pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
/// Kind of a CustomResourceDefinition owner reference.
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// JSON pointer to the `ownedBy` annotation (`/` in keys is escaped as `~1`; `ownedBy` has none).
const OWNED_BY_POINTER: &str = "/metadata/annotations/ownedBy";

/// Does `meta` carry `ownedBy: EvictionAutoScaler` exactly?
pub fn is_ours(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|all| all.get(keys::OWNED_BY))
        .is_some_and(|v| v == keys::OWNED_BY_VALUE)
}

/// The single owner reference of every default PDB: the EvictionAutoScaler CRD object, so
/// deleting the CRD (uninstall) garbage-collects every PDB we own. Neither `controller` nor
/// `blockOwnerDeletion` is set: the CRD controls nothing, and `blockOwnerDeletion` would need
/// permission to set finalizers on CRDs.
pub fn crd_owner_reference(crd_uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: CRD_API_VERSION.to_owned(),
        kind: CRD_KIND.to_owned(),
        name: CRD_NAME.to_owned(),
        uid: crd_uid.to_owned(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// The UID of the CRD as an owner: `None` once it is being deleted (the apiserver then refuses
/// new EvictionAutoScalers, and the garbage collector takes what it owns).
pub fn live_crd_uid(crd: &CustomResourceDefinition) -> Option<String> {
    crd.metadata.deletion_timestamp.is_none().then(|| crd.metadata.uid.clone()).flatten()
}

/// Is `reference` a reference to our CRD (whatever its UID: a stale UID is still ours)?
pub fn is_crd_owner_reference(reference: &OwnerReference) -> bool {
    reference.kind == CRD_KIND
        && reference.name == CRD_NAME
        && reference.api_version.starts_with("apiextensions.k8s.io/")
}

/// Was this owned PDB created by the Go project for `deployment_name`: named like the
/// Deployment and owned by it? Such PDBs are adopted, never duplicated.
pub fn is_go_project_pdb(pdb: &PodDisruptionBudget, deployment_name: &str) -> bool {
    is_ours(&pdb.metadata)
        && pdb.metadata.name.as_deref() == Some(deployment_name)
        && pdb.metadata.owner_references.iter().flatten().any(|owner| {
            owner.kind == "Deployment"
                && owner.api_version.starts_with("apps/")
                && owner.name == deployment_name
        })
}

/// A PDB that carried `ownedBy: EvictionAutoScaler` when it was read, identified together
/// with the version that was read. The only way to name a PDB for update or delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedPdb {
    namespace: String,
    name: String,
    uid: Option<String>,
    resource_version: Option<String>,
}

impl OwnedPdb {
    /// `Some` only for a named PDB carrying `ownedBy: EvictionAutoScaler`.
    pub fn of(pdb: &PodDisruptionBudget) -> Option<Self> {
        let meta = &pdb.metadata;
        if !is_ours(meta) {
            return None;
        }
        Some(Self {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone()?,
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
        })
    }

    /// The PDB's namespace (empty if the object read had none).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The PDB's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resourceVersion of the PDB as read.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Delete preconditions: the UID and resourceVersion that were judged ours. A PDB that
    /// was recreated or edited since (e.g. `ownedBy` removed) is not deleted (409 Conflict).
    pub fn delete_preconditions(&self) -> Preconditions {
        Preconditions { resource_version: self.resource_version.clone(), uid: self.uid.clone() }
    }

    /// JSON-patch (RFC 6902) operations that make a patch fail unless the PDB is still the
    /// object read (its UID) and still ours. Every patch to an owned PDB starts with these.
    pub(crate) fn guard_ops(&self) -> Vec<Value> {
        let mut ops = Vec::with_capacity(2);
        if let Some(uid) = &self.uid {
            ops.push(json!({"op": "test", "path": "/metadata/uid", "value": uid}));
        }
        ops.push(json!({"op": "test", "path": OWNED_BY_POINTER, "value": keys::OWNED_BY_VALUE}));
        ops
    }

    #[cfg(test)]
    pub(crate) fn for_test(namespace: &str, name: &str, uid: &str, resource_version: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            uid: Some(uid.into()),
            resource_version: Some(resource_version.into()),
        }
    }
}

/// A PDB the user took over by removing `ownedBy` that still carries our owner reference.
/// The one write ever made to a PDB that is not ours: dropping that reference, so the PDB
/// survives uninstall. Afterwards [`HandOverPdb::of`] returns `None` and it is never touched.
#[derive(Clone, Debug, PartialEq)]
pub struct HandOverPdb {
    namespace: String,
    name: String,
    uid: Option<String>,
    resource_version: Option<String>,
    remaining_owner_references: Vec<OwnerReference>,
}

impl HandOverPdb {
    /// `Some` only for a named PDB WITHOUT `ownedBy: EvictionAutoScaler` that has an owner
    /// reference to our CRD.
    pub fn of(pdb: &PodDisruptionBudget) -> Option<Self> {
        let meta = &pdb.metadata;
        let references = meta.owner_references.as_deref().unwrap_or_default();
        if is_ours(meta) || !references.iter().any(is_crd_owner_reference) {
            return None;
        }
        Some(Self {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone()?,
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            remaining_owner_references: references
                .iter()
                .filter(|reference| !is_crd_owner_reference(reference))
                .cloned()
                .collect(),
        })
    }

    /// The PDB's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The PDB's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner references the PDB keeps (everyone's but ours).
    pub fn remaining_owner_references(&self) -> &[OwnerReference] {
        &self.remaining_owner_references
    }

    /// The JSON patch (RFC 6902, `application/json-patch+json`): tests that the PDB is the
    /// version read and still NOT ours, then sets the owner references to the remaining ones.
    /// Touches nothing else.
    pub fn json_patch(&self) -> Value {
        let mut ops = Vec::with_capacity(4);
        if let Some(uid) = &self.uid {
            ops.push(json!({"op": "test", "path": "/metadata/uid", "value": uid}));
        }
        if let Some(version) = &self.resource_version {
            ops.push(json!({"op": "test", "path": "/metadata/resourceVersion", "value": version}));
        }
        if self.remaining_owner_references.is_empty() {
            ops.push(json!({"op": "remove", "path": "/metadata/ownerReferences"}));
        } else {
            ops.push(json!({"op": "replace", "path": "/metadata/ownerReferences",
                "value": self.remaining_owner_references}));
        }
        Value::Array(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::fixtures::{pdb, with_annotation, with_owner};

    fn deployment_owner(name: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.into(),
            uid: "dep-uid".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn owner_reference_names_our_crd() {
        use eviction_autoscaler_shared::crd::EvictionAutoScaler;
        use kube::CustomResourceExt;
        assert_eq!(EvictionAutoScaler::crd_name(), CRD_NAME);
        use k8s_openapi::Resource;
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        assert_eq!(CustomResourceDefinition::API_VERSION, CRD_API_VERSION);
        assert_eq!(CustomResourceDefinition::KIND, CRD_KIND);
    }

    #[test]
    fn ownership_needs_the_exact_annotation() {
        let cases = [
            ("exact", Some(keys::OWNED_BY_VALUE), true),
            ("lowercase value", Some("evictionautoscaler"), false),
            ("trailing space", Some("EvictionAutoScaler "), false),
            ("empty", Some(""), false),
            ("absent", None, false),
        ];
        for (case, value, want) in cases {
            let mut object = pdb("web-eviction-autoscaler", &[("app", "web")]);
            object.metadata.annotations = value.map(|v| [(keys::OWNED_BY.to_owned(), v.to_owned())].into());
            assert_eq!(is_ours(&object.metadata), want, "{case}");
            assert_eq!(OwnedPdb::of(&object).is_some(), want, "{case}");
        }
    }

    #[test]
    fn hand_over_only_for_unowned_pdbs_with_our_reference() {
        let other = deployment_owner("web");
        let user_with_ref = with_owner(pdb("p", &[]), crd_owner_reference("crd-uid"));
        let user_with_stale_ref = with_owner(pdb("p", &[]), crd_owner_reference("old-uid"));
        let ours_with_ref = with_annotation(user_with_ref.clone(), keys::OWNED_BY, keys::OWNED_BY_VALUE);
        let user_without_ref = with_owner(pdb("p", &[]), other.clone());
        let both = with_owner(user_with_ref.clone(), other.clone());
        let cases = [
            ("user PDB with our reference", &user_with_ref, Some(vec![])),
            ("stale CRD UID is still our reference", &user_with_stale_ref, Some(vec![])),
            ("ours: nothing to hand over", &ours_with_ref, None),
            ("user PDB without our reference: never touched", &user_without_ref, None),
            ("other owners are kept", &both, Some(vec![other])),
        ];
        for (case, object, want) in cases {
            let found = HandOverPdb::of(object);
            assert_eq!(found.as_ref().map(|h| h.remaining_owner_references().to_vec()), want, "{case}");
        }
    }

    #[test]
    fn hand_over_patch_only_touches_owner_references() {
        let mut object = with_owner(pdb("p", &[]), crd_owner_reference("crd-uid"));
        object.metadata.resource_version = Some("7".into());
        object.metadata.uid = Some("pdb-uid".into());
        let patch = HandOverPdb::of(&object).map(|h| h.json_patch());
        assert_eq!(
            patch,
            Some(json!([
                {"op": "test", "path": "/metadata/uid", "value": "pdb-uid"},
                {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "remove", "path": "/metadata/ownerReferences"},
            ]))
        );
    }

    #[test]
    fn go_project_pdbs_are_recognised() {
        let legacy = with_annotation(
            with_owner(pdb("web", &[("app", "web")]), deployment_owner("web")),
            keys::OWNED_BY,
            keys::OWNED_BY_VALUE,
        );
        assert!(is_go_project_pdb(&legacy, "web"));
        assert!(!is_go_project_pdb(&legacy, "api"), "other Deployment");
        let mut unowned = legacy.clone();
        unowned.metadata.annotations = None;
        assert!(!is_go_project_pdb(&unowned, "web"), "handed over by the user: not ours");
        let mut renamed = legacy.clone();
        renamed.metadata.name = Some("web-pdb".into());
        assert!(!is_go_project_pdb(&renamed, "web"), "not named like the Deployment");
        let mut orphan = legacy;
        orphan.metadata.owner_references = None;
        assert!(!is_go_project_pdb(&orphan, "web"), "not owned by the Deployment");
    }

    #[test]
    fn delete_preconditions_pin_what_was_read() {
        let owned = OwnedPdb::for_test("ns", "p", "uid-1", "42");
        assert_eq!(
            owned.delete_preconditions(),
            Preconditions { resource_version: Some("42".into()), uid: Some("uid-1".into()) }
        );
        let ops = owned.guard_ops();
        assert_eq!(
            ops.last(),
            Some(&json!({"op": "test", "path": OWNED_BY_POINTER, "value": "EvictionAutoScaler"}))
        );
    }
}
