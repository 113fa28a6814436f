//! Signal intake and scope against kube-sim: eviction signals from the webhook queue are
//! recorded on the EAS; with `--surge-trigger=drain` an eviction on a node that is not
//! draining (descheduler, VPA) writes nothing to the workload; `any` surges; an out-of-scope
//! namespace is left alone; an HPA-managed Deployment gets its minimum raised and restored.

mod common;

use std::time::Duration;

use common::{Sim, config, drain_fixture, eventually, start_controller};
use eviction_autoscaler_shared::admission::{AdmissionHandler as _, Signal};
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn deployment_writes(sim: &Sim) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.resource == "deployments" && matches!(r.verb.as_str(), "patch" | "update"))
        .count()
}

fn signal() -> Signal {
    Signal {
        namespace: "apps".into(),
        pod: "web-5d9c7-x1".into(),
        at: jiff::Timestamp::now(),
        user: "descheduler".into(),
    }
}

#[tokio::test]
async fn eviction_off_a_draining_node_is_recorded_but_never_surges_with_the_drain_trigger() {
    let sim = Sim::start().await;
    sim.seed(&drain_fixture(1, "", false, true)).await;
    let client = sim.client().await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("EAS created for the PDB", WAIT, || async { eas.get("web").await.ok() }).await;

    assert!(running.admissions.eviction(signal()));
    let recorded = eventually("signal recorded on the EAS", WAIT, || async {
        eas.get("web").await.ok()?.spec.last_eviction.filter(|e| e.pod_name == "web-5d9c7-x1")
    })
    .await;
    assert!(recorded.eviction_time.is_some());
    // Let the holder evaluate the signal, then check nothing was written to the workload.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(deployment_writes(&sim), 0, "descheduler-style eviction: no write");
    running.stop().await;
}

#[tokio::test]
async fn any_trigger_surges_on_an_eviction_off_a_draining_node() {
    let sim = Sim::start().await;
    sim.seed(&drain_fixture(1, "", false, true)).await;
    let client = sim.client().await;
    let args = SettingsArgs {
        enabled_by_default: Some("true".into()),
        leader_elect: Some("false".into()),
        surge_trigger: Some("any".into()),
        ..Default::default()
    };
    let config = std::sync::Arc::new(Config::resolve(&args, None).expect("config"));
    let running = start_controller(&sim, config).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("EAS created", WAIT, || async { eas.get("web").await.ok() }).await;
    assert!(running.admissions.eviction(signal()));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("surged to 2", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(2))
    })
    .await;
    let metrics = running.metrics_text();
    for line in [
        "eviction_autoscaler_evictions_seen_total{source=\"webhook\"} 1",
        "eviction_autoscaler_blocked_evictions_total 1",
        "eviction_autoscaler_scale_actions_total{action=\"surge\"} 1",
        "eviction_autoscaler_signal_to_scale_latency_seconds_count 1",
        "eviction_autoscaler_writes_total{kind=\"deployments\",outcome=\"ok\"} 1",
    ] {
        assert!(metrics.contains(line), "missing {line} in\n{metrics}");
    }
    running.stop().await;
}

#[tokio::test]
async fn a_namespace_out_of_scope_is_left_alone() {
    let sim = Sim::start().await;
    let fixture = drain_fixture(1, "", true, true).replace(
        "metadata: {name: apps}",
        "metadata: {name: apps, annotations: {eviction-autoscaler.azure.com/enable: \"false\"}}",
    );
    sim.seed(&fixture).await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    eventually("caches synced", WAIT, || async { running.readiness.caches_synced().then_some(()) }).await;
    assert!(running.admissions.eviction(signal()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(deployment_writes(&sim), 0);
    let eas: Api<EvictionAutoScaler> = Api::namespaced(sim.client().await, "apps");
    assert!(eas.get_opt("web").await.expect("get").is_none(), "no EAS out of scope");
    running.stop().await;
}

#[tokio::test]
async fn hpa_minimum_is_raised_then_restored() {
    let sim = Sim::start().await;
    let mut fixture = drain_fixture(1, "", true, true);
    fixture.push_str(
        r#"
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: apps}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
"#,
    );
    sim.seed(&fixture).await;
    let client = sim.client().await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "apps");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let raised = eventually("HPA min raised to 2", WAIT, || async {
        hpas.get("web").await.ok().filter(|h| h.spec.as_ref().and_then(|s| s.min_replicas) == Some(2))
    })
    .await;
    let marks = raised.metadata.annotations.unwrap_or_default();
    assert_eq!(marks.get("evictionSurgeReplicas").map(String::as_str), Some("2"));
    assert_eq!(
        marks.get("eviction-autoscaler.azure.com/original-min-replicas").map(String::as_str),
        Some("1")
    );
    let d = deployments.get("web").await.expect("deployment");
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(2), "Deployment scaled at once");

    let params = PatchParams::default();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch("n1", &params, &Patch::Merge(json!({"spec": {"unschedulable": false}})))
        .await
        .expect("uncordon");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "apps");
    pods.delete("web-5d9c7-x1", &Default::default()).await.expect("pod gone");
    eventually("HPA min restored, annotations gone", WAIT, || async {
        hpas.get("web").await.ok().filter(|h| {
            h.spec.as_ref().and_then(|s| s.min_replicas) == Some(1)
                && !h.metadata.annotations.clone().unwrap_or_default().contains_key("evictionSurgeReplicas")
        })
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn a_statefulset_pod_eviction_is_skipped_with_a_reason_once() {
    let sim = Sim::start().await;
    let fixture = drain_fixture(1, "", true, true).replace(
        "{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9c7,",
        "{apiVersion: apps/v1, kind: StatefulSet, name: db,",
    );
    sim.seed(&fixture).await;
    let client = sim.client().await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    eventually("caches synced", WAIT, || async { running.readiness.caches_synced().then_some(()) }).await;
    assert!(running.admissions.eviction(signal()));
    assert!(
        running
            .admissions
            .eviction(Signal { at: jiff::Timestamp::now() + jiff::SignedDuration::from_secs(5), ..signal() })
    );
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "apps");
    let skipped = eventually("SurgeSkipped Event on the pod", WAIT, || async {
        let list = events.list(&Default::default()).await.ok()?;
        let found: Vec<_> =
            list.items.into_iter().filter(|e| e.reason.as_deref() == Some("SurgeSkipped")).collect();
        (!found.is_empty()).then_some(found)
    })
    .await;
    assert_eq!(skipped.len(), 1, "reported once");
    assert!(skipped[0].note.as_deref().unwrap_or_default().contains("StatefulSet db"));
    assert_eq!(deployment_writes(&sim), 0);
    running.stop().await;
}

#[tokio::test]
async fn eas_last_eviction_is_written_at_most_once_per_second() {
    let sim = Sim::start().await;
    sim.seed(&drain_fixture(1, "", false, true)).await;
    let client = sim.client().await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("EAS created", WAIT, || async { eas.get("web").await.ok() }).await;
    let mark = sim.server.cluster().request_log().last_seq();
    let start = jiff::Timestamp::now();
    for i in 0..5 {
        let at = start + jiff::SignedDuration::from_secs(i); // distinct signals, not duplicates
        assert!(running.admissions.eviction(Signal { at, ..signal() }));
    }
    eventually("first signal recorded", WAIT, || async { eas.get("web").await.ok()?.spec.last_eviction })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spec_writes = sim
        .server
        .cluster()
        .request_log()
        .records_since(mark)
        .into_iter()
        .filter(|r| r.resource == "evictionautoscalers" && r.verb == "patch" && r.subresource.is_empty())
        .count();
    assert_eq!(spec_writes, 1, "a burst of signals makes one EAS write");
    running.stop().await;
}

#[tokio::test]
async fn deleting_a_surged_deployment_restores_its_hpa_minimum() {
    let sim = Sim::start().await;
    let mut fixture = drain_fixture(2, "", true, true);
    fixture.push_str(
        r#"
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: apps
  annotations: {evictionSurgeReplicas: "2", eviction-autoscaler.azure.com/original-min-replicas: "1"}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 3
"#,
    );
    sim.seed(&fixture).await;
    let client = sim.client().await;
    let running = start_controller(&sim, config("1s", "1h")).await;
    eventually("caches synced", WAIT, || async { running.readiness.caches_synced().then_some(()) }).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    deployments.delete("web", &Default::default()).await.expect("delete");
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "apps");
    eventually("HPA minimum restored without its Deployment", WAIT, || async {
        hpas.get("web").await.ok().filter(|h| {
            h.spec.as_ref().and_then(|s| s.min_replicas) == Some(1)
                && !h.metadata.annotations.clone().unwrap_or_default().contains_key("evictionSurgeReplicas")
        })
    })
    .await;
    running.stop().await;
}
