//! The default-PDB planner driven by the runtime: a Deployment no PDB covers gets one (owned
//! by the CRD), a user PDB retires it, it goes with its Deployment, it is re-created on a
//! back-off schedule, and an invalid annotation is reported once.

use std::sync::Arc;
use std::time::Duration;

use e2e_support::apiserver::ApiServer;
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams};

use crate::common::{Running, apiserver, eventually, settings, start_controller};

const WAIT: Duration = Duration::from_secs(30);

const DEPLOYMENT: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: apps}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

fn config() -> Arc<Config> {
    settings(SettingsArgs { pdb_create: Some("true".into()), ..SettingsArgs::default() })
}

/// DEPLOYMENT and the controller, once web's default PDB exists.
async fn with_web_pdb() -> (ApiServer, Running, Api<PodDisruptionBudget>) {
    let apiserver = apiserver().await;
    apiserver.create(DEPLOYMENT).await;
    let running = start_controller(&apiserver, config()).await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(apiserver.client().await, "apps");
    eventually("default PDB created", WAIT, || async {
        pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten()
    })
    .await;
    (apiserver, running, pdbs)
}

#[tokio::test]
async fn default_pdb_is_created_retired_by_a_user_pdb_and_removed_with_its_deployment() {
    let apiserver = apiserver().await;
    apiserver.create(DEPLOYMENT).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config()).await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    let created = eventually("default PDB created", WAIT, || async {
        pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten()
    })
    .await;
    let spec = created.spec.clone().expect("spec");
    assert_eq!(spec.min_available, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2)));
    let owner = created.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.first().map(|o| o.kind.as_str()), Some("CustomResourceDefinition"));

    eventually("default PDB for api too", WAIT, || async {
        pdbs.get_opt("api-eviction-autoscaler").await.ok().flatten()
    })
    .await;

    // A chart ships its own PDB for web: ours is retired (two PDBs would fail every eviction).
    let user_pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web-chart", "namespace": "apps"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .expect("pdb");
    pdbs.create(&Default::default(), &user_pdb).await.expect("user PDB");
    eventually("ours retired for the user's", WAIT, || async {
        pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten().is_none().then_some(())
    })
    .await;
    assert!(pdbs.get_opt("web-chart").await.expect("get").is_some(), "the user's PDB is never touched");

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    deployments.delete("api", &DeleteParams::default()).await.expect("delete Deployment");
    eventually("default PDB removed with its Deployment", WAIT, || async {
        pdbs.get_opt("api-eviction-autoscaler").await.ok().flatten().is_none().then_some(())
    })
    .await;
    running.stop().await;
}

/// An HPA scales only the Deployment of its own namespace: one elsewhere that names a
/// Deployment of the same name must not set this one's default `minAvailable`.
#[tokio::test]
async fn an_hpa_in_another_namespace_does_not_size_the_default_pdb() {
    let apiserver = apiserver().await;
    apiserver.create(DEPLOYMENT).await;
    apiserver
        .create(
            r#"
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: other}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
"#,
        )
        .await;
    let running = start_controller(&apiserver, config()).await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(apiserver.client().await, "apps");
    let created = eventually("default PDB created", WAIT, || async {
        pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten()
    })
    .await;
    let min_available = created.spec.and_then(|s| s.min_available);
    assert_eq!(
        min_available,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2)),
        "sized by apps/web's 2 replicas, not by other/web's HPA minimum"
    );
    running.stop().await;
}

/// The webhook hands a PDB over at admission, before the apiserver stores it. Ours, retired for
/// it, must not be re-created in between (two PDBs on a pod fail every eviction): it counts as
/// stored for a while, and when it never lands (refused after the webhooks) ours comes back.
#[tokio::test]
async fn a_pdb_retired_at_admission_is_not_recreated_before_the_admitted_pdb_lands() {
    use eviction_autoscaler_shared::admission::AdmissionHandler as _;
    let (apiserver, running, pdbs) = with_web_pdb().await;

    let user_pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web-chart", "namespace": "apps"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .expect("pdb");
    running.admissions.pdb_written(user_pdb); // admitted, and then never stored
    let ours = |method: &str| {
        apiserver
            .requests_under_test()
            .into_iter()
            .filter(|r| r.method == method && r.resource == "poddisruptionbudgets" && r.succeeded())
            .filter(|r| r.name == "web-eviction-autoscaler")
            .map(|r| r.timestamp.parse::<jiff::Timestamp>().expect("a timestamp"))
            .collect::<Vec<_>>()
    };
    let retired = eventually("ours retired", WAIT, || async { ours("DELETE").first().copied() }).await;
    let back = eventually("ours back once the admitted PDB did not land", WAIT, || async {
        pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten()?;
        ours("POST").into_iter().filter(|at| *at > retired).min()
    })
    .await;
    let gap = back.duration_since(retired);
    assert!(
        gap.as_secs_f64() >= 14.0,
        "re-created {gap:?} after the retirement, before the admitted PDB could land"
    );
    running.stop().await;
}

/// A default PDB that something deletes as soon as it appears (a garbage collector that sees
/// a stale owner, another tool) is created again on a back-off schedule, never in a loop.
#[tokio::test]
async fn a_default_pdb_deleted_as_soon_as_it_appears_is_created_again_on_a_back_off_schedule() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let (apiserver, running, pdbs) = with_web_pdb().await;

    // For 12 s, every web-eviction-autoscaler that appears is deleted at once.
    let config = watcher::Config::default().fields("metadata.name=web-eviction-autoscaler");
    let deleter = async {
        let mut stream = std::pin::pin!(watcher(pdbs.clone(), config).applied_objects());
        while let Some(Ok(_)) = stream.next().await {
            let _ = pdbs.delete("web-eviction-autoscaler", &DeleteParams::default()).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(12), deleter).await;

    // Every create of this PDB (not its EvictionAutoScaler, of the same name), the first
    // included: its audit time can trail the moment a read first sees the PDB, so the schedule
    // is measured from it, not from the test's clock.
    let creates: Vec<jiff::Timestamp> = apiserver
        .requests_under_test()
        .into_iter()
        .filter(|r| {
            let pdb = r.resource == "poddisruptionbudgets" && r.name == "web-eviction-autoscaler";
            pdb && r.verb == "create" && r.succeeded()
        })
        .map(|r| r.timestamp.parse().expect("a timestamp"))
        .collect();
    let gaps: Vec<f64> = creates.windows(2).map(|w| w[1].duration_since(w[0]).as_secs_f64()).collect();
    // Created again 1 s after the first, then 2 s, 4 s, 8 s after each: at ~1, 3 and 7 s.
    assert!((3..=5).contains(&creates.len()), "{} creates in 12 s, gaps {gaps:?}", creates.len());
    for (i, gap) in gaps.iter().enumerate() {
        let least = f64::from(1_u32 << i) * 0.9;
        assert!(*gap >= least, "a create {gap:.2} s after the one before (back-off {least} s): {gaps:?}");
    }
    running.stop().await;
}

/// An invalid annotation is one Warning Event per Deployment and distinct value: re-planning
/// (every event of the Deployment does, status updates included) repeats nothing,
/// and a new invalid value is a new Event.
#[tokio::test]
async fn an_invalid_annotation_is_reported_once_per_object_and_value() {
    use k8s_openapi::api::core::v1::Event;
    use kube::api::{Patch, PatchParams};
    let (apiserver, running, pdbs) = with_web_pdb().await;
    let client = apiserver.client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let events: Api<Event> = Api::namespaced(client.clone(), "apps");
    let invalid = || async {
        let list = events.list(&Default::default()).await.expect("events");
        let mut found: Vec<(String, i32)> = list
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("InvalidAnnotation"))
            .filter(|e| e.involved_object.name.as_deref() == Some("web"))
            .map(|e| (e.message.unwrap_or_default(), e.count.unwrap_or(1)))
            .collect();
        found.sort();
        found
    };
    let min_available = |pdb: PodDisruptionBudget| pdb.spec.and_then(|s| s.min_available);
    let int = k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int;
    let set = |patch: serde_json::Value| {
        let deployments = deployments.clone();
        async move {
            deployments.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.expect("patch")
        }
    };

    set(serde_json::json!({"metadata": {"annotations": {"eviction-autoscaler.azure.com/pdb-create": "maybe"}}})).await;
    eventually("the invalid value reported", WAIT, || async { (!invalid().await.is_empty()).then_some(()) })
        .await;
    // Re-planned three times (each scale re-sizes the PDB), the value still invalid.
    for replicas in [3, 4, 5] {
        set(serde_json::json!({"spec": {"replicas": replicas}})).await;
        eventually("the default PDB re-sized", WAIT, || async {
            let pdb = pdbs.get_opt("web-eviction-autoscaler").await.ok().flatten()?;
            (min_available(pdb) == Some(int(replicas))).then_some(())
        })
        .await;
    }
    let once = invalid().await;
    assert_eq!(once.len(), 1, "{once:?}");
    assert!(once[0].0.contains("\"maybe\""), "{once:?}");
    assert_eq!(once[0].1, 1, "reported at every re-plan: {once:?}");

    set(serde_json::json!({"metadata": {"annotations": {"eviction-autoscaler.azure.com/pdb-create": "perhaps"}}})).await;
    let twice = eventually("the new invalid value reported", WAIT, || async {
        let found = invalid().await;
        (found.len() == 2).then_some(found)
    })
    .await;
    assert!(twice.iter().all(|(_, count)| *count == 1), "{twice:?}");
    running.stop().await;
}
