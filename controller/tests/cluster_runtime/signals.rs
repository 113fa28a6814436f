//! Signal intake and scope: eviction signals from the webhook queue are recorded on the EAS;
//! with `--surge-trigger=drain` an eviction on a node that is not draining (descheduler, VPA)
//! writes nothing to the workload; `any` surges; an out-of-scope namespace is left alone; an
//! HPA-managed Deployment gets its minimum raised and restored.

use std::time::Duration;

use eviction_autoscaler_shared::admission::{AdmissionHandler as _, Signal};
use eviction_autoscaler_shared::config::SettingsArgs;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::common::{
    apiserver, config, deployment_writes, drain_fixture, eventually, settings, start_controller,
};

const WAIT: Duration = Duration::from_secs(30);

fn signal() -> Signal {
    Signal::new("apps", "web-5d9c7-x1", jiff::Timestamp::now(), "descheduler")
}

#[tokio::test]
async fn eviction_off_a_draining_node_is_recorded_but_never_surges_with_the_drain_trigger() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("the first pass done (EAS status written)", WAIT, || async {
        eas.get("web").await.ok()?.status
    })
    .await;

    assert!(running.admissions.eviction(signal()));
    let recorded = eventually("signal recorded on the EAS", WAIT, || async {
        eas.get("web").await.ok()?.spec.last_eviction.filter(|e| e.pod_name == "web-5d9c7-x1")
    })
    .await;
    assert!(recorded.eviction_time.is_some());
    running.signals_settled(1).await;
    assert_eq!(deployment_writes(&apiserver), [], "descheduler-style eviction: no write");
    assert_eq!(
        running.metric("eviction_autoscaler_blocked_evictions_total"),
        1.0,
        "{}",
        running.metrics_text()
    );
    running.stop().await;
}

#[tokio::test]
async fn any_trigger_surges_on_an_eviction_off_a_draining_node() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    let client = apiserver.client().await;
    let config = settings(SettingsArgs { surge_trigger: Some("any".into()), ..SettingsArgs::default() });
    let running = start_controller(&apiserver, config).await;
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
    let apiserver = apiserver().await;
    let fixture = drain_fixture(1, "", true, true).replace(
        "metadata: {name: apps}",
        "metadata: {name: apps, annotations: {eviction-autoscaler.azure.com/enable: \"false\"}}",
    );
    apiserver.create(&fixture).await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    running.synced().await;
    assert!(running.admissions.eviction(signal()));
    running.signals_settled(1).await;
    assert_eq!(deployment_writes(&apiserver), []);
    let eas: Api<EvictionAutoScaler> = Api::namespaced(apiserver.client().await, "apps");
    assert!(eas.get_opt("web").await.expect("get").is_none(), "no EAS out of scope");
    running.stop().await;
}

#[tokio::test]
async fn hpa_minimum_is_raised_then_restored() {
    let apiserver = apiserver().await;
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
    apiserver.create(&fixture).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
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
    // The HPA is written first, then the Deployment (its autoscaler acts on its own schedule):
    // read right after the HPA, the Deployment may not be scaled yet.
    eventually("Deployment scaled at once, not on the HPA's schedule", Duration::from_secs(2), || async {
        let d = deployments.get("web").await.ok()?;
        (d.spec.and_then(|s| s.replicas) == Some(2)).then_some(())
    })
    .await;

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
    let apiserver = apiserver().await;
    let fixture = drain_fixture(1, "", true, true).replace(
        "{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9c7,",
        "{apiVersion: apps/v1, kind: StatefulSet, name: db,",
    );
    apiserver.create(&fixture).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    running.synced().await;
    assert!(running.admissions.eviction(signal()));
    assert!(
        running
            .admissions
            .eviction(Signal { at: jiff::Timestamp::now() + jiff::SignedDuration::from_secs(5), ..signal() })
    );
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "apps");
    eventually("both signals handled", WAIT, || async {
        (running.metric(r#"eviction_autoscaler_evictions_seen_total{source="webhook"}"#) == 2.0).then_some(())
    })
    .await;
    let skipped: Vec<_> = events
        .list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("SurgeSkipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "reported once: {skipped:?}");
    assert!(skipped[0].note.as_deref().unwrap_or_default().contains("StatefulSet db"));
    assert_eq!(deployment_writes(&apiserver), []);
    running.stop().await;
}

#[tokio::test]
async fn eas_last_eviction_is_written_at_most_once_per_second() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), "apps");
    eventually("EAS created", WAIT, || async { eas.get("web").await.ok() }).await;
    let mark = apiserver.requests_under_test().len();
    let start = jiff::Timestamp::now();
    for i in 0..5 {
        let at = start + jiff::SignedDuration::from_secs(i); // distinct signals, not duplicates
        assert!(running.admissions.eviction(Signal { at, ..signal() }));
    }
    eventually("all five signals handled", WAIT, || async {
        (running.metric(r#"eviction_autoscaler_evictions_seen_total{source="webhook"}"#) == 5.0).then_some(())
    })
    .await;
    let spec_writes = apiserver.requests_under_test()[mark..]
        .iter()
        .filter(|r| r.resource == "evictionautoscalers" && r.verb == "patch" && r.subresource.is_empty())
        .count();
    assert_eq!(spec_writes, 1, "a burst of signals makes one EAS write");
    running.stop().await;
}

#[tokio::test]
async fn deleting_a_surged_deployment_restores_its_hpa_minimum() {
    let apiserver = apiserver().await;
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
    apiserver.create(&fixture).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    running.synced().await;
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
