//! The default PDB a Deployment should have (ARCHITECTURE.md §4.5): spec and metadata.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::keys;
use eviction_autoscaler_shared::selector;

use super::catalogue::SkipReason;
use super::name::default_pdb_name;
use super::ownership::crd_owner_reference;

/// The autoscaler that sets a Deployment's replica floor, with the annotations of the object
/// that carries our surge markers while a surge is active (the HPA or the ScaledObject).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Autoscaler<'a> {
    /// A standalone HPA (not one KEDA generated): `spec.minReplicas`, nil → 1.
    Hpa { min_replicas: Option<i32>, annotations: Option<&'a BTreeMap<String, String>> },
    /// A KEDA ScaledObject: `spec.minReplicaCount`, nil → 0 (no PDB).
    Keda { min_replica_count: Option<i32>, annotations: Option<&'a BTreeMap<String, String>> },
}

impl<'a> Autoscaler<'a> {
    /// The floor of a standalone HPA.
    pub fn from_hpa(hpa: &'a HorizontalPodAutoscaler) -> Self {
        Autoscaler::Hpa {
            min_replicas: hpa.spec.as_ref().and_then(|spec| spec.min_replicas),
            annotations: hpa.metadata.annotations.as_ref(),
        }
    }
}

/// Why the Deployment should have no default PDB, with a note for the Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoPdb {
    pub reason: SkipReason,
    pub note: String,
}

impl NoPdb {
    fn new(reason: SkipReason, note: impl Into<String>) -> Self {
        Self { reason, note: note.into() }
    }
}

/// The recorded baseline while a surge is active on the object with `annotations`:
/// `Ok(None)` when no surge marker (`evictionSurgeReplicas`) is present, `Ok(Some(original))`
/// from `original-min-replicas` when it is, `Err` when the marker is there but the baseline
/// is missing or not an integer (the surged value must never become the PDB's floor).
pub fn surge_baseline(annotations: Option<&BTreeMap<String, String>>) -> Result<Option<i32>, NoPdb> {
    let Some(all) = annotations else { return Ok(None) };
    if !all.contains_key(keys::SURGE_REPLICAS) {
        return Ok(None);
    }
    let raw = all.get(keys::ORIGINAL_MIN_REPLICAS);
    match raw.map(|value| value.trim().parse::<i32>()) {
        Some(Ok(baseline)) => Ok(Some(baseline)),
        _ => Err(NoPdb::new(
            SkipReason::SurgeBaselineUnknown,
            format!(
                "a surge is active ({} is set) but {} is {}; the PDB is left as it is until the surge ends",
                keys::SURGE_REPLICAS,
                keys::ORIGINAL_MIN_REPLICAS,
                raw.map_or_else(|| "missing".to_owned(), |value| format!("{value:?}"))
            ),
        )),
    }
}

/// `minAvailable` for the Deployment: replicas excluding our surge, or the autoscaler's
/// minimum (HPA nil → 1, KEDA nil → 0), also excluding our surge. `Err` when that is 0 (no PDB).
pub fn desired_min_available(deployment: &Deployment, autoscaler: Option<&Autoscaler>) -> Result<i32, NoPdb> {
    let (source, marked) = match autoscaler {
        None => (
            ReplicaSource::Deployment { replicas: deployment.spec.as_ref().and_then(|spec| spec.replicas) },
            deployment.metadata.annotations.as_ref(),
        ),
        Some(Autoscaler::Hpa { min_replicas, annotations }) => {
            (ReplicaSource::Hpa { min_replicas: *min_replicas }, *annotations)
        }
        Some(Autoscaler::Keda { min_replica_count, annotations }) => {
            (ReplicaSource::Keda { min_replica_count: *min_replica_count }, *annotations)
        }
    };
    let baseline = surge_baseline(marked)?;
    default_pdb_min_available(source, baseline).ok_or_else(|| {
        NoPdb::new(
            SkipReason::ZeroMinAvailable,
            "replicas (or the autoscaler minimum) are 0: a PDB with minAvailable 0 protects nothing",
        )
    })
}

/// `None` for an absent or empty collection, so selectors compare equal however they were
/// serialised (the API server drops empty maps and lists).
fn normalised(selector: &LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: selector.match_labels.clone().filter(|labels| !labels.is_empty()),
        match_expressions: selector.match_expressions.clone().filter(|expressions| !expressions.is_empty()),
    }
}

/// The Deployment's full selector (matchLabels AND matchExpressions), normalised; `Err`
/// when it is absent, empty (a PDB with `{}` would cover every pod in the namespace) or
/// cannot be evaluated.
pub fn deployment_selector(deployment: &Deployment) -> Result<LabelSelector, NoPdb> {
    let selector = deployment.spec.as_ref().map(|spec| normalised(&spec.selector)).unwrap_or_default();
    if selector.match_labels.is_none() && selector.match_expressions.is_none() {
        return Err(NoPdb::new(
            SkipReason::NoSelector,
            "the Deployment's selector is empty; a PDB with an empty selector would cover every pod in the namespace",
        ));
    }
    selector::validate(&selector).map_err(|error| {
        NoPdb::new(SkipReason::InvalidSelector, format!("the Deployment's selector: {error}"))
    })?;
    Ok(selector)
}

/// Are two selectors the same once normalised?
pub(crate) fn same_selector(left: Option<&LabelSelector>, right: &LabelSelector) -> bool {
    left.map(normalised).as_ref() == Some(&normalised(right))
}

/// The default PDB for `deployment`: named [`default_pdb_name`], in the Deployment's
/// namespace, with its full selector, `minAvailable` from [`desired_min_available`], the
/// configured `unhealthyPodEvictionPolicy`, annotations `ownedBy: EvictionAutoScaler` and
/// `target: <deployment>`, and exactly one owner reference: the CRD with `crd_uid`.
pub fn desired_pdb(
    deployment: &Deployment,
    autoscaler: Option<&Autoscaler>,
    config: &Config,
    crd_uid: &str,
) -> Result<PodDisruptionBudget, NoPdb> {
    let Some(deployment_name) = deployment.metadata.name.as_deref().filter(|name| !name.is_empty()) else {
        return Err(NoPdb::new(SkipReason::MissingName, "the Deployment has no name"));
    };
    let selector = deployment_selector(deployment)?;
    let min_available = desired_min_available(deployment, autoscaler)?;
    Ok(PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(default_pdb_name(deployment_name)),
            namespace: deployment.metadata.namespace.clone(),
            annotations: Some(desired_annotations(deployment_name)),
            owner_references: Some(vec![crd_owner_reference(crd_uid)]),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(min_available)),
            max_unavailable: None,
            selector: Some(selector),
            unhealthy_pod_eviction_policy: Some(config.unhealthy_pod_eviction_policy.to_string()),
        }),
        status: None,
    })
}

/// `ownedBy: EvictionAutoScaler`, `target: <deployment>`.
pub(crate) fn desired_annotations(deployment_name: &str) -> BTreeMap<String, String> {
    [
        (keys::OWNED_BY.to_owned(), keys::OWNED_BY_VALUE.to_owned()),
        (keys::TARGET.to_owned(), deployment_name.to_owned()),
    ]
    .into()
}

/// What sets a Deployment's replica count, for the default PDB's `minAvailable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaSource {
    /// No autoscaler: the Deployment's `spec.replicas` (nil → 1, the API default).
    Deployment { replicas: Option<i32> },
    /// A standalone HPA: `spec.minReplicas` (nil → 1, the API default).
    Hpa { min_replicas: Option<i32> },
    /// A KEDA ScaledObject: `spec.minReplicaCount` (nil → 0, KEDA's default).
    Keda { min_replica_count: Option<i32> },
}

/// The default PDB's `minAvailable`: the replicas (or autoscaler minimum) excluding our
/// surge. `surge_baseline` is the recorded original (the `original-min-replicas`
/// annotation) while a surge is active; it replaces the surged value.
///
/// `None` when that resolves to 0 or less (scale-to-zero KEDA or HPA, a Deployment at 0):
/// `minAvailable: 0` allows every eviction, so such a PDB would protect nothing while
/// still counting as "a PDB covers these pods". The caller creates no default PDB then
/// (and retires one it owns).
pub fn default_pdb_min_available(source: ReplicaSource, surge_baseline: Option<i32>) -> Option<i32> {
    let unsurged = match source {
        ReplicaSource::Deployment { replicas } => replicas.unwrap_or(1),
        ReplicaSource::Hpa { min_replicas } => min_replicas.unwrap_or(1),
        ReplicaSource::Keda { min_replica_count } => min_replica_count.unwrap_or(0),
    };
    let floor = surge_baseline.unwrap_or(unsurged);
    (floor > 0).then_some(floor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::fixtures::{config, deployment, expression, labels, with_annotation};
    use crate::pdb::ownership::{CRD_API_VERSION, CRD_KIND, CRD_NAME};
    use eviction_autoscaler_shared::config::UnhealthyPodEvictionPolicy;

    fn min_of(pdb: &PodDisruptionBudget) -> Option<IntOrString> {
        pdb.spec.as_ref().and_then(|spec| spec.min_available.clone())
    }

    #[test]
    fn desired_pdb_has_the_documented_shape() {
        let web = deployment("web", 3, &[("app", "web")]);
        let found = desired_pdb(&web, None, &config(), "crd-uid");
        let Ok(pdb) = found else { panic!("want a PDB, got {found:?}") };
        assert_eq!(pdb.metadata.name.as_deref(), Some("web-eviction-autoscaler"));
        assert_eq!(pdb.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(
            pdb.metadata.annotations,
            Some(labels(&[("ownedBy", "EvictionAutoScaler"), ("target", "web")]))
        );
        let owners = pdb.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owners.len(), 1, "exactly one owner reference");
        assert_eq!(
            (
                owners[0].api_version.as_str(),
                owners[0].kind.as_str(),
                owners[0].name.as_str(),
                owners[0].uid.as_str()
            ),
            (CRD_API_VERSION, CRD_KIND, CRD_NAME, "crd-uid")
        );
        let spec = pdb.spec.clone().unwrap_or_default();
        assert_eq!(spec.min_available, Some(IntOrString::Int(3)));
        assert_eq!(spec.max_unavailable, None);
        assert_eq!(spec.unhealthy_pod_eviction_policy.as_deref(), Some("AlwaysAllow"));
        assert_eq!(
            spec.selector,
            Some(LabelSelector { match_labels: Some(labels(&[("app", "web")])), match_expressions: None })
        );
        // The JSON the API server receives: camelCase, no status, no empty fields.
        let wire = serde_json::to_value(&pdb).unwrap_or_default();
        assert_eq!(wire["spec"]["minAvailable"], 3);
        assert_eq!(wire["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
        assert!(wire.get("status").is_none());

        let mut strict = config();
        strict.unhealthy_pod_eviction_policy = UnhealthyPodEvictionPolicy::IfHealthyBudget;
        let policy =
            desired_pdb(&web, None, &strict, "u").ok().and_then(|p| p.spec?.unhealthy_pod_eviction_policy);
        assert_eq!(policy.as_deref(), Some("IfHealthyBudget"));
    }

    #[test]
    fn selector_is_copied_whole_and_never_empty() {
        let only_expressions = {
            let mut d = deployment("exp", 2, &[("tier", "front")]);
            if let Some(spec) = d.spec.as_mut() {
                spec.selector = LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![expression("tier", "In", &["front", "mid"])]),
                };
            }
            d
        };
        let both = {
            let mut d = deployment("both", 2, &[("app", "x"), ("tier", "front")]);
            if let Some(spec) = d.spec.as_mut() {
                spec.selector.match_expressions = Some(vec![expression("tier", "Exists", &[])]);
            }
            d
        };
        let empty = {
            let mut d = deployment("empty", 2, &[("app", "x")]);
            if let Some(spec) = d.spec.as_mut() {
                spec.selector =
                    LabelSelector { match_labels: Some(BTreeMap::new()), match_expressions: Some(vec![]) };
            }
            d
        };
        let invalid = {
            let mut d = deployment("bad", 2, &[("app", "x")]);
            if let Some(spec) = d.spec.as_mut() {
                spec.selector.match_expressions = Some(vec![expression("tier", "In", &[])]);
            }
            d
        };
        let no_spec = Deployment { spec: None, ..deployment("nospec", 1, &[]) };
        let selector_of =
            |d: &Deployment| desired_pdb(d, None, &config(), "u").map(|p| p.spec.and_then(|s| s.selector));
        let expressions_only = selector_of(&only_expressions);
        assert_eq!(
            expressions_only,
            Ok(Some(LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![expression("tier", "In", &["front", "mid"])])
            }))
        );
        let full = selector_of(&both).ok().flatten().unwrap_or_default();
        assert_eq!(full.match_labels, Some(labels(&[("app", "x"), ("tier", "front")])));
        assert_eq!(full.match_expressions.map(|e| e.len()), Some(1));
        assert_eq!(selector_of(&empty).map_err(|e| e.reason), Err(SkipReason::NoSelector));
        assert_eq!(selector_of(&no_spec).map_err(|e| e.reason), Err(SkipReason::NoSelector));
        assert_eq!(selector_of(&invalid).map_err(|e| e.reason), Err(SkipReason::InvalidSelector));
    }

    #[test]
    fn min_available_excludes_our_surge_and_follows_autoscalers() {
        let plain = deployment("web", 3, &[("app", "web")]);
        let surged = with_annotation(
            with_annotation(deployment("web", 5, &[("app", "web")]), keys::SURGE_REPLICAS, "5"),
            keys::ORIGINAL_MIN_REPLICAS,
            "3",
        );
        let surge_without_baseline =
            with_annotation(deployment("web", 5, &[("app", "web")]), keys::SURGE_REPLICAS, "5");
        let baseline_without_surge =
            with_annotation(deployment("web", 4, &[("app", "web")]), keys::ORIGINAL_MIN_REPLICAS, "2");
        let garbled = with_annotation(surge_without_baseline.clone(), keys::ORIGINAL_MIN_REPLICAS, "three");
        let zero = deployment("web", 0, &[("app", "web")]);
        let nil_replicas = {
            let mut d = deployment("web", 1, &[("app", "web")]);
            if let Some(spec) = d.spec.as_mut() {
                spec.replicas = None;
            }
            d
        };
        let hpa_marks = labels(&[(keys::SURGE_REPLICAS, "6"), (keys::ORIGINAL_MIN_REPLICAS, "2")]);
        let hpa = |min| Autoscaler::Hpa { min_replicas: min, annotations: None };
        let keda = |min| Autoscaler::Keda { min_replica_count: min, annotations: None };
        /// name, Deployment, autoscaler, expected minAvailable or skip reason.
        type Row<'a> = (&'a str, &'a Deployment, Option<Autoscaler<'a>>, Result<i32, SkipReason>);
        let cases: Vec<Row> = vec![
            ("replicas", &plain, None, Ok(3)),
            ("surged Deployment → baseline", &surged, None, Ok(3)),
            (
                "surge marker, baseline missing",
                &surge_without_baseline,
                None,
                Err(SkipReason::SurgeBaselineUnknown),
            ),
            ("surge marker, baseline garbled", &garbled, None, Err(SkipReason::SurgeBaselineUnknown)),
            ("stale baseline without marker is ignored", &baseline_without_surge, None, Ok(4)),
            ("zero replicas → no PDB", &zero, None, Err(SkipReason::ZeroMinAvailable)),
            ("nil replicas → 1", &nil_replicas, None, Ok(1)),
            ("HPA min wins over replicas", &plain, Some(hpa(Some(2))), Ok(2)),
            ("HPA nil min → 1", &plain, Some(hpa(None)), Ok(1)),
            (
                "surged HPA → its baseline",
                &plain,
                Some(Autoscaler::Hpa { min_replicas: Some(6), annotations: Some(&hpa_marks) }),
                Ok(2),
            ),
            ("HPA surge marks on the Deployment are not the HPA's", &surged, Some(hpa(Some(4))), Ok(4)),
            ("KEDA min", &plain, Some(keda(Some(2))), Ok(2)),
            ("KEDA nil min → 0 → no PDB", &plain, Some(keda(None)), Err(SkipReason::ZeroMinAvailable)),
        ];
        for (case, d, autoscaler, want) in cases {
            let found = desired_pdb(d, autoscaler.as_ref(), &config(), "u");
            assert_eq!(
                found.as_ref().map(min_of).map_err(|e| e.reason),
                want.map(|n| Some(IntOrString::Int(n))),
                "{case}"
            );
        }
        let Err(note) = desired_min_available(&garbled, None) else { panic!("garbled baseline accepted") };
        assert!(note.note.contains("\"three\""), "{}", note.note);
    }

    #[test]
    fn default_pdb_min_available_cases() {
        let cases = [
            ("replicas 3", ReplicaSource::Deployment { replicas: Some(3) }, None, Some(3)),
            ("nil replicas → 1", ReplicaSource::Deployment { replicas: None }, None, Some(1)),
            (
                "surged replicas use the baseline",
                ReplicaSource::Deployment { replicas: Some(5) },
                Some(3),
                Some(3),
            ),
            ("replicas 0 → no PDB", ReplicaSource::Deployment { replicas: Some(0) }, None, None),
            ("HPA min 2", ReplicaSource::Hpa { min_replicas: Some(2) }, None, Some(2)),
            ("HPA nil min → 1", ReplicaSource::Hpa { min_replicas: None }, None, Some(1)),
            ("surged HPA uses the baseline", ReplicaSource::Hpa { min_replicas: Some(4) }, Some(2), Some(2)),
            ("HPA scale-to-zero → no PDB", ReplicaSource::Hpa { min_replicas: Some(0) }, None, None),
            ("KEDA min 2", ReplicaSource::Keda { min_replica_count: Some(2) }, None, Some(2)),
            ("KEDA nil min → 0 → no PDB", ReplicaSource::Keda { min_replica_count: None }, None, None),
            (
                "surged KEDA with recorded 0 → no PDB",
                ReplicaSource::Keda { min_replica_count: Some(3) },
                Some(0),
                None,
            ),
        ];
        for (name, source, surge_baseline, want) in cases {
            assert_eq!(default_pdb_min_available(source, surge_baseline), want, "{name}");
        }
    }
}
