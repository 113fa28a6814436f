//! The pieces every compact cache entry is made of: [`CompactMap`], [`CachedMeta`],
//! [`CachedSelector`], and [`lookup_as`], which keys an entry in its store as the kind it caches.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};

use crate::runtime::queue::ObjectKey;

/// Strings packed into one allocation, each as a 4-byte length and its bytes (`u32::MAX`:
/// absent): a cache entry's strings are mostly a few bytes long, and glibc gives each its own
/// 32-byte chunk (a `String` adds 24 bytes inline besides).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Packed(Box<[u8]>);

impl<'a> FromIterator<Option<&'a str>> for Packed {
    fn from_iter<I: IntoIterator<Item = Option<&'a str>>>(strings: I) -> Self {
        let mut packed = Vec::new();
        for string in strings {
            // An object is at most a few MiB: no string reaches u32::MAX bytes.
            let len = string.map_or(u32::MAX, |s| s.len() as u32);
            packed.extend_from_slice(&len.to_le_bytes());
            packed.extend_from_slice(string.unwrap_or_default().as_bytes());
        }
        Packed(packed.into_boxed_slice())
    }
}

impl Packed {
    /// The strings in the order packed.
    pub(super) fn iter(&self) -> impl Iterator<Item = Option<&str>> {
        let mut rest: &[u8] = &self.0;
        std::iter::from_fn(move || {
            let (len, after) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len);
            if len == u32::MAX {
                rest = after;
                return Some(None);
            }
            let (bytes, after) = after.split_at_checked(len as usize)?;
            rest = after;
            // Packed from `&str`s, so always UTF-8.
            Some(std::str::from_utf8(bytes).ok())
        })
    }

    /// `N` strings, all present.
    pub(super) fn of<const N: usize>(strings: [&str; N]) -> Self {
        strings.into_iter().map(Some).collect()
    }

    /// The first `N` strings, owned (absent ones empty).
    pub(super) fn to_strings<const N: usize>(&self) -> [String; N] {
        let mut strings = self.iter();
        std::array::from_fn(|_| strings.next().flatten().unwrap_or_default().to_owned())
    }

    /// The `index`th string.
    pub(super) fn get(&self, index: usize) -> Option<&str> {
        self.iter().nth(index).flatten()
    }
}

/// A string map (labels, annotations, a selector's labels) as a cache keeps it: its keys and
/// values in key order, [`Packed`] into one allocation (a `BTreeMap` allocates a 544-byte node
/// for even one entry, and each string one more).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactMap(Option<Packed>);

impl From<Option<BTreeMap<String, String>>> for CompactMap {
    fn from(map: Option<BTreeMap<String, String>>) -> Self {
        CompactMap(map.map(|m| m.iter().flat_map(|(k, v)| [Some(k.as_str()), Some(v.as_str())]).collect()))
    }
}

impl CompactMap {
    /// The map as k8s-openapi types hold it.
    pub fn to_map(&self) -> Option<BTreeMap<String, String>> {
        let packed = self.0.as_ref()?;
        let mut strings = packed.iter().map(|s| s.unwrap_or_default().to_owned());
        let mut map = BTreeMap::new();
        while let (Some(key), Some(value)) = (strings.next(), strings.next()) {
            map.insert(key, value);
        }
        Some(map)
    }
}

/// The metadata decisions read: identity, generation, deletion, annotations, labels, owners
/// and finalizers. Not managedFields (never decoded), `generateName`, `selfLink` or the
/// deletion grace period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedMeta {
    /// Name, namespace, uid and resourceVersion, in that order ([`Self::NAME`] …).
    ids: Packed,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    annotations: CompactMap,
    labels: CompactMap,
    owner_references: Option<Box<[CachedOwner]>>,
    finalizers: Option<Box<[String]>>,
}

/// An owner reference: its four strings [`Packed`] (apiVersion, kind, name, uid).
#[derive(Clone, Debug, PartialEq)]
struct CachedOwner {
    ids: Packed,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl From<OwnerReference> for CachedOwner {
    fn from(owner: OwnerReference) -> Self {
        CachedOwner {
            ids: Packed::of([&owner.api_version, &owner.kind, &owner.name, &owner.uid]),
            controller: owner.controller,
            block_owner_deletion: owner.block_owner_deletion,
        }
    }
}

impl CachedOwner {
    fn to_owner(&self) -> OwnerReference {
        let [api_version, kind, name, uid] = self.ids.to_strings();
        OwnerReference {
            api_version,
            kind,
            name,
            uid,
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }
}

impl From<ObjectMeta> for CachedMeta {
    fn from(meta: ObjectMeta) -> Self {
        let ids = [&meta.name, &meta.namespace, &meta.uid, &meta.resource_version];
        CachedMeta {
            ids: ids.into_iter().map(Option::as_deref).collect(),
            generation: meta.generation,
            creation_timestamp: meta.creation_timestamp,
            deletion_timestamp: meta.deletion_timestamp,
            annotations: meta.annotations.into(),
            labels: meta.labels.into(),
            owner_references: meta.owner_references.map(|o| o.into_iter().map(CachedOwner::from).collect()),
            finalizers: meta.finalizers.map(Vec::into_boxed_slice),
        }
    }
}

impl CachedMeta {
    const NAME: usize = 0;
    const NAMESPACE: usize = 1;
    const UID: usize = 2;
    const RESOURCE_VERSION: usize = 3;

    /// The metadata as k8s-openapi types hold it.
    pub fn to_meta(&self) -> ObjectMeta {
        let owned = |index| self.ids.get(index).map(str::to_owned);
        ObjectMeta {
            name: owned(Self::NAME),
            namespace: owned(Self::NAMESPACE),
            uid: owned(Self::UID),
            resource_version: owned(Self::RESOURCE_VERSION),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_timestamp: self.deletion_timestamp.clone(),
            annotations: self.annotations.to_map(),
            labels: self.labels.to_map(),
            owner_references: self
                .owner_references
                .as_deref()
                .map(|o| o.iter().map(CachedOwner::to_owner).collect()),
            finalizers: self.finalizers.as_deref().map(<[_]>::to_vec),
            ..ObjectMeta::default()
        }
    }

    /// Its namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.ids.get(Self::NAMESPACE)
    }

    /// Its name.
    pub fn name(&self) -> Option<&str> {
        self.ids.get(Self::NAME)
    }

    /// Its uid.
    pub fn uid(&self) -> Option<&str> {
        self.ids.get(Self::UID)
    }

    /// Its resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.ids.get(Self::RESOURCE_VERSION)
    }

    /// Its queue key.
    pub fn key(&self) -> Option<ObjectKey> {
        Some((self.namespace()?.to_owned(), self.name()?.to_owned()))
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
    fn packed_strings_keep_absent_empty_and_any_text_apart() {
        let long = "x".repeat(70_000);
        let strings = [None, Some(""), Some("ünï\0cödé"), Some(long.as_str()), None];
        let packed: Packed = strings.into_iter().collect();
        assert_eq!(packed.iter().collect::<Vec<_>>(), strings);
        assert_eq!((packed.get(2), packed.get(4), packed.get(9)), (Some("ünï\0cödé"), None, None));
    }

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
