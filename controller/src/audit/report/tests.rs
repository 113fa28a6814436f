//! The report over one cluster holding a PDB of every class and every "why not", objects
//! shaped as the API server returns them.

use eviction_autoscaler_shared::config::SettingsArgs;
use eviction_autoscaler_shared::surge::SurgeError;
use serde_json::{Value, json};

use super::*;

fn config() -> Config {
    Config::resolve(&SettingsArgs::default(), None).expect("defaults are valid")
}

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

fn namespace(name: &str, enabled: bool) -> Namespace {
    let annotations =
        if enabled { json!({"eviction-autoscaler.azure.com/enable": "true"}) } else { json!({}) };
    object(json!({"metadata": {"name": name, "annotations": annotations}}))
}

fn node(name: &str) -> Node {
    object(json!({"metadata": {"name": name}}))
}

/// A pod of `app` on `node`, owned by `owner` (`("ReplicaSet", "web-5d8")` for a Deployment
/// `web`, hash `5d8`), Ready or not.
fn pod(ns: &str, name: &str, app: &str, owner: Option<(&str, &str)>, node: &str, ready: bool) -> Pod {
    let owners = owner.map_or(json!([]), |(kind, name)| {
        json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("{name}-uid"), "controller": true}])
    });
    let ready = if ready { "True" } else { "False" };
    object(json!({
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app, "pod-template-hash": "5d8"},
                     "ownerReferences": owners},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}
    }))
}

/// The pods of Deployment `app` (ReplicaSet `<app>-5d8`), one per `(node, ready)`.
fn replicas(ns: &str, app: &str, placed: &[(&str, bool)]) -> Vec<Pod> {
    let rs = format!("{app}-5d8");
    placed
        .iter()
        .enumerate()
        .map(|(i, (node, ready))| pod(ns, &format!("{rs}-{i}"), app, Some(("ReplicaSet", &rs)), node, *ready))
        .collect()
}

fn deployment(ns: &str, name: &str, replicas: i32, strategy: Value) -> Deployment {
    object(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "strategy": strategy, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}}}
    }))
}

fn pdb(ns: &str, name: &str, app: &str, budget: Value, allowed: i32) -> PodDisruptionBudget {
    let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
    spec.as_object_mut().unwrap().extend(budget.as_object().unwrap().clone());
    object(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    }))
}

/// Every class and every "why not", each Deployment named for its case.
struct World {
    namespaces: Vec<Namespace>,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    pdbs: Vec<PodDisruptionBudget>,
    deployments: Vec<Deployment>,
    stateful_sets: Vec<StatefulSet>,
    hpas: Vec<HorizontalPodAutoscaler>,
}

impl World {
    fn new() -> Self {
        let rolling = json!({});
        let min1 = json!({"minAvailable": 1});
        let mut pods = Vec::new();
        pods.extend(replicas("apps", "single", &[("node-1", true)]));
        pods.extend(replicas("apps", "recreate", &[("node-1", true)]));
        pods.extend(replicas("apps", "pair", &[("node-1", true), ("node-2", false)]));
        pods.extend(replicas("apps", "wide", &[("node-1", true), ("node-2", true), ("node-2", true)]));
        pods.extend(replicas("apps", "twin", &[("node-2", true), ("node-2", true)]));
        pods.extend(replicas("apps", "capped", &[("node-2", true)]));
        pods.extend(replicas("off", "quiet", &[("node-2", true)]));
        pods.push(pod("apps", "db-0", "db", Some(("StatefulSet", "db")), "node-2", true));
        pods.push(pod("apps", "lonely", "lonely", None, "node-2", true));
        let hpa: HorizontalPodAutoscaler = object(json!({
            "metadata": {"name": "capped", "namespace": "apps"},
            "spec": {"minReplicas": 1, "maxReplicas": 1,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "capped"}}
        }));
        let stateful_set: StatefulSet = object(json!({
            "metadata": {"name": "db", "namespace": "apps"},
            "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}}}
        }));
        World {
            namespaces: vec![namespace("apps", true), namespace("off", false)],
            nodes: vec![node("node-1"), node("node-2")],
            pods,
            pdbs: vec![
                pdb("apps", "single", "single", min1.clone(), 0),
                pdb("apps", "recreate", "recreate", min1.clone(), 0),
                pdb("apps", "pair", "pair", min1.clone(), 0),
                pdb("apps", "wide", "wide", json!({"maxUnavailable": 1}), 1),
                pdb("apps", "twin-a", "twin", min1.clone(), 1),
                pdb("apps", "twin-b", "twin", min1.clone(), 1),
                pdb("apps", "capped", "capped", min1.clone(), 0),
                pdb("apps", "db", "db", min1.clone(), 0),
                pdb("apps", "lonely", "lonely", json!({"maxUnavailable": 1}), 0),
                pdb("apps", "nothing", "absent", min1.clone(), 0),
                pdb("off", "quiet", "quiet", min1, 0),
            ],
            deployments: vec![
                deployment("apps", "single", 1, rolling.clone()),
                deployment("apps", "recreate", 1, json!({"type": "Recreate"})),
                deployment("apps", "pair", 2, rolling.clone()),
                deployment("apps", "wide", 3, rolling.clone()),
                deployment("apps", "twin", 2, rolling.clone()),
                deployment("apps", "capped", 1, rolling.clone()),
                deployment("off", "quiet", 1, rolling),
            ],
            stateful_sets: vec![stateful_set],
            hpas: vec![hpa],
        }
    }

    fn report(&self) -> Report {
        let cluster = Cluster {
            namespaces: &self.namespaces,
            nodes: &self.nodes,
            pods: &self.pods,
            pdbs: &self.pdbs,
            deployments: &self.deployments,
            stateful_sets: &self.stateful_sets,
            hpas: &self.hpas,
        };
        report(&cluster, &config())
    }
}

fn by_name<'a>(report: &'a Report, ns: &str, name: &str) -> &'a PdbReport {
    report.pdbs.iter().find(|p| p.namespace == ns && p.name == name).expect("in the report")
}

#[test]
fn every_pdb_gets_its_class_owner_and_surge_answer() {
    let report = World::new().report();
    let rows: Vec<(String, String, String, String)> = report
        .pdbs
        .iter()
        .map(|p| {
            let class = p.class.as_ref().map_or_else(Clone::clone, |c| c.name().to_owned());
            let surge = p.surge.as_ref().map_or_else(|why| why.reason().to_owned(), |()| "opens".to_owned());
            (format!("{}/{}", p.namespace, p.name), class, p.owner.clone(), surge)
        })
        .collect();
    let want = [
        ("apps/single", "blocks_all", "Deployment/single", "opens"),
        ("apps/recreate", "blocks_all", "Deployment/recreate", "cannot_surge"),
        ("apps/pair", "unhealthy", "Deployment/pair", "opens"),
        ("apps/wide", "ok", "Deployment/wide", "opens"),
        ("apps/twin-a", "overlapping", "Deployment/twin", "overlapping"),
        ("apps/twin-b", "overlapping", "Deployment/twin", "overlapping"),
        ("apps/capped", "blocks_all", "Deployment/capped", "surge_too_small"),
        ("apps/db", "blocks_all", "StatefulSet/db", "not_a_deployment"),
        ("apps/lonely", "blocks_all", "none", "no_owner"),
        ("apps/nothing", "no_effect", "", "opens"),
        ("off/quiet", "blocks_all", "Deployment/quiet", "not_in_scope"),
    ];
    let want: Vec<_> =
        want.iter().map(|(a, b, c, d)| ((*a).into(), (*b).into(), (*c).into(), (*d).into())).collect();
    assert_eq!(rows, want);

    let pair = by_name(&report, "apps", "pair");
    assert_eq!(pair.pods, ["pair-5d8-0", "pair-5d8-1"]);
    assert_eq!(
        pair.class,
        Ok(PdbClass::Unhealthy { not_ready: vec!["pair-5d8-1".into()], always_allow_frees_them: false })
    );
    assert_eq!(
        by_name(&report, "apps", "recreate").surge,
        Err(SurgeBlocker::CannotSurge(SurgeError::Unsupported { cause: "strategy is Recreate".into() }))
    );
}

#[test]
fn each_node_lists_what_its_drain_would_stall_on_and_what_we_open() {
    let report = World::new().report();
    let node_1 = &report.nodes[0];
    assert_eq!(node_1.name, "node-1");
    assert_eq!(node_1.stalled_pods, ["apps/single-5d8-0", "apps/recreate-5d8-0", "apps/pair-5d8-0"]);
    assert_eq!(node_1.pdbs, ["apps/single", "apps/recreate", "apps/pair"]);
    assert_eq!(node_1.opened_by_surge, ["apps/single", "apps/pair"]);
    assert!(!node_1.completes());
    let node_2 = &report.nodes[1];
    assert_eq!(
        node_2.pdbs,
        ["apps/pair", "apps/twin-a", "apps/twin-b", "apps/capped", "apps/db", "apps/lonely", "off/quiet"]
    );
    assert_eq!(node_2.opened_by_surge, ["apps/pair"]);
    assert!(!report.drains_complete());
}

#[test]
fn once_the_causes_are_fixed_every_drain_completes() {
    let mut world = World::new();
    // What the report told the operator to change, one change each.
    world.deployments.retain(|d| d.metadata.name.as_deref() != Some("recreate"));
    world.deployments.push(deployment("apps", "recreate", 1, json!({})));
    world.pdbs.retain(|p| !matches!(p.metadata.name.as_deref(), Some("twin-b" | "db" | "lonely")));
    world.hpas[0].spec.as_mut().unwrap().max_replicas = 3;
    world.namespaces[1] = namespace("off", true);
    let report = world.report();
    assert!(report.drains_complete(), "{:#?}", report.nodes);
    assert_eq!(by_name(&report, "apps", "twin-a").class, Ok(PdbClass::Ok));
}

#[test]
fn a_selector_that_cannot_be_read_is_reported_not_judged() {
    let mut world = World::new();
    let bad = json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]});
    world.pdbs[0].spec.as_mut().unwrap().selector = Some(object(bad));
    let report = world.report();
    let single = by_name(&report, "apps", "single");
    let err = single.class.as_ref().unwrap_err();
    assert!(err.starts_with("spec.selector: "), "{err}");
    assert!(err.contains("Near"), "{err}");
}

#[test]
fn a_surge_with_no_room_left_on_the_other_nodes_is_no_help() {
    let mut world = World::new();
    // Each node's pod slots all taken.
    for node in &mut world.nodes {
        let name = node.metadata.name.clone();
        let here =
            world.pods.iter().filter(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()) == name).count();
        *node = object(
            json!({"metadata": {"name": name}, "status": {"allocatable": {"pods": here.to_string()}}}),
        );
    }
    let report = world.report();
    assert_eq!(by_name(&report, "apps", "single").surge, Err(SurgeBlocker::NoRoom { room: 0, wanted: 1 }));
    assert!(report.nodes.iter().all(|n| n.opened_by_surge.is_empty()), "{:#?}", report.nodes);

    // One free slot on node-2: the PDB-wide answer and node-1's drain find it; node-2's own
    // drain cannot use it.
    world.nodes[1] =
        object(json!({"metadata": {"name": "node-2"}, "status": {"allocatable": {"pods": "100"}}}));
    let report = world.report();
    assert_eq!(by_name(&report, "apps", "single").surge, Ok(()));
    assert!(report.nodes[0].opened_by_surge.contains(&"apps/single".to_owned()), "{:#?}", report.nodes);
}
