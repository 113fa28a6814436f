//! Every annotation the product reads, with any value, on Namespaces, Deployments, HPAs,
//! ScaledObjects and PDBs: an invalid value is reported and treated as unset, a valid one is
//! honoured, nothing panics.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use eviction_autoscaler_controller::pdb::desired::{ReplicaSource, default_pdb_min_available};
use eviction_autoscaler_controller::pdb::{HandOverPdb, OwnedPdb, is_ours, surge_baseline};
use eviction_autoscaler_controller::surge::state::SurgeState;
use eviction_autoscaler_shared::budget::scaled;
use eviction_autoscaler_shared::keys;
use eviction_autoscaler_shared::scope::{
    Enablement, namespace_scope, parse_bool, pdb_create_enabled, surge_enabled,
};
use eviction_autoscaler_shared::surge::parse_zero_surge_override;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use libfuzzer_sys::fuzz_target;

const KEYS: [&str; 11] = [
    keys::NAMESPACE_ENABLE,
    keys::PDB_CREATE,
    keys::SURGE,
    keys::OWNED_BY,
    keys::TARGET,
    keys::SURGE_REPLICAS,
    keys::ORIGINAL_MIN_REPLICAS,
    keys::ORIGINAL_PDB_SPEC,
    keys::PINNED_FLOOR,
    eviction_autoscaler_controller::surge::state::SURGE_OVERRIDES,
    "unrelated.example.com/key",
];
const VALUES: [&str; 12] = [
    "true",
    "false",
    "TRUE",
    "t",
    "0",
    "yes",
    "",
    " 3 ",
    "-2",
    "2147483648",
    "EvictionAutoScaler",
    "{\"count\":3,\"gaveUp\":true}",
];

#[derive(Arbitrary, Debug)]
enum Text {
    Known(u8),
    Any(String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    annotations: Vec<(u8, Text)>,
    owner_is_crd: bool,
    namespace_listed: bool,
    enabled_by_default: bool,
    replicas: Option<i32>,
}

/// An invalid value is the annotation's own, and indeed not a boolean; a valid one decides.
fn check(enablement: &Enablement, annotations: &BTreeMap<String, String>, key: &str) {
    match (annotations.get(key), &enablement.invalid_annotation) {
        (Some(value), Some(invalid)) => {
            assert_eq!((&invalid.key[..], &invalid.value), (key, value));
            assert_eq!(parse_bool(value), None);
        }
        (Some(value), None) => {
            assert_eq!(parse_bool(value), Some(enablement.enabled), "{key}={value:?}");
        }
        (None, invalid) => assert_eq!(invalid, &None),
    }
}

fuzz_target!(|input: Input| {
    let annotations: BTreeMap<String, String> = input
        .annotations
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Text::Known(i) => VALUES[usize::from(*i) % VALUES.len()].to_owned(),
                Text::Any(s) => s.clone(),
            };
            (KEYS[usize::from(*k) % KEYS.len()].to_owned(), value)
        })
        .collect();
    let listed = if input.namespace_listed { vec!["shop".to_owned()] } else { vec![] };
    let scope = namespace_scope("shop", Some(&annotations), &listed, input.enabled_by_default);
    check(&scope, &annotations, keys::NAMESPACE_ENABLE);
    check(&pdb_create_enabled(Some(&annotations)), &annotations, keys::PDB_CREATE);
    check(&surge_enabled(Some(&annotations)), &annotations, keys::SURGE);

    let state = SurgeState::read(Some(&annotations));
    if let Some(value) = state.surge_value {
        assert!(value >= 0);
        assert_eq!(annotations[keys::SURGE_REPLICAS].trim().parse::<i32>(), Ok(value));
    }
    match surge_baseline(Some(&annotations)) {
        Ok(Some(baseline)) => {
            assert_eq!(annotations[keys::ORIGINAL_MIN_REPLICAS].trim().parse::<i32>(), Ok(baseline));
            // The floor is the baseline (or nothing, at 0), never the surged value.
            let floor = default_pdb_min_available(
                ReplicaSource::Deployment { replicas: input.replicas },
                Some(baseline),
            );
            assert_eq!(floor, (baseline > 0).then_some(baseline));
        }
        Ok(None) => assert!(!annotations.contains_key(keys::SURGE_REPLICAS)),
        Err(no_pdb) => assert!(!no_pdb.note.is_empty()),
    }
    for value in annotations.values() {
        // "Off" is only ever `None`: an accepted override surges by at least one replica.
        if let Ok(Some(surge)) = parse_zero_surge_override(value) {
            assert!(scaled(&surge, 100, true).is_ok_and(|n| n > 0), "{value:?} → {surge:?}");
        }
    }

    let owner_references = input.owner_is_crd.then(|| {
        vec![
            eviction_autoscaler_controller::pdb::crd_owner_reference("crd-uid"),
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "d".into(),
                ..OwnerReference::default()
            },
        ]
    });
    let pdb = PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("web-pdb".into()),
            namespace: Some("shop".into()),
            annotations: Some(annotations.clone()),
            owner_references,
            ..ObjectMeta::default()
        },
        ..PodDisruptionBudget::default()
    };
    let ours = is_ours(&pdb.metadata);
    // A PDB is ours or handed over, never both; only the exact ownedBy value claims it.
    assert!(!(OwnedPdb::of(&pdb).is_some() && HandOverPdb::of(&pdb).is_some()));
    if ours {
        assert_eq!(annotations.get(keys::OWNED_BY).map(String::as_str), Some(keys::OWNED_BY_VALUE));
    }
});
