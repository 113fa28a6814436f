//! Values from a real v1.35 apiserver (`widgets.life-probe.example.com`) and upstream's
//! naming-controller cases.

use serde_json::{Value, json};

use super::*;

const T0: &str = "2026-12-04T02:33:24Z";

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap_or_default()
}

fn widgets() -> Value {
    json!({"metadata": {"name": "widgets.life-probe.example.com"},
        "spec": {"group": "life-probe.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
                "listKind": "WidgetList", "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true}]}})
}

/// Runs both controllers to a fixed point, as the apiserver's loops do.
fn settle(mut crd: Value, group: &[Value], now: Timestamp) -> Value {
    if let Some(status) = naming(&crd, group, now) {
        crd["status"] = status;
    }
    if let Some(status) = establishing(&crd, now) {
        crd["status"] = status;
    }
    crd
}

#[test]
fn a_new_crd_is_answered_with_the_zero_status_then_accepted_and_established() {
    let mut crd = widgets();
    crd["status"] = create_status(&crd);
    assert_eq!(
        crd["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert!(!is_served(&crd));
    let group = [crd.clone()];
    let named = naming(&crd, &group, ts(T0)).unwrap_or_default();
    assert_eq!(named["conditions"][1]["reason"], "Installing", "the naming controller's Established");
    let crd = settle(crd, &group, ts(T0));
    assert_eq!(
        crd["status"],
        json!({"conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": T0, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": T0, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
            "acceptedNames": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
                "listKind": "WidgetList", "categories": ["all"]},
            "storedVersions": ["v1"]})
    );
    assert!(is_served(&crd));
    assert_eq!(naming(&crd, std::slice::from_ref(&crd), ts(T0)), None, "nothing left to do");
    assert_eq!(establishing(&crd, ts(T0)), None);
}

#[test]
fn names_taken_by_another_crd_of_the_group_are_refused() {
    let established = settle(
        {
            let mut c = widgets();
            c["status"] = create_status(&c);
            c
        },
        &[],
        ts(T0),
    );
    let mut gadgets = json!({"metadata": {"name": "gadgets.life-probe.example.com"},
        "spec": {"group": "life-probe.example.com", "names": {"plural": "gadgets", "singular": "gadget",
            "shortNames": ["wd", "gd"], "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
    gadgets["status"] = create_status(&gadgets);
    let group = [established.clone(), gadgets.clone()];
    let status = naming(&gadgets, &group, ts(T0)).unwrap_or_default();
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(status["conditions"][0]["reason"], "ShortNamesConflict");
    assert_eq!(status["conditions"][0]["message"], "\"wd\" is already in use");
    assert_eq!(status["conditions"][1]["reason"], "NotAccepted");
    assert!(status["acceptedNames"].get("shortNames").is_none(), "the other names are accepted");
    assert_eq!(status["acceptedNames"]["kind"], "Gadget");
    gadgets["status"] = status;
    assert!(!is_served(&gadgets));
    assert_eq!(establishing(&gadgets, ts(T0)), None);
    // A kind in use is a KindConflict; another group is not looked at.
    let mut clash = gadgets.clone();
    clash["spec"]["names"]["kind"] = json!("Widget");
    clash["status"] = create_status(&clash);
    let status = naming(&clash, &group, ts(T0)).unwrap_or_default();
    assert_eq!(status["conditions"][0]["reason"], "KindConflict");
    let mut elsewhere = gadgets.clone();
    elsewhere["spec"]["group"] = json!("other.example.com");
    elsewhere["status"] = create_status(&elsewhere);
    let accepted = settle(elsewhere, &group, ts(T0));
    assert!(is_served(&accepted));
}

#[test]
fn updates_add_the_new_storage_version_and_keep_the_rest() {
    let mut crd = widgets();
    crd["spec"]["versions"] = json!([{"name": "v1", "served": true, "storage": false},
        {"name": "v2", "served": true, "storage": true}]);
    let status = update_status(&crd, &json!({"storedVersions": ["v1"], "conditions": []}));
    assert_eq!(status["storedVersions"], json!(["v1", "v2"]));
    assert_eq!(update_status(&crd, &Value::Null)["storedVersions"], json!(["v2"]));
    assert_eq!(served_names(&crd)["kind"], "Widget");
}
