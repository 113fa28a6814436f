//! Watch and list decoding that never builds what no cache keeps.
//!
//! A real apiserver sends every object with `metadata.managedFields`, whose `fieldsV1` k8s-openapi
//! decodes into a `serde_json::Value` tree of small maps, and often with kubectl's
//! last-applied copy of the whole object as an annotation. Both were decoded and then dropped
//! by the caches' trims: at 10,000 Deployments most of the transient heap, which glibc keeps
//! as RSS afterwards. [`Decoded`] decodes a `K` with those keys skipped by the parser
//! ([`serde::de::IgnoredAny`]), so they never allocate.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

/// kubectl's copy of the whole object as last applied: often the largest annotation, and
/// never read.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Object keys never decoded, at any depth: `metadata.managedFields` and the last-applied
/// annotation. No kind we cache has a field of either name elsewhere; a user's label or
/// annotation so named is not decoded either, and nothing reads one (writes re-read).
const SKIPPED: [&str; 2] = ["managedFields", LAST_APPLIED];

/// A `K` decoded without [`SKIPPED`] keys; the watch tasks list and watch through it.
#[derive(Clone, Debug)]
pub struct Decoded<K>(pub K);

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Skipping(deserializer)).map(Decoded)
    }
}

impl<K: Resource> Resource for Decoded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

/// A deserializer whose maps leave out [`SKIPPED`] keys, at every depth.
struct Skipping<D>(D);

/// Forwards `deserialize_*` methods, wrapping the visitor.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* Wrapped(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Skipping<D> {
    type Error = D::Error;

    forward! {
        deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16() deserialize_i32()
        deserialize_i64() deserialize_i128() deserialize_u8() deserialize_u16() deserialize_u32()
        deserialize_u64() deserialize_u128() deserialize_f32() deserialize_f64() deserialize_char()
        deserialize_str() deserialize_string() deserialize_bytes() deserialize_byte_buf()
        deserialize_option() deserialize_unit() deserialize_seq() deserialize_map()
        deserialize_identifier() deserialize_ignored_any()
        deserialize_unit_struct(name: &'static str)
        deserialize_newtype_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose nested maps, sequences and options are read through [`Skipping`].
struct Wrapped<V>(V);

/// Forwards `visit_*` methods of plain values.
macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
            self.0.$method(value)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrapped<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64) visit_i128(i128)
        visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64) visit_u128(u128) visit_f32(f32)
        visit_f64(f64) visit_char(char) visit_str(&str) visit_borrowed_str(&'de str)
        visit_string(String) visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Skipping(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Skipping(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Elements(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Entries(map))
    }

    // JSON has no enums beyond strings and single-key objects, and no kind keeps a skipped
    // key inside one.
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(data)
    }
}

/// A seed whose value is read through [`Skipping`].
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Skipping(deserializer))
    }
}

struct Elements<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Elements<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct Entries<A>(A);

/// A JSON object key, borrowed from the input where it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(key))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(key.to_owned()))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(key))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.0.next_key::<Key<'de>>()? {
            match key {
                Key::Borrowed(key) if !SKIPPED.contains(&key) => {
                    let key: BorrowedStrDeserializer<'de, A::Error> = BorrowedStrDeserializer::new(key);
                    return seed.deserialize(key).map(Some);
                }
                Key::Owned(key) if !SKIPPED.contains(&key.as_str()) => {
                    let key: StringDeserializer<A::Error> = key.into_deserializer();
                    return seed.deserialize(key).map(Some);
                }
                _ => {
                    self.0.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(None)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use eviction_autoscaler_shared::crd::EvictionAutoScaler;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Node};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    /// A Deployment as a real apiserver returns it (managedFields, last-applied, pods ready).
    const DEPLOYMENT: &str = include_str!("../../../tests/data/deployment-full.json");

    /// `text` decoded through [`Decoded`] is `text` decoded plainly, less the skipped keys.
    fn decodes_as_plain_without_skipped<K: DeserializeOwned + serde::Serialize>(text: &str) {
        let mut plain: Value = serde_json::from_str(text).expect("JSON");
        let metadata = plain["metadata"].as_object_mut().expect("metadata");
        assert!(metadata.remove("managedFields").is_some(), "the fixture has managedFields");
        if let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
        }
        let expected: K = serde_json::from_value(plain).expect("the plain decoding");
        let Decoded(decoded) = serde_json::from_str::<Decoded<K>>(text).expect("the skipping decoding");
        let as_json = |k: &K| serde_json::to_value(k).expect("serializes");
        assert_eq!(as_json(&decoded), as_json(&expected));
    }

    #[test]
    fn a_deployment_decodes_whole_but_for_managed_fields_and_last_applied() {
        let full: Deployment = serde_json::from_str(DEPLOYMENT).expect("fixture");
        let annotations = full.metadata.annotations.clone().unwrap_or_default();
        assert!(annotations.contains_key(LAST_APPLIED) && annotations.len() > 1);
        decodes_as_plain_without_skipped::<Deployment>(DEPLOYMENT);
    }

    /// Every kind the caches watch, with the fields decisions read: each decodes as plainly,
    /// less the skipped keys (escaped keys and strings included).
    #[test]
    fn every_cached_kind_decodes_as_plainly() {
        let managed = r#""managedFields": [{"manager": "kubectl", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:minAvailable": {}}}}]"#;
        decodes_as_plain_without_skipped::<PodDisruptionBudget>(&format!(
            r#"{{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {{"name": "web", "namespace": "default", "generation": 2, {managed},
                "annotations": {{"a\u002fb": "x\"y", "{LAST_APPLIED}": "{{}}"}},
                "ownerReferences": [{{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u"}}]}},
              "spec": {{"minAvailable": "50%", "selector": {{"matchLabels": {{"app": "web"}}}},
                "unhealthyPodEvictionPolicy": "AlwaysAllow"}},
              "status": {{"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                "expectedPods": 1, "observedGeneration": 2,
                "disruptedPods": {{"web-1": "2026-12-07T10:00:00Z"}}}}}}"#
        ));
        decodes_as_plain_without_skipped::<Node>(&format!(
            r#"{{"metadata": {{"name": "n1", {managed}}},
              "spec": {{"unschedulable": true, "taints": [{{"key": "k", "effect": "NoSchedule"}}]}}}}"#
        ));
        decodes_as_plain_without_skipped::<Namespace>(&format!(
            r#"{{"metadata": {{"name": "team", {managed}, "annotations": {{"k": "v"}}}}}}"#
        ));
        decodes_as_plain_without_skipped::<EvictionAutoScaler>(&format!(
            r#"{{"apiVersion": "eviction-autoscaler.azure.com/v1", "kind": "EvictionAutoScaler",
              "metadata": {{"name": "web", "namespace": "default", {managed}}},
              "spec": {{"targetName": "web", "targetKind": "deployment",
                "lastEviction": {{"podName": "web-1", "evictionTime": "2026-12-07T10:00:00Z"}}}},
              "status": {{"minReplicas": 1, "surgeReplicas": 1, "targetReplicas": 2}}}}"#
        ));
    }

    #[test]
    fn a_list_page_and_a_watch_event_decode_through_it() {
        let page = format!(r#"{{"metadata": {{"resourceVersion": "7"}}, "items": [{DEPLOYMENT}]}}"#);
        let list: kube::core::ObjectList<Decoded<Deployment>> =
            serde_json::from_str(&page).expect("a list page");
        assert!(list.items[0].0.metadata.managed_fields.is_none());
        let event = format!(r#"{{"type": "MODIFIED", "object": {DEPLOYMENT}}}"#);
        let event: kube::core::WatchEvent<Decoded<Deployment>> =
            serde_json::from_str(&event).expect("an event");
        let kube::core::WatchEvent::Modified(Decoded(deployment)) = event else { panic!("a modification") };
        assert!(deployment.metadata.managed_fields.is_none());
        assert!(deployment.spec.is_some_and(|s| s.template.spec.is_some()), "the rest is decoded");
    }

    #[test]
    fn bad_input_fails_as_plainly() {
        let truncated = &DEPLOYMENT[..DEPLOYMENT.len() / 2];
        assert!(serde_json::from_str::<Decoded<Deployment>>(truncated).is_err());
        let wrong_type = r#"{"metadata": {"name": 5}}"#;
        let plain = serde_json::from_str::<Deployment>(wrong_type).expect_err("invalid");
        let decoded = serde_json::from_str::<Decoded<Deployment>>(wrong_type).expect_err("invalid");
        assert_eq!(decoded.to_string(), plain.to_string());
    }
}
