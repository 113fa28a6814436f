//! The pieces every compact cache entry is made of: [`CompactMap`], [`CachedMeta`],
//! [`CachedSelector`], and [`lookup_as`], which keys an entry in its store as the kind it caches.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};

use crate::runtime::queue::ObjectKey;

/// A string map (labels, annotations, a selector's labels) as a cache keeps it: its entries in
/// key order in one allocation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactMap(Option<Box<[(String, String)]>>);

impl From<Option<BTreeMap<String, String>>> for CompactMap {
    fn from(map: Option<BTreeMap<String, String>>) -> Self {
        CompactMap(map.map(|m| m.into_iter().collect()))
    }
}

impl CompactMap {
    /// The map as k8s-openapi types hold it.
    pub fn to_map(&self) -> Option<BTreeMap<String, String>> {
        self.0.as_ref().map(|entries| entries.iter().cloned().collect())
    }
}

/// The metadata decisions read: identity, generation, deletion, annotations, labels, owners
/// and finalizers. Not managedFields (never decoded), `generateName`, `selfLink` or the
/// deletion grace period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    annotations: CompactMap,
    labels: CompactMap,
    owner_references: Option<Box<[OwnerReference]>>,
    finalizers: Option<Box<[String]>>,
}

impl From<ObjectMeta> for CachedMeta {
    fn from(meta: ObjectMeta) -> Self {
        CachedMeta {
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            resource_version: meta.resource_version,
            generation: meta.generation,
            creation_timestamp: meta.creation_timestamp,
            deletion_timestamp: meta.deletion_timestamp,
            annotations: meta.annotations.into(),
            labels: meta.labels.into(),
            owner_references: meta.owner_references.map(Vec::into_boxed_slice),
            finalizers: meta.finalizers.map(Vec::into_boxed_slice),
        }
    }
}

impl CachedMeta {
    /// The metadata as k8s-openapi types hold it.
    pub fn to_meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_timestamp: self.deletion_timestamp.clone(),
            annotations: self.annotations.to_map(),
            labels: self.labels.to_map(),
            owner_references: self.owner_references.as_deref().map(<[_]>::to_vec),
            finalizers: self.finalizers.as_deref().map(<[_]>::to_vec),
            ..ObjectMeta::default()
        }
    }

    /// Its namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Its name.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Its uid.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// Its resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Its queue key.
    pub fn key(&self) -> Option<ObjectKey> {
        Some((self.namespace.clone()?, self.name.clone()?))
    }
}

/// A label selector as a cache keeps it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedSelector {
    match_labels: CompactMap,
    match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

impl From<LabelSelector> for CachedSelector {
    fn from(selector: LabelSelector) -> Self {
        CachedSelector {
            match_labels: selector.match_labels.into(),
            match_expressions: selector.match_expressions,
        }
    }
}

impl CachedSelector {
    /// The selector as k8s-openapi types hold it.
    pub fn to_selector(&self) -> LabelSelector {
        LabelSelector {
            match_labels: self.match_labels.to_map(),
            match_expressions: self.match_expressions.clone(),
        }
    }
}

/// Implements [`kube::runtime::reflector::Lookup`] for a cached type with a `meta:
/// CachedMeta` field, as the kind it caches: the stores key it as they would that kind.
macro_rules! lookup_as {
    ($cached:ty, $kind:literal, $group:literal, $version:literal, $plural:literal) => {
        impl kube::runtime::reflector::Lookup for $cached {
            type DynamicType = ();

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                $kind.into()
            }

            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                $group.into()
            }

            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                $version.into()
            }

            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }

            fn name(&self) -> Option<std::borrow::Cow<'_, str>> {
                self.meta.name().map(std::borrow::Cow::Borrowed)
            }

            fn namespace(&self) -> Option<std::borrow::Cow<'_, str>> {
                self.meta.namespace().map(std::borrow::Cow::Borrowed)
            }

            // The stores' keys leave these out: a copy of each in every key would be two more
            // strings per cached object, and nothing reads a key's. Read them on the object.
            fn resource_version(&self) -> Option<std::borrow::Cow<'_, str>> {
                None
            }

            fn uid(&self) -> Option<std::borrow::Cow<'_, str>> {
                None
            }
        }
    };
}
pub(crate) use lookup_as;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_map_is_the_map_it_was() {
        let map: BTreeMap<String, String> =
            [("b", "2"), ("a", "1"), ("c", "3")].map(|(k, v)| (k.to_owned(), v.to_owned())).into();
        let compact = CompactMap::from(Some(map.clone()));
        assert_eq!(compact.to_map(), Some(map));
        assert_eq!(CompactMap::from(None).to_map(), None);
        assert_eq!(CompactMap::from(Some(BTreeMap::new())).to_map(), Some(BTreeMap::new()));
    }

    #[test]
    fn cached_metadata_is_the_metadata_less_what_no_decision_reads() {
        let meta: ObjectMeta = serde_json::from_value(serde_json::json!({
            "name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7", "generation": 3,
            "creationTimestamp": "2026-12-07T10:00:00Z", "deletionTimestamp": "2026-12-07T11:00:00Z",
            "annotations": {"ownedBy": "EvictionAutoScaler", "target": "web"}, "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "o"}],
            "finalizers": ["f"], "generateName": "web-", "deletionGracePeriodSeconds": 30,
        }))
        .expect("metadata");
        let kept = CachedMeta::from(meta.clone()).to_meta();
        let expected = ObjectMeta { generate_name: None, deletion_grace_period_seconds: None, ..meta };
        assert_eq!(kept, expected);
    }
}
