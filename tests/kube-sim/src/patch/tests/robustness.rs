//! Hostile input: deep nesting, huge patches, garbage bytes, random directive soup.

use serde_json::{Map, Value, json};

use super::{deployment, node};
use crate::patch::{MAX_DEPTH, PatchError, PatchType, apply_patch};

const ALL_TYPES: [PatchType; 4] =
    [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply];

fn nested_object(levels: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
}

#[test]
fn nesting_beyond_the_limit_is_a_bad_request_for_every_patch_type() {
    for levels in [MAX_DEPTH + 1, 127, 5_000, 200_000] {
        let body = nested_object(levels);
        for patch_type in [PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply] {
            let got = apply_patch("apps/v1", "Deployment", true, &deployment(), patch_type, body.as_bytes());
            assert!(
                matches!(got, Err(PatchError::BadRequest(_))),
                "{patch_type:?} with {levels} levels: {got:?}"
            );
        }
        let json_patch = format!(r#"[{{"op":"add","path":"/spec/deep","value":{body}}}]"#);
        let got =
            apply_patch("apps/v1", "Deployment", true, &deployment(), PatchType::Json, json_patch.as_bytes());
        assert!(matches!(got, Err(PatchError::BadRequest(_))), "json patch with {levels} levels: {got:?}");
    }
}

#[test]
fn nesting_within_the_limit_is_applied() {
    let body = nested_object(MAX_DEPTH - 2);
    let got = apply_patch("v1", "Node", true, &node(), PatchType::StrategicMerge, body.as_bytes());
    assert!(matches!(got, Ok(Value::Object(_))), "{got:?}");
}

#[test]
fn json_patch_cannot_grow_an_object_past_the_depth_limit_step_by_step() {
    // Each `add` nests 60 levels under the deepest point so far.
    let mut object = json!({});
    let mut path = String::new();
    let mut rejected = false;
    for _ in 0..10 {
        let value: Value = match serde_json::from_str(&nested_object(60)) {
            Ok(value) => value,
            Err(error) => panic!("fixture: {error}"),
        };
        let body = json!([{"op": "add", "path": format!("{path}/x"), "value": value}]).to_string();
        match apply_patch("v1", "ConfigMap", true, &object, PatchType::Json, body.as_bytes()) {
            Ok(patched) => {
                object = patched;
                path = format!("{path}/x{}", "/a".repeat(59));
            }
            Err(PatchError::BadRequest(_)) => {
                rejected = true;
                break;
            }
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert!(rejected, "the object grew without bound");
}

#[test]
fn too_many_json_patch_operations_are_rejected() {
    let operation = json!({"op": "test", "path": "/kind", "value": "Deployment"});
    let body = Value::Array(vec![operation; 10_001]).to_string();
    let got = apply_patch("apps/v1", "Deployment", true, &deployment(), PatchType::Json, body.as_bytes());
    assert!(matches!(got, Err(PatchError::BadRequest(_))), "{got:?}");
}

#[test]
fn garbage_bodies_are_bad_requests() {
    let bodies: [&[u8]; 5] = [b"\xff\xfe\x00garbage", b"", b"{", b"\"just a string\"", b"--- !!binary AAAA"];
    for body in bodies {
        for patch_type in ALL_TYPES {
            let got = apply_patch("apps/v1", "Deployment", true, &deployment(), patch_type, body);
            assert!(matches!(got, Err(PatchError::BadRequest(_))), "{patch_type:?} with {body:?}: {got:?}");
        }
    }
}

/// A small deterministic generator (no external crates): xorshift64.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % u64::try_from(bound).unwrap_or(1)).unwrap_or(0)
    }
}

const KEYS: [&str; 16] = [
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "$setElementOrder",
    "containers",
    "finalizers",
    "name",
    "metadata",
    "spec",
    "template",
    "env",
    "ports",
    "containerPort",
    "tolerations",
];

fn random_value(random: &mut Random, depth: usize) -> Value {
    match random.below(if depth == 0 { 5 } else { 9 }) {
        0 => Value::Null,
        1 => json!(["delete", "replace", "merge", "nginx", "sidecar"][random.below(5)]),
        2 => json!(random.below(100)),
        3 => json!(random.below(2) == 0),
        4 => json!("name"),
        5 | 6 => {
            let mut map = Map::new();
            for _ in 0..random.below(4) {
                map.insert(KEYS[random.below(KEYS.len())].to_owned(), random_value(random, depth - 1));
            }
            Value::Object(map)
        }
        _ => Value::Array((0..random.below(4)).map(|_| random_value(random, depth - 1)).collect()),
    }
}

#[test]
fn random_directive_soup_never_panics_and_yields_objects() {
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let original = deployment();
    for _ in 0..3_000 {
        let mut patch = random_value(&mut random, 5);
        if random.below(2) == 0 {
            // Aim at the pod template, where most merge keys live.
            patch = json!({"spec": {"template": {"spec": patch}}});
        }
        if let Value::Object(map) = &mut patch {
            map.insert("apiVersion".into(), json!("apps/v1"));
            map.insert("kind".into(), json!("Deployment"));
        }
        let body = patch.to_string();
        for patch_type in [PatchType::StrategicMerge, PatchType::Merge, PatchType::Apply] {
            match apply_patch("apps/v1", "Deployment", true, &original, patch_type, body.as_bytes()) {
                Ok(Value::Object(_)) | Err(_) => {}
                Ok(other) => panic!("{patch_type:?} {body} produced a non-object {other}"),
            }
        }
    }
}
