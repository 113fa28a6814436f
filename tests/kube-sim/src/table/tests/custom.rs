//! Custom resources: printer columns and the JSONPath subset.

use serde_json::{Value, json};

use super::{cells, column_names, meta, now};
use crate::table::{JsonPath, render};

#[test]
fn custom_resource_printer_columns() {
    let columns = [
        json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
        json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
        json!({"name": "First", "type": "string", "jsonPath": ".spec.items[0].name", "priority": 1}),
        json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"}),
        json!({"name": "On", "type": "boolean", "jsonPath": ".spec.on"}),
        json!({"name": "Since", "type": "date", "jsonPath": ".status.since"}),
        json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
    ];
    let widget = json!({"metadata": meta("w1"), "spec": {"replicas": 3, "items": [{"name": "x"}],
            "ratio": 0.5, "on": true},
        "status": {"since": "2024-01-01T10:00:00Z",
            "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
    let table = render("example.com", "widgets", Some(&columns), json!({}), &[widget], "Metadata", now());
    // As the real apiserver: the declared columns only (no Age added), described by their
    // JSONPath when the CRD gives no description.
    assert_eq!(
        column_names(&table),
        ["Name", "Replicas", "Ready", "First*", "Ratio", "On", "Since", "Missing"]
    );
    assert_eq!(cells(&table), [json!(["w1", 3, "True", "x", 0.5, true, "120m", null])]);
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(
        table["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.replicas"
    );
}

#[test]
fn custom_resource_without_printer_columns_shows_age() {
    // The real apiserver's columns for a CRD without `additionalPrinterColumns` (or with an
    // empty list): Name, then Age typed `date`.
    let widget = json!({"metadata": meta("w1")});
    let table = render("example.com", "widgets", Some(&[]), json!({}), &[widget], "Metadata", now());
    assert_eq!(column_names(&table), ["Name", "Age"]);
    assert_eq!(table["columnDefinitions"][1]["type"], "date");
    assert_eq!(table["columnDefinitions"][1]["description"], crate::table::AGE_DESCRIPTION);
    assert_eq!(cells(&table), [json!(["w1", "5m"])]);
}

#[test]
fn jsonpath_subset() {
    let doc = json!({"a": {"b": [{"t": "x", "v": 1}, {"t": "y", "v": 2}], "c.d": "dotted"}, "n": 5});
    let cases: &[(&str, Option<Value>)] = &[
        (".n", Some(json!(5))),
        ("{.n}", Some(json!(5))),
        ("n", Some(json!(5))),
        (".a.b[1].v", Some(json!(2))),
        (".a.b[-1].t", Some(json!("y"))),
        (".a.b[*].v", Some(json!(1))),
        (".a.b[?(@.t=='y')].v", Some(json!(2))),
        (".a.b[?(@.v==2)].t", Some(json!("y"))),
        (".a.b[?(@.t!=\"x\")].v", Some(json!(2))),
        (".a['c.d']", Some(json!("dotted"))),
        (".a.c\\.d", Some(json!("dotted"))),
        (".a.b[5]", None),
        (".missing.deeper", None),
    ];
    for (path, want) in cases {
        let parsed = JsonPath::parse(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(parsed.first(&doc).cloned(), *want, "{path}");
    }
    for bad in ["..a", ".a[", ".a[?(x)]"] {
        assert!(JsonPath::parse(bad).is_err(), "{bad} should not parse");
    }
}
