//! Objects as the Go project (Azure/eviction-autoscaler) leaves them, for the switch-over tests.
//! Its module is not served here, so it cannot be run (tests/cluster/README.md): its objects are
//! written as its code writes them.

use serde_json::{Value, json};

use super::Env;

impl Env {
    /// The PDB its DeploymentToPDB controller makes for Deployment `namespace/name`: named like
    /// the Deployment, `ownedBy: EvictionAutoScaler`, owned by the Deployment, selecting
    /// `app=<name>`. Returns its UID.
    pub async fn apply_go_pdb(&self, namespace: &str, name: &str, min_available: i64) -> Value {
        let deployment = self.deployment_now(namespace, name).expect("the Deployment exists");
        let pdb = json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {
                "name": name, "namespace": namespace,
                "annotations": {"ownedBy": "EvictionAutoScaler", "target": name},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                    "uid": deployment["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}}
        });
        self.apply(&pdb.to_string()).await;
        self.pdb_uid(namespace, name)
    }

    /// The EvictionAutoScaler it keeps for PDB `namespace/name`: owned by the PDB, holding both
    /// of its finalizers. Returns the PDB's UID.
    pub async fn apply_go_eas(&self, namespace: &str, name: &str) -> Value {
        let pdb_uid = self.pdb_uid(namespace, name);
        let eas = json!({
            "apiVersion": "eviction-autoscaler.azure.com/v1", "kind": "EvictionAutoScaler",
            "metadata": {
                "name": name, "namespace": namespace,
                "annotations": {"ownedBy": "EvictionAutoScaler", "target": name},
                "finalizers": ["eviction-autoscaler.azure.com/surge-revert", "eviction-autoscaler.azure.com/pdb-floor"],
                "ownerReferences": [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "name": name,
                    "uid": pdb_uid, "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {"targetName": name, "targetKind": "deployment"}
        });
        self.apply(&eas.to_string()).await;
        pdb_uid
    }

    fn pdb_uid(&self, namespace: &str, name: &str) -> Value {
        let pdb =
            self.object("policy", "v1", "poddisruptionbudgets", namespace, name).expect("the PDB exists");
        pdb["metadata"]["uid"].clone()
    }
}
