use super::*;
use crate::cluster_logic::test_support::ts;

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {}, "status": {"allocatable": {"pods": "2"}}})
}

fn bound(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"nodeName": node}, "status": {"phase": "Running"}})
}

fn pending_pod() -> Value {
    json!({"metadata": {"name": "new"}, "spec": {}, "status": {"phase": "Pending"}})
}

#[test]
fn toleration_matching_table() {
    let taint = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
    let cases = [
        (json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}), true),
        (json!({"key": "dedicated", "value": "gpu"}), true),
        (json!({"key": "dedicated", "value": "cpu"}), false),
        (json!({"key": "dedicated", "operator": "Exists"}), true),
        (json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}), false),
        (json!({"operator": "Exists"}), true),
        (json!({"operator": "Exists", "effect": "NoSchedule"}), true),
        (json!({"key": "other", "operator": "Exists"}), false),
        (json!({"key": "dedicated", "operator": "Gt", "value": "gpu"}), false),
    ];
    for (toleration, expected) in cases {
        assert_eq!(toleration_tolerates(&toleration, &taint), expected, "{toleration}");
    }
}

#[test]
fn picks_the_least_loaded_fitting_node_by_name_on_ties() {
    let nodes = [node("node-1"), node("node-2"), node("node-3")];
    let pods = [bound("a", "node-1"), bound("b", "node-3")];
    assert_eq!(schedule(&pending_pod(), &nodes, &pods, 110), Scheduling::Bind("node-2".into()));
    let pods = [bound("a", "node-1"), bound("b", "node-2"), bound("c", "node-3")];
    assert_eq!(schedule(&pending_pod(), &nodes, &pods, 110), Scheduling::Bind("node-1".into()));
    let mut finished = bound("done", "node-1");
    finished["status"]["phase"] = json!("Succeeded");
    let pods = [finished.clone(), finished, bound("b", "node-2"), bound("c", "node-3")];
    assert_eq!(
        schedule(&pending_pod(), &nodes, &pods, 110),
        Scheduling::Bind("node-1".into()),
        "terminal pods free their slot"
    );
}

#[test]
fn the_unschedulable_message_has_the_upstream_shape() {
    let mut cordoned = node("node-1");
    cordoned["spec"]["unschedulable"] = json!(true);
    let nodes = [cordoned, node("node-2"), node("node-3")];
    let pods: Vec<Value> = ["node-2", "node-2", "node-3", "node-3"]
        .iter()
        .enumerate()
        .map(|(i, n)| bound(&format!("p{i}"), n))
        .collect();
    let decision = schedule(&pending_pod(), &nodes, &pods, 110);
    let expected = "0/3 nodes are available: 1 node(s) were unschedulable, 2 Too many pods. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.";
    assert_eq!(decision, Scheduling::Unschedulable(expected.into()));
    let condition = pod_scheduled_condition(&decision, 3, ts("2026-01-01T00:00:00Z"));
    assert_eq!(
        (
            condition["status"].as_str(),
            condition["reason"].as_str(),
            condition["observedGeneration"].as_i64()
        ),
        (Some("False"), Some("Unschedulable"), Some(3))
    );
    assert_eq!(condition["message"], expected);
    assert_eq!(
        schedule(&pending_pod(), &[], &[], 110),
        Scheduling::Unschedulable("no nodes available to schedule pods".into())
    );
}

#[test]
fn taints_cordons_and_selectors_filter_nodes() {
    let mut tainted = node("node-1");
    tainted["spec"]["taints"] = json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
    let mut soft = node("node-2");
    soft["spec"]["taints"] = json!([{"key": "x", "effect": "PreferNoSchedule"}]);
    let mut cordoned = node("node-3");
    cordoned["spec"]["unschedulable"] = json!(true);
    let pod = pending_pod();
    assert_eq!(node_fit(&pod, &tainted, 0, 110), Err(Misfit::UntoleratedTaint));
    assert_eq!(node_fit(&pod, &soft, 0, 110), Ok(()), "PreferNoSchedule never blocks");
    assert_eq!(node_fit(&pod, &cordoned, 0, 110), Err(Misfit::Unschedulable));
    let mut daemon = pending_pod();
    daemon["spec"]["tolerations"] =
        json!([{"key": UNSCHEDULABLE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]);
    assert_eq!(node_fit(&daemon, &cordoned, 0, 110), Ok(()), "the cordon toleration admits the pod");
    let mut selective = pending_pod();
    selective["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "node-2"});
    assert_eq!(node_fit(&selective, &soft, 0, 110), Ok(()));
    assert_eq!(node_fit(&selective, &cordoned, 0, 110), Err(Misfit::Unschedulable));
    let mut tolerant = pending_pod();
    tolerant["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    assert_eq!(node_fit(&tolerant, &tainted, 0, 110), Ok(()));
    let mut no_allocatable = node("node-4");
    no_allocatable["status"] = json!({});
    assert_eq!(
        node_fit(&pod, &no_allocatable, 3, 3),
        Err(Misfit::TooManyPods),
        "falls back to the default capacity"
    );
}

#[test]
fn cordon_taint_follows_spec_unschedulable() {
    let now = ts("2026-01-01T00:00:00Z");
    let mut n = node("node-1");
    assert_eq!(reconcile_cordon_taint(&n, now), None);
    n["spec"]["unschedulable"] = json!(true);
    n["spec"]["taints"] = json!([{"key": "user", "effect": "NoSchedule"}]);
    let taints = reconcile_cordon_taint(&n, now).unwrap_or_default();
    assert_eq!(
        taints,
        vec![
            json!({"key": "user", "effect": "NoSchedule"}),
            json!({"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"})
        ]
    );
    n["spec"]["taints"] = json!(taints);
    assert_eq!(reconcile_cordon_taint(&n, now), None);
    n["spec"]["unschedulable"] = Value::Null;
    assert_eq!(reconcile_cordon_taint(&n, now), Some(vec![json!({"key": "user", "effect": "NoSchedule"})]));
}

#[test]
fn required_node_affinity_terms() {
    let n = node("node-2");
    let with_terms = |terms: Value| {
        let mut p = pending_pod();
        p["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        p
    };
    let by_name = |names: Value| json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}]);
    assert!(required_node_affinity_matches(&with_terms(by_name(json!(["node-2"]))), &n));
    assert!(!required_node_affinity_matches(&with_terms(by_name(json!(["node-1"]))), &n));
    let label = |op: &str, values: Value| json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": op, "values": values}]}]);
    assert!(required_node_affinity_matches(&with_terms(label("In", json!(["node-2"]))), &n));
    assert!(required_node_affinity_matches(&with_terms(label("NotIn", json!(["node-1"]))), &n));
    assert!(required_node_affinity_matches(&with_terms(label("Exists", json!([]))), &n));
    assert!(!required_node_affinity_matches(&with_terms(label("DoesNotExist", json!([]))), &n));
    let either = json!([by_name(json!(["node-9"]))[0].clone(), by_name(json!(["node-2"]))[0].clone()]);
    assert!(required_node_affinity_matches(&with_terms(either), &n), "terms are ORed");
    assert!(!required_node_affinity_matches(&with_terms(json!([])), &n), "no term matches nothing");
    assert_eq!(node_fit(&with_terms(by_name(json!(["node-1"]))), &n, 0, 110), Err(Misfit::NodeSelector));
}
