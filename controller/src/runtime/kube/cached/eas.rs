//! The EvictionAutoScaler cache's entry: metadata, spec and status, every field the product
//! writes, in compact metadata and conditions.

use eviction_autoscaler_shared::crd::{EvictionAutoScaler, EvictionAutoScalerSpec, EvictionAutoScalerStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::meta::{CachedMeta, Packed, lookup_as};

/// A cached EvictionAutoScaler.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedEas {
    meta: CachedMeta,
    spec: EvictionAutoScalerSpec,
    /// The status, its conditions kept apart (compact) and left empty in it.
    status: Option<(EvictionAutoScalerStatus, Box<[CachedCondition]>)>,
}

/// A status condition: its four strings [`Packed`] (type, status, reason, message).
#[derive(Clone, Debug, PartialEq)]
struct CachedCondition {
    strings: Packed,
    last_transition_time: Time,
    observed_generation: Option<i64>,
}

impl From<Condition> for CachedCondition {
    fn from(c: Condition) -> Self {
        CachedCondition {
            strings: Packed::of([&c.type_, &c.status, &c.reason, &c.message]),
            last_transition_time: c.last_transition_time,
            observed_generation: c.observed_generation,
        }
    }
}

impl CachedCondition {
    fn to_condition(&self) -> Condition {
        let [type_, status, reason, message] = self.strings.to_strings();
        Condition {
            type_,
            status,
            reason,
            message,
            last_transition_time: self.last_transition_time.clone(),
            observed_generation: self.observed_generation,
        }
    }
}

impl From<EvictionAutoScaler> for CachedEas {
    fn from(eas: EvictionAutoScaler) -> Self {
        let status = eas.status.map(|mut status| {
            let conditions = std::mem::take(&mut status.conditions);
            (status, conditions.into_iter().map(CachedCondition::from).collect())
        });
        CachedEas { meta: eas.metadata.into(), spec: eas.spec, status }
    }
}

impl CachedEas {
    /// The EvictionAutoScaler as decisions take it.
    pub fn to_eas(&self) -> EvictionAutoScaler {
        EvictionAutoScaler {
            metadata: self.meta.to_meta(),
            spec: self.spec.clone(),
            status: self.status.as_ref().map(|(status, conditions)| EvictionAutoScalerStatus {
                conditions: conditions.iter().map(CachedCondition::to_condition).collect(),
                ..status.clone()
            }),
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
                    "lastTransitionTime": "2026-12-07T10:00:00Z"},
                    {"type": "Degraded", "status": "False", "reason": "", "message": "",
                    "lastTransitionTime": "2026-12-07T09:00:00Z", "observedGeneration": 2}]},
        }))
        .expect("an EAS");
        let cached = CachedEas::from(full.clone()).to_eas();
        let as_json = |e: &EvictionAutoScaler| serde_json::to_value(e).expect("serializes");
        assert_eq!(as_json(&cached), as_json(&full));
    }
}
