//! Garbage collection through ownerReferences and namespace deletion (issue "kube-sim,
//! part 2": deleting a Deployment removes its ReplicaSets, pods and owned objects; a
//! namespaced object owned by a cluster-scoped object goes with it).

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, pdb_yaml, test_behaviour};
use serde_json::Value;

fn owner_ref(api_version: &str, kind: &str, object: &Value) -> String {
    format!(
        "  ownerReferences:\n  - apiVersion: {api_version}\n    kind: {kind}\n    name: {}\n    uid: {}\n    controller: true\n    blockOwnerDeletion: true\n",
        object["metadata"]["name"].as_str().unwrap_or_default(),
        object["metadata"]["uid"].as_str().unwrap_or_default()
    )
}

fn count(sim: &Sim, api_version: &str, resource: &str) -> usize {
    sim.list(api_version, resource, Some("default")).len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_deployment_removes_its_replica_sets_pods_and_owned_pdb() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 3)).await;
    sim.wait_ready("default", "web", 3).await;
    let deployment = sim.get("apps/v1", "deployments", Some("default"), "web");
    let pdb = pdb_yaml("web", "web", "minAvailable: 3").replace(
        "  namespace: default\n",
        &format!("  namespace: default\n{}", owner_ref("apps/v1", "Deployment", &deployment)),
    );
    sim.apply("pdb.yaml", &pdb).await;
    sim.wait_pdb("default", "web", 0).await;
    let rs = sim.list("apps/v1", "replicasets", Some("default"));
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["metadata"]["ownerReferences"][0]["uid"], deployment["metadata"]["uid"]);

    sim.kubectl(&["delete", "deployment", "web"]).await.ok();
    sim.wait_until("ReplicaSets, pods and the PDB are collected", Duration::from_secs(20), |s| {
        count(s, "apps/v1", "replicasets") == 0
            && count(s, "v1", "pods") == 0
            && count(s, "policy/v1", "poddisruptionbudgets") == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_waits_for_dependents_and_orphan_keeps_them() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &format!("{}---\n{}", deployment_yaml("web", 2), deployment_yaml("api", 2))).await;
    sim.wait_ready("default", "web", 2).await;
    sim.wait_ready("default", "api", 2).await;

    let run =
        sim.kubectl(&["delete", "deployment", "web", "--cascade=foreground", "--wait=false"]).await.ok();
    assert!(run.stdout.contains("deleted"), "{}", run.stdout);
    // The owner stays visible, marked, while its blocking dependents terminate (1.5 s grace).
    let marked = sim.get("apps/v1", "deployments", Some("default"), "web");
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{}", marked["metadata"]);
    assert_eq!(marked["metadata"]["finalizers"], serde_json::json!(["foregroundDeletion"]));
    sim.wait_until("foreground deletion completes", Duration::from_secs(20), |s| {
        !s.exists("apps/v1", "deployments", Some("default"), "web") && s.pods_of("default", "web").is_empty()
    })
    .await;

    let api_rs = sim.list("apps/v1", "replicasets", Some("default"));
    assert_eq!(api_rs.len(), 1);
    sim.kubectl(&["delete", "deployment", "api", "--cascade=orphan"]).await.ok();
    sim.wait_until("the orphaned ReplicaSet loses its owner", Duration::from_secs(20), |s| {
        !s.exists("apps/v1", "deployments", Some("default"), "api") && {
            let rs = s.list("apps/v1", "replicasets", Some("default"));
            // The real collector drops the field (no `ownerReferences: []`).
            rs.len() == 1 && rs[0]["metadata"].get("ownerReferences").is_none()
        }
    })
    .await;
    sim.wait_ready("default", "api", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_object_owned_by_a_crd_goes_with_it() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("crd.yaml", common::EVICTION_AUTOSCALER_CRD).await;
    let crd = sim.get(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        None,
        "evictionautoscalers.eviction-autoscaler.azure.com",
    );
    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned-by-crd\n  namespace: default\n{}data:\n  a: b\n",
        owner_ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd)
    );
    sim.apply("cm.yaml", &cm).await;
    // Still there while its owner lives.
    sim.apply(
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unrelated\n  namespace: default\n",
    )
    .await;
    assert!(sim.exists("v1", "configmaps", Some("default"), "owned-by-crd"));

    sim.kubectl(&["delete", "crd", "evictionautoscalers.eviction-autoscaler.azure.com"]).await.ok();
    sim.wait_until("the ConfigMap is collected", Duration::from_secs(20), |s| {
        !s.exists("v1", "configmaps", Some("default"), "owned-by-crd")
    })
    .await;
    assert!(sim.exists("v1", "configmaps", Some("default"), "unrelated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_deletes_its_content() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.kubectl(&["create", "namespace", "team"]).await.ok();
    sim.apply(
        "web.yaml",
        &deployment_yaml("web", 2).replace("  name: web\n", "  name: web\n  namespace: team\n"),
    )
    .await;
    sim.wait_ready("team", "web", 2).await;
    sim.kubectl(&["delete", "namespace", "team"]).await.ok();
    sim.wait_until("namespace content gone", Duration::from_secs(20), |s| {
        !s.exists("v1", "namespaces", None, "team") && s.list("v1", "pods", Some("team")).is_empty()
    })
    .await;
}
