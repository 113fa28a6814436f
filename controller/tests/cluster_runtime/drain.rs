//! A drain on the whole control plane (its controllers and scheduler, kwok's kubelets with a
//! 1 s pod-ready delay, the disruption controller, the eviction subresource): cordon → surge →
//! the blocked eviction goes through → the emptied (still cordoned) node lets it revert; a
//! surge into a full cluster (nodes with room for one pod each) is reported.

use std::time::Duration;

use e2e_support::ClusterShape;
use eviction_autoscaler_shared::admission::AdmissionHandler as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::common::{cluster, config, eventually, start_controller};

const WAIT: Duration = Duration::from_secs(60);

const WORKLOAD: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: apps}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"#;

async fn allowed(pdbs: &Api<PodDisruptionBudget>) -> Option<i32> {
    pdbs.get("web").await.ok()?.status.map(|s| s.disruptions_allowed)
}

#[tokio::test]
async fn cordon_surges_the_eviction_passes_and_the_emptied_node_lets_it_revert() {
    let cluster = cluster(ClusterShape { nodes: 3, pods_per_node: 110 }).await;
    let client = cluster.client().await;
    cluster.create(WORKLOAD).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    let first = eventually("one Ready pod and a blocking budget", WAIT, || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
        let pod = list.items.into_iter().find(eviction_autoscaler_controller::displaced::is_displaceable)?;
        (allowed(&pdbs).await == Some(0)).then_some(pod)
    })
    .await;
    let node = first.spec.as_ref().and_then(|s| s.node_name.clone()).expect("scheduled");
    let pod_name = first.metadata.name.clone().expect("name");
    let running = start_controller(&cluster, config("1s", "1h")).await;
    running.synced().await;

    let nodes: Api<Node> = Api::all(client.clone());
    let params = PatchParams::default();
    nodes
        .patch(&node, &params, &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .expect("cordon");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("surged to 2 on the drain edge", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(2))
    })
    .await;
    eventually("the budget opens once the surge pod is Ready", WAIT, || async {
        (allowed(&pdbs).await == Some(1)).then_some(())
    })
    .await;
    // The webhook saw the eviction attempts (kubectl retries while the budget is closed).
    let signal = eviction_autoscaler_shared::admission::Signal::new(
        "apps",
        pod_name.clone(),
        jiff::Timestamp::now(),
        "kubectl",
    );
    assert!(running.admissions.eviction(signal));
    pods.evict(&pod_name, &EvictParams::default()).await.expect("the eviction is allowed now");
    eventually("the evicted pod is gone", WAIT, || async {
        pods.get_opt(&pod_name).await.ok()?.is_none().then_some(())
    })
    .await;

    // As after `kubectl drain`: the node stays cordoned, but nothing is left to evict on it.
    let reverted = eventually("back to 1 replica after the drain and the cooldown", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(1))
    })
    .await;
    let annotations = reverted.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key("evictionSurgeReplicas"), "annotations gone: {annotations:?}");
    // The signal is still within its window, but its pod is gone: no second surge.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // A write may lose a race with the deployment controller's status update (409, re-read).
    let writes = crate::common::deployment_writes(&cluster);
    let applied = writes.iter().filter(|r| r.succeeded()).count();
    assert!(writes.iter().all(|r| r.succeeded() || r.code == 409), "{writes:?}");
    assert_eq!(applied, 2, "one surge, one revert, no re-surge from a stale signal: {writes:?}");
    running.stop().await;
}

const FILLER: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: filler, namespace: apps}
spec:
  replicas: 1
  selector: {matchLabels: {app: filler}}
  template:
    metadata: {labels: {app: filler}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

#[tokio::test]
async fn a_surge_into_a_full_cluster_is_reported_and_reverted_after_uncordon() {
    // Two nodes with room for one pod each: `filler` takes one, `web` the other.
    let cluster = cluster(ClusterShape { nodes: 2, pods_per_node: 1 }).await;
    let client = cluster.client().await;
    cluster.create(WORKLOAD).await;
    cluster.create(FILLER).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    let web = eventually("web Ready and blocked", WAIT, || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
        let pod = list.items.into_iter().find(eviction_autoscaler_controller::displaced::is_displaceable)?;
        (allowed(&pdbs).await == Some(0)).then_some(pod)
    })
    .await;
    let node = web.spec.and_then(|s| s.node_name).expect("scheduled");
    let running = start_controller(&cluster, config("1s", "1h")).await;
    running.synced().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let params = PatchParams::default();
    nodes
        .patch(&node, &params, &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .expect("cordon");

    let eas: Api<eviction_autoscaler_shared::crd::EvictionAutoScaler> =
        Api::namespaced(client.clone(), "apps");
    eventually("EAS says the surge pod cannot be scheduled", WAIT, || async {
        let status = eas.get("web").await.ok()?.status?;
        status.conditions.into_iter().find(|c| c.type_ == "Degraded" && c.reason == "SurgeUnschedulable")
    })
    .await;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "apps");
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(reasons.contains(&"SurgeUnschedulable".to_owned()), "{reasons:?}");

    nodes
        .patch(&node, &params, &Patch::Merge(json!({"spec": {"unschedulable": false}})))
        .await
        .expect("uncordon");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("back to the baseline after uncordon and the cooldown", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(1))
    })
    .await;
    running.stop().await;
}
