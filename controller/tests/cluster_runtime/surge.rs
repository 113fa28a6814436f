//! Surge write with its annotations, resume after a restart, revert, Go leftovers adopted, no
//! unselective Pod reads, an idle cluster left alone, max-hold, and a drain served before a
//! slow first pass.

use std::time::Duration;

use e2e_support::apiserver::ApiServer;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::common::{apiserver, config, deployment_writes, drain_fixture, eventually, start_controller};

const WAIT: Duration = Duration::from_secs(30);

fn surge_annotations(d: &Deployment) -> (Option<String>, Option<String>) {
    let a = d.metadata.annotations.clone().unwrap_or_default();
    (
        a.get("evictionSurgeReplicas").cloned(),
        a.get("eviction-autoscaler.azure.com/original-min-replicas").cloned(),
    )
}

fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

async fn event_reasons(client: &kube::Client) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), "apps");
    events
        .list(&ListParams::default())
        .await
        .map(|l| l.items.into_iter().filter_map(|e| e.reason).collect())
        .unwrap_or_default()
}

/// Waits for an Event with `reason` in `apps`: an Event is posted after the write it reports,
/// so it may land a moment after the change a test saw.
async fn wait_event(client: &kube::Client, reason: &str) {
    eventually(&format!("a {reason} Event"), WAIT, || async {
        event_reasons(client).await.iter().any(|r| r == reason).then_some(())
    })
    .await;
}

/// The drain is over: node uncordoned, the pod gone, the budget open again.
async fn finish_drain(apiserver: &ApiServer) {
    let client = apiserver.client().await;
    let params = PatchParams::default();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch("n1", &params, &Patch::Merge(json!({"spec": {"unschedulable": false}})))
        .await
        .expect("uncordon");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    pdbs.patch_status("web", &params, &Patch::Merge(json!({"status": {"disruptionsAllowed": 1}})))
        .await
        .expect("budget opens");
    let pods: Api<Pod> = Api::namespaced(client, "apps");
    pods.delete("web-5d9c7-x1", &Default::default()).await.expect("pod evicted");
}

#[tokio::test]
async fn blocked_drain_surges_then_reverts_after_the_drain() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    let client = apiserver.client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let running = start_controller(&apiserver, config("1s", "1h")).await;

    let surged = eventually("the Deployment surged to 2 with its annotations", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 2)
    })
    .await;
    assert_eq!(surge_annotations(&surged), (Some("2".into()), Some("1".into())), "written with the replicas");
    assert!(running.readiness.caches_synced());

    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    let status = eventually("EAS status shows the surge", WAIT, || async {
        eas.get("web").await.ok().and_then(|e| e.status).filter(|s| s.surge_replicas == Some(1))
    })
    .await;
    assert_eq!(status.min_replicas, Some(1));
    wait_event(&client, "SurgeStarted").await;

    finish_drain(&apiserver).await;
    let reverted = eventually("back to 1 replica after the drain and the cooldown", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 1)
    })
    .await;
    assert_eq!(surge_annotations(&reverted), (None, None), "annotations gone with the revert");
    wait_event(&client, "SurgeReverted").await;
    running.stop().await;

    let requests = apiserver.requests_under_test();
    // Pods are read only by name or with a selector; never listed or watched cluster-wide bare.
    for r in &requests {
        if r.resource == "pods" && (r.verb == "list" || r.verb == "watch") {
            assert!(
                r.query.contains("fieldSelector") || r.query.contains("labelSelector"),
                "unselective: {r:?}"
            );
        }
    }
    let writes: Vec<u16> = deployment_writes(&apiserver).iter().map(|r| r.code).collect();
    assert_eq!(writes, [200, 200], "one surge write and one revert write, each accepted at once");
    // The surge is decided from the caches: between the draining node's pods listed and the
    // surge write, nothing is read — no PDB, no Deployment, no pods by label (its write is
    // guarded by the cached resourceVersion instead: `write_errors`' 409 test).
    let surge = requests
        .iter()
        .position(|r| r.resource == "deployments" && r.verb == "patch")
        .expect("the surge write");
    let node_listed = requests[..surge]
        .iter()
        .rposition(|r| r.resource == "pods" && r.verb == "list" && r.query.contains("spec.nodeName"))
        .expect("the draining node's pods listed before the surge");
    let reads: Vec<_> = requests[node_listed + 1..surge]
        .iter()
        .filter(|r| matches!(r.verb.as_str(), "get" | "list"))
        .map(|r| format!("{} {} {}?{}", r.verb, r.resource, r.name, r.query))
        .collect();
    assert!(reads.is_empty(), "read between the node's pods and the surge write: {reads:?}");
}

#[tokio::test]
async fn a_restarted_controller_keeps_the_surge_while_pods_remain_on_the_draining_node() {
    let apiserver = apiserver().await;
    // As a killed process left it: surged to 2, baseline 1, the drain still on.
    let marks = r#""evictionSurgeReplicas": "2", "eviction-autoscaler.azure.com/original-min-replicas": "1""#;
    apiserver.create(&drain_fixture(2, marks, true, true)).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;

    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    let ready = eventually("EAS says the surge is on", WAIT, || async {
        let status = eas.get("web").await.ok()?.status?;
        status.conditions.into_iter().find(|c| c.type_ == "Ready" && c.reason == "Surged")
    })
    .await;
    assert!(ready.message.contains("surged from 1 to 2"), "{}", ready.message);
    // Well past the cooldown: still surged, because a pod still sits on the draining node.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let d = deployments.get("web").await.expect("deployment");
    assert_eq!((replicas(&d), surge_annotations(&d).0), (2, Some("2".into())));
    assert!(deployment_writes(&apiserver).is_empty(), "the resumed surge is neither rewritten nor reverted");

    finish_drain(&apiserver).await;
    eventually("reverted once the node is empty", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 1 && surge_annotations(d).0.is_none())
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn go_project_leftovers_end_in_the_clean_state() {
    let apiserver = apiserver().await;
    let marks = r#""evictionSurgeReplicas": "3", "eviction-autoscaler.azure.com/original-min-replicas": "2""#;
    let mut fixture =
        drain_fixture(3, marks, false, false).replace("disruptionsAllowed: 0", "disruptionsAllowed: 1");
    // The Go floor feature pinned the PDB; its EAS carries both finalizers.
    fixture = fixture.replace(
        "metadata: {name: web, namespace: apps}\nspec:\n  minAvailable: 1",
        "metadata:\n  name: web\n  namespace: apps\n  annotations:\n    \
         eviction-autoscaler.azure.com/original-pdb-spec: '{\"maxUnavailable\":1}'\n    \
         eviction-autoscaler.azure.com/pinned-floor: \"3\"\nspec:\n  minAvailable: 3",
    );
    fixture.push_str(
        r#"
---
apiVersion: eviction-autoscaler.azure.com/v1
kind: EvictionAutoScaler
metadata:
  name: web
  namespace: apps
  annotations: {ownedBy: EvictionAutoScaler, target: web}
  finalizers: [eviction-autoscaler.azure.com/surge-revert, eviction-autoscaler.azure.com/pdb-floor]
spec: {targetName: web, targetKind: deployment}
"#,
    );
    apiserver.create(&fixture).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("the Go surge is reverted to its recorded baseline", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 2 && surge_annotations(d) == (None, None))
    })
    .await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("the Go finalizers are released", WAIT, || async {
        eas.get("web").await.ok().filter(|e| e.metadata.finalizers.clone().unwrap_or_default().is_empty())
    })
    .await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    let pdb = eventually("the pinned PDB is restored", WAIT, || async {
        pdbs.get("web").await.ok().filter(|p| {
            !p.metadata
                .annotations
                .clone()
                .unwrap_or_default()
                .contains_key("eviction-autoscaler.azure.com/pinned-floor")
        })
    })
    .await;
    let spec = pdb.spec.expect("spec");
    assert_eq!(spec.min_available, None);
    assert_eq!(spec.max_unavailable, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1)));
    running.stop().await;
}

#[tokio::test]
async fn an_idle_cluster_sees_only_watch_traffic() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("first pass done (EAS status written)", WAIT, || async { eas.get("web").await.ok()?.status })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mark = apiserver.requests_under_test().len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let busy: Vec<String> = apiserver.requests_under_test()[mark..]
        .iter()
        .filter(|r| r.verb != "watch")
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect();
    assert!(busy.is_empty(), "idle traffic besides watches: {busy:?}");
    running.stop().await;
}

#[tokio::test]
async fn a_forgotten_cordon_expires_the_surge_once() {
    let apiserver = apiserver().await;
    // Cordoned, never drained: the pod stays on the node.
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    let client = apiserver.client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let running = start_controller(&apiserver, config("1s", "3s")).await;
    eventually("surged", WAIT, || async { deployments.get("web").await.ok().filter(|d| replicas(d) == 2) })
        .await;
    eventually("reverted by max-hold", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 1 && surge_annotations(d) == (None, None))
    })
    .await;
    wait_event(&client, "SurgeExpired").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        deployment_writes(&apiserver).len(),
        2,
        "the pods left on the forgotten cordon do not surge it again"
    );
    running.stop().await;
}

/// `n` Deployments in namespace `bulk`, each with its own PDB (so the first pass creates an
/// EvictionAutoScaler for each: a write under the client rate limit).
fn bulk_fixture(n: usize) -> String {
    let mut yaml = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: bulk}\n");
    for i in 0..n {
        yaml.push_str(&format!(
            r#"---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app-{i}, namespace: bulk}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: app-{i}}}}}
  template:
    metadata: {{labels: {{app: app-{i}}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: app-{i}, namespace: bulk}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: app-{i}}}}}
"#
        ));
    }
    yaml
}

#[tokio::test]
async fn a_drain_surges_while_the_first_pass_is_queued() {
    const BULK: usize = 200;
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    apiserver.create(&bulk_fixture(BULK)).await;
    let client = apiserver.client().await;
    // Two writes a second: the first pass's 200 EvictionAutoScalers take ~100 s.
    let mut slow = (*config("1s", "1h")).clone();
    (slow.kube_api_qps, slow.kube_api_burst) = (2.0, 1);
    let running = start_controller(&apiserver, std::sync::Arc::new(slow)).await;
    running.synced().await;

    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch("n1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .expect("cordon");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("the drained node's Deployment surged", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 2)
    })
    .await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "bulk");
    let created = eas.list(&ListParams::default()).await.expect("list EAS").items.len();
    assert!(
        created < BULK / 2,
        "the surge waited for the first pass: {created} of {BULK} EAS already created"
    );
    running.stop().await;
}
