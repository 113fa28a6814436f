//! The port against answers of a real v1.35 apiserver: every expected cause below (field,
//! reason, message) is what it answered for the same schema and value (CRD
//! `gadgets.crv-probe.example.com`, objects created with `?dryRun=All`, then updated after
//! tightening the CRD for the ratcheting cases).

use serde_json::{Value, json};

use super::{pattern, to_field_errors, validate};

/// The probe CRD's `openAPIV3Schema`.
const SCHEMA: &str = r#"{"type": "object", "properties": {
  "spec": {"type": "object", "required": ["size"], "properties": {
    "size": {"type": "integer", "minimum": 0, "maximum": 10},
    "exMin": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
    "exMax": {"type": "number", "maximum": 2.5, "exclusiveMaximum": true},
    "fmin": {"type": "number", "minimum": 0.5},
    "imin": {"type": "integer", "minimum": 0.5},
    "mult": {"type": "integer", "multipleOf": 3},
    "fmult": {"type": "number", "multipleOf": 0.5},
    "imult": {"type": "integer", "multipleOf": 0.5},
    "name": {"type": "string", "minLength": 2, "maxLength": 5},
    "one": {"type": "string", "maxLength": 1},
    "pat": {"type": "string", "pattern": "^[a-z]+$"},
    "color": {"type": "string", "enum": ["red", "green"]},
    "num": {"type": "integer", "enum": [1, 2]},
    "fnum": {"type": "number", "enum": [1.5, 2]},
    "flag": {"type": "boolean"},
    "when": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "i32": {"type": "integer", "format": "int32"},
    "uid": {"type": "string", "format": "uuid"},
    "ios": {"x-kubernetes-int-or-string": true},
    "nul": {"type": "string", "nullable": true},
    "nulenum": {"type": "string", "nullable": true, "enum": ["a"]},
    "tags": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
    "oneItem": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
    "items": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 3}}}},
    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}, "minProperties": 1, "maxProperties": 2},
    "oneProp": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
    "closed": {"type": "object", "additionalProperties": false},
    "emb": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"n": {"type": "integer"}}},
    "replicas": {"type": "integer"},
    "def": {"type": "string", "default": "dflt"},
    "reqdef": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "default": "x"}}}
  }},
  "status": {"type": "object", "properties": {
    "replicas": {"type": "integer"},
    "phase": {"type": "string", "enum": ["A", "B"]},
    "conditions": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}}
  }}
}}"#;

fn schema() -> Value {
    serde_json::from_str(SCHEMA).expect("schema")
}

/// The causes (field, reason, message) for `object`, as a 422's `details.causes` lists them.
fn causes(
    schema: &Value,
    object: &Value,
    old: Option<&Value>,
    prefix: Option<&str>,
) -> Vec<(String, String, String)> {
    to_field_errors(prefix, &validate(schema, object, old))
        .into_iter()
        .map(|e| {
            let body = e.message.strip_prefix(&format!("{}: ", e.field)).unwrap_or(&e.message).to_string();
            (e.field, e.cause.to_string(), body)
        })
        .collect()
}

/// Expected causes: field, reason, message.
type Causes<'a> = &'a [(&'a str, &'a str, &'a str)];

fn owned(expected: Causes<'_>) -> Vec<(String, String, String)> {
    expected.iter().map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string())).collect()
}

#[test]
fn values_are_checked_as_the_real_apiserver_checks_them() {
    // (spec, causes); the real apiserver listed the last multi-error case in Go's random map
    // order, kube-sim lists it in key order.
    let cases: &[(&str, Causes<'_>)] = &[
        (
            r#"{"size": -1}"#,
            &[(
                "spec.size",
                "FieldValueInvalid",
                r#"Invalid value: -1: spec.size in body should be greater than or equal to 0"#,
            )],
        ),
        (r#"{}"#, &[("spec.size", "FieldValueRequired", r#"Required value"#)]),
        (
            r#"{"size": "string"}"#,
            &[(
                "spec.size",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec.size in body must be of type integer: "string""#,
            )],
        ),
        (
            r#"{"size": 1.5}"#,
            &[(
                "spec.size",
                "FieldValueTypeInvalid",
                r#"Invalid value: "number": spec.size in body must be of type integer: "number""#,
            )],
        ),
        (r#"{"size": 2.0}"#, &[]),
        (
            r#"{"size": 11}"#,
            &[(
                "spec.size",
                "FieldValueInvalid",
                r#"Invalid value: 11: spec.size in body should be less than or equal to 10"#,
            )],
        ),
        (
            r#"{"size": 1, "exMin": 0}"#,
            &[(
                "spec.exMin",
                "FieldValueInvalid",
                r#"Invalid value: 0: spec.exMin in body should be greater than 0"#,
            )],
        ),
        (
            r#"{"size": 1, "exMax": 2.5}"#,
            &[(
                "spec.exMax",
                "FieldValueInvalid",
                r#"Invalid value: 2.5: spec.exMax in body should be less than 2.5"#,
            )],
        ),
        (
            r#"{"size": 1, "fmin": 0.25}"#,
            &[(
                "spec.fmin",
                "FieldValueInvalid",
                r#"Invalid value: 0.25: spec.fmin in body should be greater than or equal to 0.5"#,
            )],
        ),
        (r#"{"size": 1, "imin": 0}"#, &[]),
        (
            r#"{"size": 1, "mult": 4}"#,
            &[(
                "spec.mult",
                "FieldValueInvalid",
                r#"Invalid value: 4: spec.mult in body should be a multiple of 3"#,
            )],
        ),
        (
            r#"{"size": 1, "fmult": 0.7}"#,
            &[(
                "spec.fmult",
                "FieldValueInvalid",
                r#"Invalid value: 0.7: spec.fmult in body should be a multiple of 0.5"#,
            )],
        ),
        (
            r#"{"size": 1, "imult": 3}"#,
            &[(
                "spec.imult",
                "FieldValueInvalid",
                r#"Invalid value: 0: factor MultipleOf declared for spec.imult must be positive: 0"#,
            )],
        ),
        (
            r#"{"size": 1, "name": "a"}"#,
            &[(
                "spec.name",
                "FieldValueInvalid",
                r#"Invalid value: "a": spec.name in body should be at least 2 chars long"#,
            )],
        ),
        (
            r#"{"size": 1, "name": "abcdef"}"#,
            &[("spec.name", "FieldValueTooLong", r#"Too long: may not be more than 5 bytes"#)],
        ),
        (
            r#"{"size": 1, "one": "ab"}"#,
            &[("spec.one", "FieldValueTooLong", r#"Too long: may not be more than 1 byte"#)],
        ),
        (
            r#"{"size": 1, "pat": "A1"}"#,
            &[(
                "spec.pat",
                "FieldValueInvalid",
                r#"Invalid value: "A1": spec.pat in body should match '^[a-z]+$'"#,
            )],
        ),
        (
            r#"{"size": 1, "color": "purple"}"#,
            &[(
                "spec.color",
                "FieldValueNotSupported",
                r#"Unsupported value: "purple": supported values: "red", "green""#,
            )],
        ),
        (
            r#"{"size": 1, "num": 3}"#,
            &[("spec.num", "FieldValueNotSupported", r#"Unsupported value: 3: supported values: "1", "2""#)],
        ),
        (r#"{"size": 1, "num": 1.0}"#, &[]),
        (
            r#"{"size": 1, "fnum": 3}"#,
            &[(
                "spec.fnum",
                "FieldValueNotSupported",
                r#"Unsupported value: 3: supported values: "1.5", "2""#,
            )],
        ),
        (
            r#"{"size": 1, "flag": "yes"}"#,
            &[(
                "spec.flag",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec.flag in body must be of type boolean: "string""#,
            )],
        ),
        (
            r#"{"size": 1, "when": "nope"}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "nope": spec.when in body must be of type date-time: "nope""#,
            )],
        ),
        (r#"{"size": 1, "when": "2024-01-02T03:04:05Z"}"#, &[]),
        (
            r#"{"size": 1, "when": "2024-02-30T03:04:05Z"}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "2024-02-30T03:04:05Z": spec.when in body must be of type date-time: "2024-02-30T03:04:05Z""#,
            )],
        ),
        (r#"{"size": 1, "when": "2024-01-02t03:04:05.123+01:00"}"#, &[]),
        (
            r#"{"size": 1, "when": 5}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "int64": spec.when in body must be of type date-time: "int64""#,
            )],
        ),
        (
            r#"{"size": 1, "when": 5.5}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "float64": spec.when in body must be of type date-time: "float64""#,
            )],
        ),
        (
            r#"{"size": 1, "when": true}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "": spec.when in body must be of type date-time: """#,
            )],
        ),
        (r#"{"size": 1, "when": ["x"]}"#, &[]),
        (
            r#"{"size": 1, "when": {"a": 1}}"#,
            &[(
                "spec.when",
                "FieldValueTypeInvalid",
                r#"Invalid value: "": spec.when in body must be of type date-time: """#,
            )],
        ),
        (
            r#"{"size": 1, "day": "2024-13-01"}"#,
            &[(
                "spec.day",
                "FieldValueTypeInvalid",
                r#"Invalid value: "2024-13-01": spec.day in body must be of type date: "2024-13-01""#,
            )],
        ),
        (r#"{"size": 1, "i32": 1099511627776}"#, &[]),
        (
            r#"{"size": 1, "uid": "zz"}"#,
            &[(
                "spec.uid",
                "FieldValueTypeInvalid",
                r#"Invalid value: "zz": spec.uid in body must be of type uuid: "zz""#,
            )],
        ),
        (
            r#"{"size": 1, "ios": true}"#,
            &[(
                "spec.ios",
                "FieldValueTypeInvalid",
                r#"Invalid value: "boolean": spec.ios in body must be of type integer,string: "boolean""#,
            )],
        ),
        (
            r#"{"size": 1, "ios": 1.5}"#,
            &[(
                "spec.ios",
                "FieldValueTypeInvalid",
                r#"Invalid value: "number": spec.ios in body must be of type integer,string: "number""#,
            )],
        ),
        (r#"{"size": 1, "ios": "5%"}"#, &[]),
        (r#"{"size": 1, "nul": null}"#, &[]),
        (
            r#"{"size": 1, "nulenum": null}"#,
            &[(
                "spec.nulenum",
                "FieldValueNotSupported",
                r#"Unsupported value: null: supported values: "a""#,
            )],
        ),
        (
            r#"{"size": 1, "nulenum": "b"}"#,
            &[("spec.nulenum", "FieldValueNotSupported", r#"Unsupported value: "b": supported values: "a""#)],
        ),
        (
            r#"{"size": 1, "tags": []}"#,
            &[(
                "spec.tags",
                "FieldValueInvalid",
                r#"Invalid value: 0: spec.tags in body should have at least 1 items"#,
            )],
        ),
        (
            r#"{"size": 1, "tags": ["a", "b", "c", "d"]}"#,
            &[("spec.tags", "FieldValueTooMany", r#"Too many: 4: must have at most 3 items"#)],
        ),
        (
            r#"{"size": 1, "oneItem": ["a", "b"]}"#,
            &[("spec.oneItem", "FieldValueTooMany", r#"Too many: 2: must have at most 1 item"#)],
        ),
        (
            r#"{"size": 1, "tags": ["a", null, 3]}"#,
            &[
                (
                    "spec.tags[1]",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "null": spec.tags[1] in body must be of type string: "null""#,
                ),
                (
                    "spec.tags[2]",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "integer": spec.tags[2] in body must be of type string: "integer""#,
                ),
            ],
        ),
        (
            r#"{"size": 1, "items": [{"name": "abcd"}, {}, {"name": "ok"}]}"#,
            &[
                ("spec.items[0].name", "FieldValueTooLong", r#"Too long: may not be more than 3 bytes"#),
                ("spec.items[1].name", "FieldValueRequired", r#"Required value"#),
            ],
        ),
        (
            r#"{"size": 1, "labels": {}}"#,
            &[(
                "spec.labels",
                "FieldValueInvalid",
                r#"Invalid value: 0: spec.labels in body should have at least 1 properties"#,
            )],
        ),
        (
            r#"{"size": 1, "labels": {"a": "x", "b": "y", "c": "z"}}"#,
            &[("spec.labels", "FieldValueTooMany", r#"Too many: 3: must have at most 2 items"#)],
        ),
        (
            r#"{"size": 1, "labels": {"a": "long", "b": 3}}"#,
            &[
                ("spec.labels.a", "FieldValueTooLong", r#"Too long: may not be more than 3 bytes"#),
                (
                    "spec.labels.b",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "integer": spec.labels.b in body must be of type string: "integer""#,
                ),
            ],
        ),
        (
            r#"{"size": 1, "labels": {"a.b": "long"}}"#,
            &[("spec.labels.a.b", "FieldValueTooLong", r#"Too long: may not be more than 3 bytes"#)],
        ),
        (
            r#"{"size": 1, "oneProp": {"a": "x", "b": "y"}}"#,
            &[("spec.oneProp", "FieldValueTooMany", r#"Too many: 2: must have at most 1 item"#)],
        ),
        (
            r#"{"size": 1, "closed": {"a": 1, "b": {}}}"#,
            &[
                (
                    "spec.closed",
                    "FieldValueInvalid",
                    r#"Invalid value: "a": spec.closed.a in body is a forbidden property"#,
                ),
                (
                    "spec.closed",
                    "FieldValueInvalid",
                    r#"Invalid value: "b": spec.closed.b in body is a forbidden property"#,
                ),
            ],
        ),
        (
            r#"{"size": 1, "free": {"n": "x", "m": "y"}}"#,
            &[(
                "spec.free.n",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec.free.n in body must be of type integer: "string""#,
            )],
        ),
        (
            r#"{"size": -1, "name": "a", "color": "x", "tags": [], "mult": 1}"#,
            &[
                (
                    "spec.color",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "x": supported values: "red", "green""#,
                ),
                (
                    "spec.mult",
                    "FieldValueInvalid",
                    r#"Invalid value: 1: spec.mult in body should be a multiple of 3"#,
                ),
                (
                    "spec.name",
                    "FieldValueInvalid",
                    r#"Invalid value: "a": spec.name in body should be at least 2 chars long"#,
                ),
                (
                    "spec.size",
                    "FieldValueInvalid",
                    r#"Invalid value: -1: spec.size in body should be greater than or equal to 0"#,
                ),
                (
                    "spec.tags",
                    "FieldValueInvalid",
                    r#"Invalid value: 0: spec.tags in body should have at least 1 items"#,
                ),
            ],
        ),
        (
            r#"{"size": 1, "fmin": -1e21}"#,
            &[(
                "spec.fmin",
                "FieldValueInvalid",
                r#"Invalid value: -1e+21: spec.fmin in body should be greater than or equal to 0.5"#,
            )],
        ),
        (
            r#"{"size": 1, "exMax": 9223372036854775808}"#,
            &[(
                "spec.exMax",
                "FieldValueInvalid",
                r#"Invalid value: 9.223372036854776e+18: spec.exMax in body should be less than 2.5"#,
            )],
        ),
        (
            r#"{"size": 1, "fnum": 1e-7}"#,
            &[(
                "spec.fnum",
                "FieldValueNotSupported",
                r#"Unsupported value: 1e-07: supported values: "1.5", "2""#,
            )],
        ),
        (
            r#""str""#,
            &[(
                "spec",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec in body must be of type object: "string""#,
            )],
        ),
    ];
    let schema = schema();
    for (spec, expected) in cases {
        let spec: Value = serde_json::from_str(spec).expect("spec");
        let object = json!({"apiVersion": "crv-probe.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g1", "namespace": "crv-probe-a"}, "spec": spec});
        assert_eq!(causes(&schema, &object, None, None), owned(expected), "{spec}");
    }
}

#[test]
fn status_is_validated_against_its_own_schema_with_names_relative_to_it() {
    let schema = schema();
    let status_schema = &schema["properties"]["status"];
    let cases: &[(Value, Causes<'_>)] = &[
        (
            json!({"phase": "Z", "replicas": -1, "conditions": [{}]}),
            &[
                ("status.conditions[0].type", "FieldValueRequired", "Required value"),
                (
                    "status.phase",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Z": supported values: "A", "B""#,
                ),
            ],
        ),
        (
            json!("str"),
            &[(
                "status",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string":  in body must be of type object: "string""#,
            )],
        ),
        (
            json!({"replicas": "x"}),
            &[(
                "status.replicas",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": replicas in body must be of type integer: "string""#,
            )],
        ),
    ];
    for (status, expected) in cases {
        assert_eq!(causes(status_schema, status, None, Some("status")), owned(expected), "{status}");
    }
}

/// The probe CRD after tightening it: `spec.name` to 2 characters, `spec.tags` to one item,
/// `spec.items[].name` and `spec.labels` values to one character, `status.phase` to `B`.
fn tightened() -> Value {
    let mut schema = schema();
    let spec = &mut schema["properties"]["spec"]["properties"];
    spec["name"]["maxLength"] = json!(2);
    spec["tags"]["maxItems"] = json!(1);
    spec["items"]["items"]["properties"]["name"]["maxLength"] = json!(1);
    spec["labels"]["additionalProperties"]["maxLength"] = json!(1);
    schema["properties"]["status"]["properties"]["phase"]["enum"] = json!(["B"]);
    schema
}

#[test]
fn unchanged_values_keep_their_errors_on_update() {
    let schema = tightened();
    let object = |spec: Value| {
        json!({"apiVersion": "crv-probe.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "s1"}, "spec": spec})
    };
    let old = object(json!({"size": 1, "name": "abcd", "tags": ["a", "b"], "items": [{"name": "ab"}],
        "labels": {"a": "abc"}}));
    let cases: &[(Value, Causes<'_>)] = &[
        // Another field changed: the old errors are ratcheted.
        (
            json!({"size": 2, "name": "abcd", "tags": ["a", "b"], "items": [{"name": "ab"}], "labels": {"a": "abc"}}),
            &[],
        ),
        (
            json!({"size": 1, "name": "abce", "tags": ["a", "b"], "items": [{"name": "ab"}], "labels": {"a": "abc"}}),
            &[("spec.name", "FieldValueTooLong", "Too long: may not be more than 2 bytes")],
        ),
        // Lists without keys correlate whole: a changed list is checked item by item.
        (
            json!({"size": 1, "name": "abcd", "tags": ["a", "c"], "items": [{"name": "ab"}, {"name": "x"}], "labels": {"a": "abc"}}),
            &[
                ("spec.items[0].name", "FieldValueTooLong", "Too long: may not be more than 1 byte"),
                ("spec.tags", "FieldValueTooMany", "Too many: 2: must have at most 1 item"),
            ],
        ),
        // Map values correlate by key.
        (
            json!({"size": 1, "name": "abcd", "tags": ["a", "b"], "items": [{"name": "ab"}], "labels": {"a": "abc", "b": "x"}}),
            &[],
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(causes(&schema, &object(spec.clone()), Some(&old), None), owned(expected), "{spec}");
    }
    // The status subresource ratchets the old status.
    let status_schema = &schema["properties"]["status"];
    let found = causes(
        status_schema,
        &json!({"phase": "A", "replicas": 4}),
        Some(&json!({"phase": "A", "replicas": 3})),
        Some("status"),
    );
    assert_eq!(found, owned(&[]));
    let found = causes(status_schema, &json!({"phase": "A"}), None, Some("status"));
    assert_eq!(
        found,
        owned(&[(
            "status.phase",
            "FieldValueNotSupported",
            r#"Unsupported value: "A": supported values: "B""#
        )])
    );
}

#[test]
fn keyed_list_items_correlate_by_key() {
    // CRD `rlists.crv-probe.example.com`: objects created with 6-character messages, then
    // `maxLength` lowered to 3.
    let item = json!({"type": "object", "required": ["type"], "properties": {"type": {"type": "string"},
        "msg": {"type": "string", "maxLength": 3}}});
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "conds": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"], "items": item},
        "atomic": {"type": "array", "items": item},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"s": {"type": "string", "maxLength": 3}}}}}}});
    let object = |spec: Value| json!({"metadata": {"name": "r1"}, "spec": spec});
    let a = json!({"type": "a", "msg": "abcdef"});
    let b = json!({"type": "b", "msg": "abcdef"});
    let c = json!({"type": "c", "msg": "x"});
    let old = object(json!({"conds": [a, b], "atomic": [a, b], "free": {"s": "abcdef", "other": 1}}));
    let too_long = "Too long: may not be more than 3 bytes";
    // Reordered, one item added: the keyed list's items keep their errors, the other list's not.
    let new = object(json!({"conds": [b, a, c], "atomic": [b, a, c], "free": {"s": "abcdef", "other": 1}}));
    assert_eq!(
        causes(&schema, &new, Some(&old), None),
        owned(&[
            ("spec.atomic[0].msg", "FieldValueTooLong", too_long),
            ("spec.atomic[1].msg", "FieldValueTooLong", too_long)
        ])
    );
    let changed_b = json!({"type": "b", "msg": "abcdeg"});
    let new = object(json!({"conds": [a, changed_b], "atomic": [a, b], "free": {"s": "abcdef", "other": 1}}));
    assert_eq!(
        causes(&schema, &new, Some(&old), None),
        owned(&[("spec.conds[1].msg", "FieldValueTooLong", too_long)])
    );
    // A declared field under x-kubernetes-preserve-unknown-fields correlates too.
    let new = object(json!({"conds": [a, b], "atomic": [a, b], "free": {"s": "abcdef", "other": 2}}));
    assert_eq!(causes(&schema, &new, Some(&old), None), owned(&[]));
}

// The pattern cases: CRD `pats.crv-probe.example.com`, one string property per pattern, every
// input set on all of them at once.

/// Patterns, as the real v1.35 apiserver compiled them.
const PATTERNS: [&str; 36] = [
    r"^[a-z]+$",
    r"[0-9]",
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
    r"(?i)^(true|false)$",
    r"^\d{2,3}$",
    r"^[^\s/]+$",
    r"^[[:alpha:]_][[:alnum:]_-]*$",
    r"^a.c$",
    r"\bfoo\b",
    r"^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    r"^x{2}$",
    r"^[\w.-]+@[\w.-]+$",
    r"^$",
    r"a|^b$",
    r"^[a-]$",
    r"^\x41\x{42}$",
    r"^(?s:.)$",
    r"^[A-Z]{0,2}[0-9]+$",
    r"^.*$",
    r"^[]a]$",
    r"x*?y",
    r"^(a|ab)(c|bcd)(d*)$",
    r"^\$\{[A-Z_]+\}$",
    r"^(?i:ab)c$",
    r"^[^a-c]*$",
    r"^\S+\s\S+$",
    r"^[\d\-]+$",
    r"^a{,2}$",
    r"^(?P<n>ab)+$",
    r"^[[:^digit:]]+$",
    r"\Bx",
    r"^\.\*$",
    r"^([a-z]+|[0-9]+){2}$",
    r"^[a-zA-Z0-9]([a-zA-Z0-9\-\_]{0,61}[a-zA-Z0-9])?$",
    r"(?m)^b$",
];

/// Values tried against every pattern.
const INPUTS: [&str; 50] = [
    "abc",
    "ABC",
    "a1",
    "1.5Gi",
    "-.5e3",
    "1h30m",
    "0",
    "TRUE",
    "12",
    "1234",
    "a b",
    "a/b",
    "_x-9",
    "a\nc",
    "foo bar",
    "x.example.com",
    "xx",
    "a@b.c",
    "",
    "b",
    "-",
    "AB",
    "é",
    "\n",
    "]",
    "y",
    "abcd",
    "${FOO}",
    "abbcd",
    "abc\n",
    "ABc",
    "d",
    "1-2",
    "a{,2}",
    "abab",
    "ax",
    "x",
    ".*",
    "ab12",
    "foo_bar",
    "a\nb",
    "10Mi",
    "1e",
    "+1.",
    "xxy",
    "abcdd",
    "aa",
    "-a",
    "a-",
    "a_b",
];

/// For each pattern, the inputs the real apiserver accepted (its 422 named the others).
const ACCEPTED: [&[&str]; 36] = [
    &["abc", "xx", "b", "y", "abcd", "abbcd", "d", "abab", "ax", "x", "xxy", "abcdd", "aa"],
    &[
        "a1", "1.5Gi", "-.5e3", "1h30m", "0", "12", "1234", "_x-9", "1-2", "a{,2}", "ab12", "10Mi", "1e",
        "+1.",
    ],
    &["1.5Gi", "-.5e3", "0", "12", "1234", "10Mi", "+1."],
    &["1h30m", "0", ""],
    &["TRUE"],
    &["12"],
    &[
        "abc",
        "ABC",
        "a1",
        "1.5Gi",
        "-.5e3",
        "1h30m",
        "0",
        "TRUE",
        "12",
        "1234",
        "_x-9",
        "x.example.com",
        "xx",
        "a@b.c",
        "b",
        "-",
        "AB",
        "é",
        "]",
        "y",
        "abcd",
        "${FOO}",
        "abbcd",
        "ABc",
        "d",
        "1-2",
        "a{,2}",
        "abab",
        "ax",
        "x",
        ".*",
        "ab12",
        "foo_bar",
        "10Mi",
        "1e",
        "+1.",
        "xxy",
        "abcdd",
        "aa",
        "-a",
        "a-",
        "a_b",
    ],
    &[
        "abc", "ABC", "a1", "TRUE", "_x-9", "xx", "b", "AB", "y", "abcd", "abbcd", "ABc", "d", "abab", "ax",
        "x", "ab12", "foo_bar", "xxy", "abcdd", "aa", "a-", "a_b",
    ],
    &["abc"],
    &["foo bar"],
    &[
        "abc",
        "a1",
        "1h30m",
        "0",
        "12",
        "1234",
        "x.example.com",
        "xx",
        "b",
        "y",
        "abcd",
        "abbcd",
        "d",
        "1-2",
        "abab",
        "ax",
        "x",
        "ab12",
        "1e",
        "xxy",
        "abcdd",
        "aa",
    ],
    &["xx"],
    &["a@b.c"],
    &[""],
    &[
        "abc",
        "a1",
        "a b",
        "a/b",
        "a\nc",
        "foo bar",
        "x.example.com",
        "a@b.c",
        "b",
        "abcd",
        "abbcd",
        "abc\n",
        "a{,2}",
        "abab",
        "ax",
        "ab12",
        "foo_bar",
        "a\nb",
        "abcdd",
        "aa",
        "-a",
        "a-",
        "a_b",
    ],
    &["-"],
    &["AB"],
    &["0", "b", "-", "é", "\n", "]", "y", "d", "x"],
    &["0", "12", "1234"],
    &[
        "abc",
        "ABC",
        "a1",
        "1.5Gi",
        "-.5e3",
        "1h30m",
        "0",
        "TRUE",
        "12",
        "1234",
        "a b",
        "a/b",
        "_x-9",
        "foo bar",
        "x.example.com",
        "xx",
        "a@b.c",
        "",
        "b",
        "-",
        "AB",
        "é",
        "]",
        "y",
        "abcd",
        "${FOO}",
        "abbcd",
        "ABc",
        "d",
        "1-2",
        "a{,2}",
        "abab",
        "ax",
        "x",
        ".*",
        "ab12",
        "foo_bar",
        "10Mi",
        "1e",
        "+1.",
        "xxy",
        "abcdd",
        "aa",
        "-a",
        "a-",
        "a_b",
    ],
    &["]"],
    &["y", "xxy"],
    &["abc", "abcd", "abbcd", "abcdd"],
    &["${FOO}"],
    &["abc", "ABc"],
    &[
        "ABC", "1.5Gi", "-.5e3", "1h30m", "0", "TRUE", "12", "1234", "_x-9", "xx", "", "-", "AB", "é", "\n",
        "]", "y", "${FOO}", "d", "1-2", "x", ".*", "10Mi", "1e", "+1.", "xxy",
    ],
    &["a b", "a\nc", "foo bar", "a\nb"],
    &["0", "12", "1234", "-", "1-2"],
    &["a{,2}"],
    &["abab"],
    &[
        "abc",
        "ABC",
        "TRUE",
        "a b",
        "a/b",
        "a\nc",
        "foo bar",
        "x.example.com",
        "xx",
        "a@b.c",
        "b",
        "-",
        "AB",
        "é",
        "\n",
        "]",
        "y",
        "abcd",
        "${FOO}",
        "abbcd",
        "abc\n",
        "ABc",
        "d",
        "abab",
        "ax",
        "x",
        ".*",
        "foo_bar",
        "a\nb",
        "xxy",
        "abcdd",
        "aa",
        "-a",
        "a-",
        "a_b",
    ],
    &["_x-9", "x.example.com", "xx", "ax", "xxy"],
    &[".*"],
    &["abc", "a1", "12", "1234", "xx", "abcd", "abbcd", "abab", "ax", "ab12", "1e", "xxy", "abcdd", "aa"],
    &[
        "abc", "ABC", "a1", "1h30m", "0", "TRUE", "12", "1234", "xx", "b", "AB", "y", "abcd", "abbcd", "ABc",
        "d", "1-2", "abab", "ax", "x", "ab12", "foo_bar", "10Mi", "1e", "xxy", "abcdd", "aa", "a_b",
    ],
    &["b", "a\nb"],
];

#[test]
fn patterns_match_as_go_regexp_does() {
    for (pattern, accepted) in PATTERNS.iter().zip(ACCEPTED) {
        for input in INPUTS {
            let expected = accepted.contains(&input);
            assert_eq!(pattern::matches(pattern, input), Some(expected), "{pattern} on {input:?}");
        }
    }
}

#[test]
fn unknown_pattern_syntax_accepts_the_value() {
    for pattern in [r"^\p{L}+$", r"\Qa.b\E", r"(?=a)", r"a**", r"(a", r"a)", r"[z-a]", r"\1"] {
        assert_eq!(pattern::matches(pattern, "a"), None, "{pattern}");
    }
}

#[test]
fn compositions_add_their_error_and_the_best_alternatives_errors() {
    // CRD `combos.crv-probe.example.com`; `q` is what controller-gen writes for an IntOrString.
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "q": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true, "pattern": "^[0-9]+$"},
        "o": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "n": {"type": "string", "not": {"enum": ["bad"]}},
        "al": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]}}}}});
    let any_of = r#"Invalid value: "": "spec.q" must validate at least one schema (anyOf)"#;
    let all_of = r#"Invalid value: "": "spec.al" must validate all the schemas (allOf)"#;
    let cases: &[(Value, Causes<'_>)] = &[
        (
            json!({"q": true}),
            &[
                (
                    "spec.q",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "boolean": spec.q in body must be of type integer,string: "boolean""#,
                ),
                ("<nil>", "FieldValueInvalid", any_of),
                (
                    "spec.q",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "boolean": spec.q in body must be of type integer: "boolean""#,
                ),
            ],
        ),
        (
            json!({"q": 1.5}),
            &[
                (
                    "spec.q",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "number": spec.q in body must be of type integer,string: "number""#,
                ),
                ("<nil>", "FieldValueInvalid", any_of),
                (
                    "spec.q",
                    "FieldValueTypeInvalid",
                    r#"Invalid value: "number": spec.q in body must be of type integer: "number""#,
                ),
            ],
        ),
        (
            json!({"q": "abc"}),
            &[(
                "spec.q",
                "FieldValueInvalid",
                r#"Invalid value: "abc": spec.q in body should match '^[0-9]+$'"#,
            )],
        ),
        (json!({"q": 5}), &[]),
        (
            json!({"o": {}}),
            &[
                (
                    "<nil>",
                    "FieldValueInvalid",
                    r#"Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found none valid"#,
                ),
                ("spec.o.a", "FieldValueRequired", "Required value"),
            ],
        ),
        (
            json!({"o": {"a": "x", "b": "y"}}),
            &[(
                "<nil>",
                "FieldValueInvalid",
                r#"Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            )],
        ),
        (
            json!({"n": "bad"}),
            &[(
                "<nil>",
                "FieldValueInvalid",
                r#"Invalid value: "": "spec.n" must not validate the schema (not)"#,
            )],
        ),
        (
            json!({"al": 7}),
            &[
                (
                    "spec.al",
                    "FieldValueInvalid",
                    "Invalid value: 7: spec.al in body should be less than or equal to 5",
                ),
                ("<nil>", "FieldValueInvalid", all_of),
            ],
        ),
        (
            json!({"al": 0}),
            &[
                (
                    "spec.al",
                    "FieldValueInvalid",
                    "Invalid value: 0: spec.al in body should be greater than or equal to 1",
                ),
                ("<nil>", "FieldValueInvalid", all_of),
            ],
        ),
    ];
    for (spec, expected) in cases {
        let object = json!({"metadata": {"name": "c"}, "spec": spec});
        assert_eq!(causes(&schema, &object, None, None), owned(expected), "{spec}");
    }
}

#[test]
fn the_failing_alternative_that_got_furthest_is_reported() {
    // CRD `combos2.crv-probe.example.com`: the second alternative of `v` checks `y`, so it
    // counts more than the first when `y` is there; among equals the first wins.
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "v": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "anyOf": [{"required": ["zz"]}, {"properties": {"y": {"maxLength": 1}}, "required": ["y"]}],
            "properties": {"y": {"type": "string"}}},
        "w": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^a", "minLength": 5}]},
        "u": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 2, "multipleOf": 2}]}}}}});
    let any_of =
        |name: &str| format!(r#"Invalid value: "": "spec.{name}" must validate at least one schema (anyOf)"#);
    let one_of =
        r#"Invalid value: "": "spec.u" must validate one and only one schema (oneOf). Found none valid"#;
    type Expected<'a> = Vec<(&'a str, &'a str, String)>;
    let cases: Vec<(Value, Expected<'_>)> = vec![
        (
            json!({"v": {"y": "long"}}),
            vec![
                ("<nil>", "FieldValueInvalid", any_of("v")),
                ("spec.v.y", "FieldValueTooLong", "Too long: may not be more than 1 byte".into()),
            ],
        ),
        (
            json!({"v": {"q": 1}}),
            vec![
                ("<nil>", "FieldValueInvalid", any_of("v")),
                ("spec.v.zz", "FieldValueRequired", "Required value".into()),
            ],
        ),
        (
            json!({"w": "bcdef"}),
            vec![
                ("<nil>", "FieldValueInvalid", any_of("w")),
                ("spec.w", "FieldValueTooLong", "Too long: may not be more than 1 byte".into()),
            ],
        ),
        (
            json!({"u": 3}),
            vec![
                ("<nil>", "FieldValueInvalid", one_of.into()),
                (
                    "spec.u",
                    "FieldValueInvalid",
                    "Invalid value: 3: spec.u in body should be greater than or equal to 5".into(),
                ),
            ],
        ),
    ];
    for (spec, expected) in cases {
        let object = json!({"metadata": {"name": "c"}, "spec": spec});
        let expected: Vec<_> =
            expected.into_iter().map(|(f, r, m)| (f.to_string(), r.to_string(), m)).collect();
        assert_eq!(causes(&schema, &object, None, None), expected, "{spec}");
    }
}

#[test]
fn formats_are_checked_as_the_real_apiserver_checks_them() {
    // CRD `fmts.crv-probe.example.com`: one string property per format, every input set on
    // all of them at once; the inputs each format accepted. `Date-Time` and `int32` are
    // stripped (unsupported), so they accept everything.
    let inputs = [
        "2024-01-02T03:04:05Z",
        "2024-01-02t03:04:05.5-07:00",
        "2024-01-02T03:04:05+0100",
        "2024-01-02T24:00:00Z",
        "2024-01-02T03:04:05",
        "2024-02-29",
        "2023-02-29",
        "+001-01-01",
        "-001-01-01",
        "0000-01-01",
        "2024-1-01",
        "123e4567-e89b-12d3-a456-426614174000",
        "123E4567E89B32D3A456426614174000",
        "123e4567-e89b-42d3-a456-426614174000",
        "123e4567-e89b-42d3-c456-426614174000",
        "123e4567-e89b-52d3-8456-426614174000",
        "aGk=",
        "aGk",
        "YQ==",
        "YWJj",
        "",
        "abc-def",
        "Abc",
        "-abc",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "a.b-c.d",
        "a..b",
        "1.2.3.4",
        "01.02.03.004",
        "256.1.1.1",
        "1.2.3",
        "::1",
        "::ffff:1.2.3.4",
        "fe80::1%eth0",
        "1.2.3.4/24",
        "1.2.3.4/33",
        "::/128",
        "::/129",
        "1.2.3.4/024",
        "x",
    ];
    let accepted: &[(&str, &[&str])] = &[
        ("date-time", &["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.5-07:00"]),
        ("date", &["2024-02-29", "0000-01-01"]),
        (
            "uuid",
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "123E4567E89B32D3A456426614174000",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-42d3-c456-426614174000",
                "123e4567-e89b-52d3-8456-426614174000",
            ],
        ),
        ("uuid3", &["123E4567E89B32D3A456426614174000"]),
        ("uuid4", &["123e4567-e89b-42d3-a456-426614174000"]),
        ("uuid5", &["123e4567-e89b-52d3-8456-426614174000"]),
        (
            "byte",
            &[
                "123E4567E89B32D3A456426614174000",
                "aGk=",
                "YQ==",
                "YWJj",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            ],
        ),
        ("password", &inputs),
        (
            "k8s-short-name",
            &[
                "2024-02-29",
                "2023-02-29",
                "0000-01-01",
                "2024-1-01",
                "123e4567-e89b-12d3-a456-426614174000",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-42d3-c456-426614174000",
                "123e4567-e89b-52d3-8456-426614174000",
                "abc-def",
                "x",
            ],
        ),
        (
            "k8s-long-name",
            &[
                "2024-02-29",
                "2023-02-29",
                "0000-01-01",
                "2024-1-01",
                "123e4567-e89b-12d3-a456-426614174000",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-42d3-c456-426614174000",
                "123e4567-e89b-52d3-8456-426614174000",
                "abc-def",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "a.b-c.d",
                "1.2.3.4",
                "01.02.03.004",
                "256.1.1.1",
                "1.2.3",
                "x",
            ],
        ),
        ("ipv4", &["1.2.3.4", "01.02.03.004", "::ffff:1.2.3.4"]),
        ("ipv6", &["::1", "::ffff:1.2.3.4"]),
        ("cidr", &["1.2.3.4/24", "::/128", "1.2.3.4/024"]),
        ("datetime", &["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.5-07:00"]),
        ("Date-Time", &inputs),
        ("int32", &inputs),
    ];
    for (format, accepted) in accepted {
        let schema = json!({"type": "string", "format": format});
        for input in inputs {
            let found = validate(&schema, &json!(input), None);
            assert_eq!(found.is_empty(), accepted.contains(&input), "{format} on {input:?}");
        }
    }
}
