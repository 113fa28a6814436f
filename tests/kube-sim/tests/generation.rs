//! `metadata.generation` around deletion and binding, as measured on a real v1.35 apiserver: a
//! DELETE that only marks an object (finalizers, a Pod's grace period, the `orphan` /
//! `foregroundDeletion` finalizer of a propagation policy) bumps a generation that is set, once;
//! binding a pod (`pods/binding`) does not; HPAs, ConfigMaps and the like have none.

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};
use serde_json::{Value, json};

fn meta(answer: &Value) -> (Value, Value, Value) {
    let m = &answer["metadata"];
    (m["generation"].clone(), m["deletionGracePeriodSeconds"].clone(), m["finalizers"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marking_an_object_for_deletion_bumps_its_generation_once() {
    let sim = Sim::start_with(kube_sim::ClusterConfig {
        graceful_pod_deletion: true,
        deletion_finalizers: true,
        ..kube_sim::ClusterConfig::default()
    })
    .await;
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "f", "finalizers": ["example.com/x"]},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}});
    assert_eq!(sim.raw("POST", pdbs, Some(pdb)).await.code, 201);
    // The real apiserver: generation 2, grace 0, the finalizer kept; a second DELETE changes nothing.
    for _ in 0..2 {
        let answer = sim.raw("DELETE", &format!("{pdbs}/f"), None).await;
        assert_eq!(answer.code, 200);
        assert_eq!(meta(&answer.body), (json!(2), json!(0), json!(["example.com/x"])));
    }

    // Emptying the finalizers deletes it; the answer is the object as written (real v1.35).
    let gvr = kube_sim::Gvr::new("policy", "v1", "poddisruptionbudgets");
    let release = json!({"metadata": {"finalizers": null}}).to_string();
    let (released, _) = sim
        .cluster()
        .patch(
            &gvr,
            Some("default"),
            "f",
            None,
            kube_sim::patch::PatchType::Merge,
            release.as_bytes(),
            &Default::default(),
        )
        .await
        .expect("released");
    assert_eq!(meta(&released), (json!(2), json!(0), Value::Null));
    assert!(!sim.exists("policy/v1", "poddisruptionbudgets", Some("default"), "f"));

    // Kinds without a generation stay without one.
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/x"]}});
    assert_eq!(sim.raw("POST", cms, Some(cm)).await.code, 201);
    let answer = sim.raw("DELETE", &format!("{cms}/held"), None).await;
    assert_eq!(meta(&answer.body), (Value::Null, json!(0), json!(["example.com/x"])));
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "maxReplicas": 2}});
    let created =
        sim.raw("POST", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", Some(hpa)).await;
    assert_eq!((created.code, &created.body["metadata"]["generation"]), (201, &Value::Null));

    // A Pod on a node: graceful deletion (30 s) marks it, generation 1 → 2.
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gp"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}});
    let created = sim.raw("POST", pods, Some(pod)).await;
    assert_eq!(created.body["metadata"]["generation"], 1);
    let answer = sim.raw("DELETE", &format!("{pods}/gp"), None).await;
    assert_eq!(meta(&answer.body), (json!(2), json!(30), Value::Null));
    let again = sim.raw("DELETE", &format!("{pods}/gp"), None).await;
    assert_eq!(again.body["metadata"]["generation"], 2, "only the first mark bumps it");

    // propagationPolicy=Orphan adds the `orphan` finalizer: a mark too.
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    assert_eq!(sim.raw("POST", deployments, Some(deployment)).await.code, 201);
    let answer = sim.raw("DELETE", &format!("{deployments}/web?propagationPolicy=Orphan"), None).await;
    assert_eq!(meta(&answer.body), (json!(2), json!(0), json!(["orphan"])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_a_pod_keeps_its_generation() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 2)).await;
    sim.wait_ready("default", "web", 2).await;
    for pod in sim.pods_of("default", "web") {
        assert_eq!(pod["metadata"]["generation"], 1, "a scheduled Deployment pod: {}", pod["metadata"]);
    }

    // The subresource itself, as the real apiserver answers it.
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bp"},
        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(sim.raw("POST", pods, Some(pod)).await.code, 201);
    let binding = |node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bp"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    };
    let bound = sim.raw("POST", &format!("{pods}/bp/binding"), Some(binding("node-2"))).await;
    assert_eq!(
        (bound.code, bound.body),
        (
            201,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
        )
    );
    let again = sim.raw("POST", &format!("{pods}/bp/binding"), Some(binding("node-1"))).await;
    assert_eq!(again.code, 409);
    assert_eq!(
        again.body["message"],
        "Operation cannot be fulfilled on pods/binding \"bp\": pod bp is already assigned to node \"node-2\""
    );
    assert_eq!(again.body["details"], json!({"name": "bp", "kind": "pods/binding"}));
    let pod = sim.get("v1", "pods", Some("default"), "bp");
    assert_eq!((&pod["metadata"]["generation"], &pod["spec"]["nodeName"]), (&json!(1), &json!("node-2")));
    let scheduled =
        pod["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "PodScheduled");
    assert_eq!(scheduled.map(|c| &c["status"]), Some(&json!("True")), "{pod}");
    let mut to_missing = binding("node-1");
    to_missing["metadata"]["name"] = json!("nope");
    let missing = sim.raw("POST", &format!("{pods}/nope/binding"), Some(to_missing)).await;
    assert_eq!((missing.code, missing.body["message"].as_str()), (404, Some("pods \"nope\" not found")));
    sim.wait_until("the bound pod runs", Duration::from_secs(10), |s| {
        s.get("v1", "pods", Some("default"), "bp")["status"]["phase"] == "Running"
    })
    .await;
}
