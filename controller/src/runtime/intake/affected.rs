//! Which work an object change makes due, computed from the change and the caches alone: no
//! writes, no memory, no I/O. Intake schedules what these return; unit tests apply objects to
//! caches and ask.

use crate::runtime::kube::cached::CachedDeployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::watcher::Event;

use eviction_autoscaler_shared::crd::EvictionAutoScaler;

use crate::keda::ScaledObject;
use crate::runtime::kube::caches::Caches;
use crate::runtime::queue::ObjectKey;

/// Keys made due: Deployments (surge and default-PDB evaluation) and PDBs (hand-over, PDBs
/// of deleted Deployments).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Due {
    /// Deployments to evaluate.
    pub deployments: Vec<ObjectKey>,
    /// PDBs to evaluate.
    pub pdbs: Vec<ObjectKey>,
}

/// A Deployment changed: it is due; deleted, so are the default PDBs in its namespace (its own
/// goes with it).
pub fn by_deployment(event: &Event<CachedDeployment>, caches: &Caches) -> Due {
    match event {
        Event::Apply(d) | Event::InitApply(d) => {
            Due { deployments: d.key().into_iter().collect(), pdbs: vec![] }
        }
        Event::Delete(d) => {
            let Some(key) = d.key() else { return Due::default() };
            let pdbs = caches
                .pdbs_in(&key.0)
                .iter()
                .filter(|p| crate::pdb::is_ours(&p.metadata))
                .filter_map(pdb_key)
                .collect();
            // Evaluated once more too: an autoscaler it left surged is restored.
            Due { deployments: vec![key], pdbs }
        }
        Event::Init | Event::InitDone => Due::default(),
    }
}

/// A PDB changed: the Deployments it covers are due; changed (not at a re-list), so is the PDB
/// itself (handed over, or its Deployment gone).
pub fn by_pdb(event: &Event<PodDisruptionBudget>, caches: &Caches) -> Due {
    let (pdb, itself) = match event {
        Event::Apply(p) => (p, true),
        Event::Delete(p) | Event::InitApply(p) => (p, false),
        Event::Init | Event::InitDone => return Due::default(),
    };
    Due {
        deployments: covered_by(pdb, caches),
        pdbs: if itself { pdb_key(pdb).into_iter().collect() } else { vec![] },
    }
}

/// The cached Deployments whose pods `pdb` covers.
pub fn covered_by(pdb: &PodDisruptionBudget, caches: &Caches) -> Vec<ObjectKey> {
    caches.deployments_covered_by(pdb)
}

/// A watch that lost its place lists again: what changed in the gap comes as `InitApply`,
/// so the functions below take it as a change. (What was deleted in the gap comes not at
/// all: the store is replaced.)
///
/// An HPA changed or went: the Deployment it scales is due.
pub fn by_hpa(event: &Event<HorizontalPodAutoscaler>) -> Due {
    let target = match event {
        Event::Apply(h) | Event::InitApply(h) | Event::Delete(h) => h
            .metadata
            .namespace
            .clone()
            .zip(h.spec.as_ref().filter(|s| s.scale_target_ref.kind == "Deployment"))
            .map(|(namespace, spec)| (namespace, spec.scale_target_ref.name.clone())),
        _ => None,
    };
    Due { deployments: target.into_iter().collect(), pdbs: vec![] }
}

/// A ScaledObject changed or went: the Deployment it scales is due.
pub fn by_scaled_object(event: &Event<ScaledObject>) -> Due {
    let target = match event {
        Event::Apply(s) | Event::InitApply(s) | Event::Delete(s) => {
            s.metadata.namespace.clone().map(|namespace| (namespace, s.spec.scale_target_ref.name.clone()))
        }
        _ => None,
    };
    Due { deployments: target.into_iter().collect(), pdbs: vec![] }
}

/// A Namespace changed (its annotations may change the scope): all its Deployments are due.
pub fn by_namespace(event: &Event<Namespace>, caches: &Caches) -> Due {
    let (Event::Apply(ns) | Event::InitApply(ns)) = event else { return Due::default() };
    let Some(name) = ns.metadata.name.as_deref() else { return Due::default() };
    Due { deployments: caches.deployment_keys_in(name), pdbs: vec![] }
}

/// An EvictionAutoScaler changed: the Deployment it targets is due (its status is written
/// on that evaluation; a new EAS gets its first one so).
pub fn by_eas(event: &Event<EvictionAutoScaler>) -> Due {
    let target = match event {
        Event::Apply(e) | Event::InitApply(e) => {
            e.metadata.namespace.clone().map(|namespace| (namespace, e.spec.target_name.clone()))
        }
        _ => None,
    };
    Due { deployments: target.into_iter().collect(), pdbs: vec![] }
}

fn pdb_key(pdb: &PodDisruptionBudget) -> Option<ObjectKey> {
    Some((pdb.metadata.namespace.clone()?, pdb.metadata.name.clone()?))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscalerSpec};
    use serde_json::json;

    use super::*;
    use crate::runtime::caches::{Writers, caches};

    fn key(namespace: &str, name: &str) -> ObjectKey {
        (namespace.to_owned(), name.to_owned())
    }

    fn deployment(namespace: &str, name: &str, app: &str) -> CachedDeployment {
        crate::fixtures::deployment(namespace, name, 1, &[("app", app)], &[]).into()
    }

    fn pdb(namespace: &str, name: &str, app: &str, ours: bool) -> PodDisruptionBudget {
        let annotations = if ours { json!({"ownedBy": "EvictionAutoScaler"}) } else { json!({}) };
        serde_json::from_value(json!({
            "metadata": {"namespace": namespace, "name": name, "annotations": annotations},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        }))
        .expect("a PDB")
    }

    /// Caches holding `deployments` and `pdbs`, as the watches would have applied them.
    fn cached(deployments: &[CachedDeployment], pdbs: &[PodDisruptionBudget]) -> Caches {
        let (caches, Writers { deployments: mut dw, pdbs: mut pw, .. }) = caches();
        for d in deployments {
            dw.apply_watcher_event(&Event::Apply(d.clone()));
        }
        for p in pdbs {
            pw.apply_watcher_event(&Event::Apply(p.clone().into()));
        }
        caches
    }

    #[test]
    fn a_deployment_is_due_when_it_changes_and_its_default_pdbs_when_it_goes() {
        let web = deployment("shop", "web", "web");
        let caches = cached(
            std::slice::from_ref(&web),
            &[
                pdb("shop", "web-eviction-autoscaler", "web", true),
                pdb("shop", "user", "web", false),
                pdb("other", "x", "web", true),
            ],
        );
        let changed = by_deployment(&Event::Apply(web.clone()), &caches);
        assert_eq!(changed, Due { deployments: vec![key("shop", "web")], pdbs: vec![] });
        let deleted = by_deployment(&Event::Delete(web), &caches);
        assert_eq!(deleted.deployments, vec![key("shop", "web")], "evaluated once more");
        assert_eq!(deleted.pdbs, vec![key("shop", "web-eviction-autoscaler")], "ours in its namespace only");
        assert_eq!(by_deployment(&Event::InitDone, &caches), Due::default());
    }

    #[test]
    fn a_pdb_makes_the_deployments_it_covers_due_and_itself_when_it_changes() {
        let caches = cached(
            &[
                deployment("shop", "web", "web"),
                deployment("shop", "api", "api"),
                deployment("other", "web", "web"),
            ],
            &[],
        );
        let web_pdb = pdb("shop", "web-pdb", "web", false);
        let changed = by_pdb(&Event::Apply(web_pdb.clone()), &caches);
        assert_eq!(
            changed,
            Due { deployments: vec![key("shop", "web")], pdbs: vec![key("shop", "web-pdb")] }
        );
        let deleted = by_pdb(&Event::Delete(web_pdb.clone()), &caches);
        assert_eq!(
            deleted,
            Due { deployments: vec![key("shop", "web")], pdbs: vec![] },
            "gone: nothing to plan for it"
        );
        let relisted = by_pdb(&Event::InitApply(web_pdb), &caches);
        assert_eq!(relisted.pdbs, vec![], "a re-list plans no PDB");
    }

    #[test]
    fn the_deployments_a_pdb_covers_come_by_name_the_first_being_the_one_it_protects() {
        let caches = cached(
            &[
                deployment("shop", "zeta", "web"),
                deployment("shop", "alpha", "web"),
                deployment("shop", "db", "db"),
            ],
            &[],
        );
        let covered = covered_by(&pdb("shop", "web-pdb", "web", false), &caches);
        assert_eq!(covered, vec![key("shop", "alpha"), key("shop", "zeta")]);
        assert!(covered_by(&pdb("shop", "none", "none", false), &caches).is_empty());
    }

    #[test]
    fn autoscalers_make_their_target_due_and_namespaces_all_of_theirs() {
        let hpa = |kind: &str| HorizontalPodAutoscaler {
            metadata: kube::api::ObjectMeta { namespace: Some("shop".into()), ..Default::default() },
            spec: Some(HorizontalPodAutoscalerSpec {
                scale_target_ref: CrossVersionObjectReference {
                    kind: kind.into(),
                    name: "web".into(),
                    ..Default::default()
                },
                max_replicas: 5,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(by_hpa(&Event::Delete(hpa("Deployment"))).deployments, vec![key("shop", "web")]);
        assert_eq!(by_hpa(&Event::Apply(hpa("StatefulSet"))), Due::default(), "only Deployments are ours");

        let caches = cached(
            &[
                deployment("shop", "web", "web"),
                deployment("shop", "api", "api"),
                deployment("other", "db", "db"),
            ],
            &[],
        );
        let shop: Namespace =
            serde_json::from_value(json!({"metadata": {"name": "shop"}})).expect("a Namespace");
        let mut due = by_namespace(&Event::Apply(shop), &caches).deployments;
        due.sort();
        assert_eq!(due, vec![key("shop", "api"), key("shop", "web")]);
    }

    /// A watch that lost its place lists again, and what changed meanwhile comes as
    /// `InitApply`, not `Apply`: an EvictionAutoScaler created in that gap (its first status
    /// is written on the evaluation its event makes due), an HPA, a ScaledObject, a namespace
    /// annotated. Each makes its targets due as a change would (found at 2,000 Deployments:
    /// the EAS watch's first request got 429 and the watch then listed again, and 44 EAS
    /// created in between never got a status).
    #[test]
    fn objects_seen_again_at_a_relist_make_their_targets_due_as_changes_do() {
        let eas: EvictionAutoScaler = serde_json::from_value(json!({
            "metadata": {"namespace": "shop", "name": "web-pdb"},
            "spec": {"targetName": "web", "targetKind": "deployment"},
        }))
        .expect("an EAS");
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
            "metadata": {"namespace": "shop", "name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5},
        }))
        .expect("an HPA");
        let scaled_object: ScaledObject = serde_json::from_value(json!({
            "metadata": {"namespace": "shop", "name": "web"},
            "spec": {"scaleTargetRef": {"name": "web"}},
        }))
        .expect("a ScaledObject");
        let caches = cached(&[deployment("shop", "web", "web")], &[]);
        let shop: Namespace =
            serde_json::from_value(json!({"metadata": {"name": "shop"}})).expect("a Namespace");
        let web = Due { deployments: vec![key("shop", "web")], pdbs: vec![] };
        for due in [
            by_eas(&Event::InitApply(eas.clone())),
            by_hpa(&Event::InitApply(hpa)),
            by_scaled_object(&Event::InitApply(scaled_object)),
            by_namespace(&Event::InitApply(shop), &caches),
        ] {
            assert_eq!(due, web);
        }
        assert_eq!(by_eas(&Event::Apply(eas)), web);
        assert_eq!(by_eas(&Event::InitDone), Due::default());
    }
}
