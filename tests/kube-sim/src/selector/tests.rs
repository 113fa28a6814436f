use serde_json::{Value, json};

use super::{FieldSelector, LabelSelector};

fn labelled(labels: Value) -> Value {
    json!({"metadata": {"name": "x", "labels": labels}})
}

#[test]
fn label_selector_parse_and_match() {
    let web = labelled(json!({"app": "web", "tier": "front", "n": "7"}));
    let db = labelled(json!({"app": "db"}));
    let bare = json!({"metadata": {"name": "bare"}});
    // (selector, matches web, matches db, matches an unlabelled object)
    let cases: &[(&str, bool, bool, bool)] = &[
        ("", true, true, true),
        ("app=web", true, false, false),
        ("app==web", true, false, false),
        (" app = web ", true, false, false),
        ("app!=web", false, true, true),
        ("app in (web,db)", true, true, false),
        ("app in ( web , cache )", true, false, false),
        ("app notin (web)", false, true, true),
        ("tier", true, false, false),
        ("!tier", false, true, true),
        ("app=web,tier=front", true, false, false),
        ("app=web,tier=back", false, false, false),
        ("app,!tier", false, true, false),
        ("n>5", true, false, false),
        ("n<5", false, false, false),
        ("tier=", false, false, false),
        ("app in (in,notin)", false, false, false),
        ("example.com/app!=x", true, true, true),
    ];
    for (text, want_web, want_db, want_bare) in cases {
        let selector = LabelSelector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(selector.matches_object(&web), *want_web, "{text} on web");
        assert_eq!(selector.matches_object(&db), *want_db, "{text} on db");
        assert_eq!(selector.matches_object(&bare), *want_bare, "{text} on bare");
        assert_eq!(selector.is_empty(), text.is_empty(), "{text} emptiness");
    }
}

#[test]
fn label_selector_empty_value_matches_empty_label() {
    let empty = labelled(json!({"tier": ""}));
    for text in ["tier=", "tier in ()", "tier in (,x)", "tier in (x,)", "tier in (x,,y)"] {
        let selector = LabelSelector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(selector.matches_object(&empty), "{text}");
    }
}

#[test]
fn label_selector_parse_errors() {
    let cases: &[(&str, &str)] = &[
        ("app=web,", "found '', expected: identifier after ','"),
        ("app=web tier=x", "found 'tier', expected: ',' or 'end of string'"),
        ("=web", "found '=', expected: !, identifier, or 'end of string'"),
        ("app in web", "found 'web' expected: '('"),
        ("app in (web", "found '', expected: ',' or ')'"),
        ("app == (x)", "found '(', expected: identifier"),
        ("app x", "found 'x', expected: in, notin, =, ==, !=, gt, lt"),
        ("!app=x", "found '=', expected: ',' or 'end of string'"),
        ("n>x", "for 'Gt', 'Lt' operators, the value must be an integer"),
        (
            "a/b/c=d",
            "key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters",
        ),
        ("-a=b", "key: Invalid value: \"-a\": name part must consist of"),
        ("Example.com/a=b", "prefix part a lowercase RFC 1123 subdomain must consist of"),
        ("/a=b", "prefix part must be non-empty"),
        ("a=-b", "values[0]: Invalid value: \"-b\": a valid label must be an empty string or consist of"),
    ];
    for (text, want) in cases {
        match LabelSelector::parse(text) {
            Ok(s) => panic!("{text} parsed as {s:?}"),
            Err(e) => assert!(e.contains(want), "{text}: got {e:?}, want {want:?}"),
        }
    }
    let long = format!("{}=x", "a".repeat(64));
    let err = LabelSelector::parse(&long).err().unwrap_or_default();
    assert!(err.contains("name part must be no more than 63 characters"), "{err}");
}

#[test]
fn label_selector_regex_error_text_matches_upstream() {
    let err = LabelSelector::parse("a=-b").err().unwrap_or_default();
    assert_eq!(
        err,
        "unable to parse requirement: values[0]: Invalid value: \"-b\": a valid label must be an empty string or consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
         character (e.g. 'MyValue', or 'my_value', or '12345', regex used for validation is \
         '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
}

#[test]
fn label_selector_from_api() {
    let web = labelled(json!({"app": "web", "tier": "front"}));
    let db = labelled(json!({"app": "db"}));
    let cases: &[(Value, bool, bool)] = &[
        (json!({}), true, true),
        (json!({"matchLabels": {}, "matchExpressions": []}), true, true),
        (json!({"matchLabels": {"app": "web"}}), true, false),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}),
            true,
            true,
        ),
        (json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}), false, true),
        (json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}), true, false),
        (
            json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist", "values": []}]}),
            false,
            true,
        ),
        (
            json!({"matchLabels": {"app": "web"},
                   "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
            false,
            false,
        ),
    ];
    for (spec, want_web, want_db) in cases {
        let selector = LabelSelector::from_api(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(selector.matches_object(&web), *want_web, "{spec} on web");
        assert_eq!(selector.matches_object(&db), *want_db, "{spec} on db");
    }
}

#[test]
fn null_label_selector_matches_nothing() {
    let nothing = LabelSelector::from_api(&Value::Null).unwrap_or_default();
    assert!(nothing.matches_nothing());
    assert!(!nothing.is_empty());
    assert!(!nothing.matches_object(&labelled(json!({"app": "web"}))));
    assert!(!nothing.matches_object(&json!({"metadata": {}})));
    assert!(LabelSelector::default().matches_object(&json!({"metadata": {}})));
}

#[test]
fn label_selector_from_api_errors() {
    let cases: &[(Value, &str)] = &[
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn"}]}),
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "values set must be empty for exists and does not exist",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "\"Gt\" is not a valid label selector operator",
        ),
        (json!({"matchLabels": {"a": 1}}), "matchLabels.a must be a string"),
        (json!({"matchLabels": {"a b": "x"}}), "key: Invalid value: \"a b\""),
        (json!("app=web"), "a label selector must be an object"),
    ];
    for (spec, want) in cases {
        match LabelSelector::from_api(spec) {
            Ok(s) => panic!("{spec} accepted as {s:?}"),
            Err(e) => assert!(e.contains(want), "{spec}: got {e:?}, want {want:?}"),
        }
    }
}

#[test]
fn label_selector_display_is_sorted_query_syntax() {
    let selector = LabelSelector::from_api(&json!({"matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}))
    .unwrap_or_default();
    assert_eq!(selector.to_string(), "app=web,env in (dev,prod),tier=front");
    let parsed = LabelSelector::parse(&selector.to_string()).unwrap_or_default();
    assert_eq!(parsed.to_string(), selector.to_string());
}

#[test]
fn field_selector_parse_and_match() {
    let scheduled = json!({"metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "restartPolicy": "Always"}, "status": {"phase": "Running"}});
    let pending = json!({"metadata": {"name": "p2", "namespace": "team-a"}, "spec": {},
        "status": {"phase": "Pending"}});
    let cases: &[(&str, bool, bool)] = &[
        ("", true, true),
        ("spec.nodeName=node-1", true, false),
        ("spec.nodeName==node-1", true, false),
        ("spec.nodeName!=node-1", false, true),
        ("spec.nodeName=", false, true),
        ("status.phase=Running,metadata.namespace=default", true, false),
        ("status.phase!=Succeeded,status.phase!=Failed", true, true),
        ("metadata.name=p2", false, true),
        ("spec.restartPolicy=Always", true, false),
    ];
    for (text, want_scheduled, want_pending) in cases {
        let selector = FieldSelector::parse("pods", text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(selector.matches_object(&scheduled), *want_scheduled, "{text} scheduled");
        assert_eq!(selector.matches_object(&pending), *want_pending, "{text} pending");
        assert_eq!(selector.is_empty(), text.is_empty());
    }
}

#[test]
fn field_selector_booleans_and_other_resources() {
    let cordoned = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
    let schedulable = json!({"metadata": {"name": "n2"}, "spec": {}});
    let selector = FieldSelector::parse("nodes", "spec.unschedulable=false").unwrap_or_default();
    assert!(!selector.matches_object(&cordoned));
    assert!(selector.matches_object(&schedulable));
    let selector = FieldSelector::parse("nodes", "spec.unschedulable=true").unwrap_or_default();
    assert!(selector.matches_object(&cordoned));

    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p1"},
        "reason": "Evicted", "type": "Normal", "source": {"component": "kubelet"}});
    let selector = FieldSelector::parse(
        "events",
        "involvedObject.kind=Pod,involvedObject.name=p1,source=kubelet,reason=Evicted,type=Normal",
    )
    .unwrap_or_default();
    assert!(!selector.is_empty());
    assert!(selector.matches_object(&event));

    let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
    let selector = FieldSelector::parse("secrets", "type=kubernetes.io/tls").unwrap_or_default();
    assert!(!selector.is_empty());
    assert!(selector.matches_object(&secret));
}

#[test]
fn field_selector_escapes_and_required_value() {
    let odd = json!({"metadata": {"name": "a,b=c\\d"}});
    let selector = FieldSelector::parse("configmaps", "metadata.name=a\\,b\\=c\\\\d").unwrap_or_default();
    assert!(selector.matches_object(&odd));
    let selector = FieldSelector::parse("pods", "spec.nodeName=n1,status.phase!=Failed").unwrap_or_default();
    assert_eq!(selector.required_value("spec.nodeName"), Some("n1"));
    assert_eq!(selector.required_value("status.phase"), None);
}

#[test]
fn field_selector_errors() {
    let cases: &[(&str, &str, &str)] = &[
        ("pods", "spec.foo=x", "field label not supported: spec.foo"),
        (
            "configmaps",
            "spec.nodeName=x",
            "\"spec.nodeName\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
        ("nodes", "status.phase=x", "field label not supported: status.phase"),
        ("pods", "spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
        ("pods", "spec.nodeName=a=b", "invalid field selector: unescaped character in value: 61"),
        ("pods", "spec.nodeName=a\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("pods", "spec.nodeName=a\\", "invalid field selector: invalid escape sequence: \\"),
    ];
    for (plural, text, want) in cases {
        match FieldSelector::parse(plural, text) {
            Ok(s) => panic!("{text} parsed as {s:?}"),
            Err(e) => assert_eq!(e, *want, "{plural} {text}"),
        }
    }
}
