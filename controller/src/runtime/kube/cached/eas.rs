//! The EvictionAutoScaler cache's entry: metadata, spec and status, every field the product
//! writes, in compact metadata.

use eviction_autoscaler_shared::crd::{EvictionAutoScaler, EvictionAutoScalerSpec, EvictionAutoScalerStatus};

use super::meta::{CachedMeta, lookup_as};

/// A cached EvictionAutoScaler.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedEas {
    meta: CachedMeta,
    spec: EvictionAutoScalerSpec,
    status: Option<EvictionAutoScalerStatus>,
}

impl From<EvictionAutoScaler> for CachedEas {
    fn from(eas: EvictionAutoScaler) -> Self {
        CachedEas { meta: eas.metadata.into(), spec: eas.spec, status: eas.status }
    }
}

impl CachedEas {
    /// The EvictionAutoScaler as decisions take it.
    pub fn to_eas(&self) -> EvictionAutoScaler {
        EvictionAutoScaler {
            metadata: self.meta.to_meta(),
            spec: self.spec.clone(),
            status: self.status.clone(),
        }
    }
}

lookup_as!(CachedEas, "EvictionAutoScaler", "eviction-autoscaler.azure.com", "v1", "evictionautoscalers");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_every_field_of_an_eas() {
        let full: EvictionAutoScaler = serde_json::from_value(serde_json::json!({
            "apiVersion": "eviction-autoscaler.azure.com/v1", "kind": "EvictionAutoScaler",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "9",
                "generation": 2, "creationTimestamp": "2026-12-07T10:00:00Z",
                "annotations": {"ownedBy": "EvictionAutoScaler", "target": "web"},
                "ownerReferences": [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "name": "web", "uid": "p", "controller": true}],
                "finalizers": ["eviction-autoscaler.azure.com/finalizer"]},
            "spec": {"targetName": "web", "targetKind": "deployment",
                "lastEviction": {"podName": "web-1", "evictionTime": "2026-12-07T10:00:00Z"}},
            "status": {"minReplicas": 1, "surgeReplicas": 1, "targetReplicas": 2, "observedGeneration": 2,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Surged", "message": "m",
                    "lastTransitionTime": "2026-12-07T10:00:00Z"}]},
        }))
        .expect("an EAS");
        let cached = CachedEas::from(full.clone()).to_eas();
        let as_json = |e: &EvictionAutoScaler| serde_json::to_value(e).expect("serializes");
        assert_eq!(as_json(&cached), as_json(&full));
    }
}
