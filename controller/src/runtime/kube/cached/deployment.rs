//! The Deployment cache's entry: identity, annotations, replicas, selector, strategy, pod
//! template labels and status counts; ~0.3 KB where a `Deployment` is ~2.4 KB before its
//! strings.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::meta::{CachedMeta, CachedSelector, CompactMap, lookup_as};
use crate::runtime::queue::ObjectKey;

/// A cached Deployment. Not its labels, pod spec, template annotations or status conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedDeployment {
    meta: CachedMeta,
    spec: Option<CachedSpec>,
    status: Option<DeploymentStatus>,
}

#[derive(Clone, Debug, PartialEq)]
struct CachedSpec {
    replicas: Option<i32>,
    selector: CachedSelector,
    strategy: Option<DeploymentStrategy>,
    template_labels: CompactMap,
}

impl From<Deployment> for CachedDeployment {
    fn from(deployment: Deployment) -> Self {
        let Deployment { metadata, spec, status } = deployment;
        CachedDeployment {
            // Its own labels select nothing we act on.
            meta: ObjectMeta { labels: None, ..metadata }.into(),
            spec: spec.map(|spec| CachedSpec {
                replicas: spec.replicas,
                selector: spec.selector.into(),
                strategy: spec.strategy,
                template_labels: spec.template.metadata.and_then(|m| m.labels).into(),
            }),
            status: status.map(|status| DeploymentStatus { conditions: None, ..status }),
        }
    }
}

impl CachedDeployment {
    /// The Deployment as decisions take it: the cached fields, nothing else.
    pub fn to_deployment(&self) -> Deployment {
        Deployment {
            metadata: self.meta.to_meta(),
            spec: self.spec.as_ref().map(|spec| DeploymentSpec {
                replicas: spec.replicas,
                selector: spec.selector.to_selector(),
                strategy: spec.strategy.clone(),
                template: PodTemplateSpec { metadata: self.template_metadata(), spec: None },
                ..DeploymentSpec::default()
            }),
            status: self.status.clone(),
        }
    }

    /// The Deployment as the PDB plans take the namespace's Deployments besides the one
    /// planned ([`crate::pdb::NamespaceView::deployments`]): name, namespace and pod template
    /// labels, nothing else (a namespace of many Deployments is read on every PDB decision).
    pub fn to_sibling(&self) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: self.meta.name().map(str::to_owned),
                namespace: self.meta.namespace().map(str::to_owned),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                template: PodTemplateSpec { metadata: self.template_metadata(), spec: None },
                ..DeploymentSpec::default()
            }),
            status: None,
        }
    }

    /// Its queue key.
    pub fn key(&self) -> Option<ObjectKey> {
        self.meta.key()
    }

    /// Its namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace()
    }

    /// Its pod template's labels.
    pub fn template_labels(&self) -> Option<BTreeMap<String, String>> {
        self.spec.as_ref()?.template_labels.to_map()
    }

    /// Its pod template's metadata: the labels only.
    fn template_metadata(&self) -> Option<ObjectMeta> {
        self.template_labels().map(|labels| ObjectMeta { labels: Some(labels), ..ObjectMeta::default() })
    }
}

lookup_as!(CachedDeployment, "Deployment", "apps", "v1", "deployments");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::kube::decode::{Decoded, LAST_APPLIED};

    /// A Deployment as a real apiserver returns it (`kubectl apply` then `kubectl get -o json
    /// --show-managed-fields` on kube-apiserver v1.35, pods ready): every field the cache drops
    /// is set.
    fn full() -> Deployment {
        serde_json::from_str(include_str!("../../../../tests/data/deployment-full.json"))
            .expect("fixture parses")
    }

    #[test]
    fn a_cached_deployment_is_a_fraction_of_a_deployment() {
        assert!(size_of::<CachedDeployment>() * 4 < size_of::<Deployment>());
    }

    #[test]
    fn the_cache_keeps_what_decisions_read_and_drops_the_rest() {
        let full = full();
        let text = include_str!("../../../../tests/data/deployment-full.json");
        let Decoded(decoded) = serde_json::from_str::<Decoded<Deployment>>(text).expect("fixture decodes");
        let cached = CachedDeployment::from(decoded).to_deployment();

        // Kept as they were.
        let (meta, kept) = (&full.metadata, &cached.metadata);
        assert_eq!((&kept.name, &kept.namespace, &kept.uid), (&meta.name, &meta.namespace, &meta.uid));
        assert_eq!(kept.resource_version, meta.resource_version);
        let (spec, kept_spec) = (full.spec.as_ref().expect("spec"), cached.spec.as_ref().expect("spec"));
        assert_eq!(kept_spec.replicas, spec.replicas);
        assert_eq!(kept_spec.selector, spec.selector);
        assert_eq!(kept_spec.strategy, spec.strategy);
        let labels = |s: &DeploymentSpec| s.template.metadata.as_ref().and_then(|m| m.labels.clone());
        assert_eq!(labels(kept_spec), labels(spec));
        let (status, kept_status) =
            (full.status.as_ref().expect("status"), cached.status.as_ref().expect("status"));
        assert_eq!(
            DeploymentStatus { conditions: None, ..status.clone() },
            kept_status.clone(),
            "every count of the status is kept"
        );

        // Dropped: the fixture has them, the cache does not.
        assert!(meta.managed_fields.is_some() && kept.managed_fields.is_none());
        assert!(meta.labels.is_some() && kept.labels.is_none());
        let annotations = |m: &ObjectMeta| m.annotations.clone().unwrap_or_default();
        assert!(annotations(meta).contains_key(LAST_APPLIED));
        let mut expected = annotations(meta);
        expected.remove(LAST_APPLIED);
        assert_eq!(annotations(kept), expected, "only kubectl's last-applied copy goes (not decoded)");
        assert!(!expected.is_empty(), "the fixture has an annotation decisions read");
        assert!(spec.template.spec.is_some() && kept_spec.template.spec.is_none());
        assert!(status.conditions.is_some());
    }

    /// The PDB plans read only names and pod template labels of the namespace's other
    /// Deployments: the same decisions with `to_sibling` views as with the recorded object.
    #[test]
    fn pdb_decisions_on_sibling_views_are_those_on_the_full_deployments() {
        use crate::pdb::{self, Action, NamespaceView, SkipReason};
        use k8s_openapi::api::policy::v1::PodDisruptionBudget;

        let config = pdb::fixtures::config();
        let enabled = [(eviction_autoscaler_shared::keys::NAMESPACE_ENABLE, "true")];
        let namespace = pdb::fixtures::namespace("default", &enabled);
        let web = full(); // pods app=web, tier=frontend
        let sibling = CachedDeployment::from(web.clone()).to_sibling();
        // "api" runs pods app=web only: its default PDB (app=web) would also select web's pods,
        // which a user PDB on tier=frontend already covers.
        let api = crate::fixtures::deployment("default", "api", 2, &[("app", "web")], &[]);
        let frontend: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "default", "name": "frontend"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"tier": "frontend"}}},
        }))
        .expect("a PDB");
        let ours = pdb::desired_pdb(&web, None, &config, "crd-uid").expect("a default PDB for web");
        let pdbs = [frontend.clone()];

        let mut decisions = Vec::new();
        for view_of_web in [&web, &sibling] {
            let deployments = [api.clone(), view_of_web.clone()];
            let view = NamespaceView { namespace: &namespace, pdbs: &pdbs, deployments: &deployments };
            let plan = pdb::plan_deployment(&api, None, &view, &config, "crd-uid");
            let affected: Vec<_> = pdb::affected_deployments(&frontend, &deployments)
                .iter()
                .map(|d| d.metadata.name.clone())
                .collect();
            decisions.push((
                plan,
                pdb::plan_pdb(&ours, &deployments),
                affected,
                pdb::plan_pdb_admission(&frontend, false, &view),
            ));
        }
        assert_eq!(decisions[0], decisions[1]);
        let (plan, owned, affected, _) = &decisions[0];
        assert!(
            matches!(plan.action, Action::Skip { reason: SkipReason::WouldOverlapOtherPdb, .. }),
            "the sibling's labels decide: {:?}",
            plan.action
        );
        assert_eq!(*owned, Action::Nothing, "the sibling's name keeps its default PDB");
        assert_eq!(*affected, vec![Some("web".to_owned())]);
    }

    #[test]
    fn looks_up_as_the_deployment_it_caches() {
        use kube::runtime::reflector::{Lookup, ObjectRef};
        let full = full();
        let cached = CachedDeployment::from(full.clone());
        let by_ref = cached.to_object_ref(());
        let name = full.metadata.name.clone().expect("name");
        let namespace = full.metadata.namespace.clone().expect("namespace");
        assert_eq!(by_ref, ObjectRef::<CachedDeployment>::new(&name).within(&namespace));
        assert_eq!((by_ref.extra.uid, by_ref.extra.resource_version), (None, None), "keys stay small");
        assert_eq!(cached.key(), Some((namespace, name)));
    }

    /// Tests that fail if a decision comes to need a field the cache drops: every decision
    /// taking a Deployment decides the same on the recorded object and on its cached view.
    #[test]
    fn decisions_on_the_cached_view_are_those_on_the_full_deployment() {
        use crate::displaced::Displacement;
        use crate::surge::{Observed, Outcome};
        use k8s_openapi::api::policy::v1::PodDisruptionBudget;

        let now = jiff::Timestamp::from_second(1_700_000_000).expect("in range");
        let config = crate::pdb::fixtures::config();
        let blocking: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "default", "name": "web", "resourceVersion": "9"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2},
        }))
        .expect("a PDB");
        let opted_out = full();
        let mut opted_in = full();
        opted_in
            .metadata
            .annotations
            .as_mut()
            .expect("annotations")
            .remove(eviction_autoscaler_shared::keys::SURGE);
        // At 4 replicas its maxSurge of 50% allows 2 more, the default 25% only 1.
        opted_in.spec.as_mut().expect("spec").replicas = Some(4);

        let mut outcomes = Vec::new();
        for deployment in [opted_out, opted_in] {
            let cached = CachedDeployment::from(deployment.clone()).to_deployment();
            let observed = |deployment: &Deployment| Observed {
                deployment: deployment.clone(),
                namespace_enabled: true,
                pdbs: vec![blocking.clone()],
                displacement: Displacement { displaced: 2, on_draining_nodes: 2 },
                any_node_draining: true,
                last_signal: Some(now),
                new_signal: true,
                ..Default::default()
            };
            let surge = crate::surge::plan(&observed(&cached), &config, now);
            assert_eq!(surge, crate::surge::plan(&observed(&deployment), &config, now));
            outcomes.push(surge.outcome);

            let desired = |d: &Deployment| crate::pdb::desired_pdb(d, None, &config, "crd-uid");
            assert_eq!(desired(&cached), desired(&deployment));
            let namespace = crate::pdb::fixtures::namespace("default", &[]);
            let pdbs = [blocking.clone()];
            let plan = |d: &Deployment| {
                let view = crate::pdb::NamespaceView {
                    namespace: &namespace,
                    pdbs: &pdbs,
                    deployments: std::slice::from_ref(d),
                };
                crate::pdb::plan_deployment(d, None, &view, &config, "crd-uid")
            };
            assert_eq!(plan(&cached), plan(&deployment));
            assert_eq!(
                crate::pdb::plan_pdb(&blocking, std::slice::from_ref(&cached)),
                crate::pdb::plan_pdb(&blocking, std::slice::from_ref(&deployment))
            );
        }
        // Both paths taken: the recorded opt-out annotation, and a surge by its maxSurge.
        assert_ne!(outcomes[0], Outcome::Started);
        assert_eq!(outcomes[1], Outcome::Started);
    }
}
