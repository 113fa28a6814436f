//! KEDA picked up from its CRD, and leader fail-over: the follower resumes a surge from the
//! annotations and reverts it; a demoted replica stops reporting its surges.

use std::sync::Arc;
use std::time::Duration;

use e2e_support::apiserver::ApiServer;
use e2e_support::autoscalers::KEDA_CRD;
use eviction_autoscaler_controller::keda::ScaledObject;
use eviction_autoscaler_controller::runtime::kube::leader::LeaseTimings;
use eviction_autoscaler_shared::config::{Config, SettingsArgs};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::common::{
    Running, apiserver, config, drain_fixture, eventually, settings, start_controller, start_custom,
};

const WAIT: Duration = Duration::from_secs(30);

const SCALED_OBJECT: &str = r#"
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web, namespace: apps}
spec:
  scaleTargetRef: {name: web}
  minReplicaCount: 1
  maxReplicaCount: 5
  triggers: [{type: cpu, metadata: {value: "50"}}]
"#;

async fn finish_drain(client: &kube::Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch("n1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"unschedulable": false}})))
        .await
        .expect("uncordon");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    pods.delete("web-5d9c7-x1", &Default::default()).await.expect("pod gone");
}

#[tokio::test]
async fn keda_installed_after_start_is_picked_up_and_its_minimum_raised() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", false, true)).await;
    let client = apiserver.client().await;
    let running = start_controller(&apiserver, config("1s", "1h")).await;
    running.synced().await;
    // KEDA arrives later, then the drain starts.
    apiserver.create(KEDA_CRD).await;
    apiserver.create(SCALED_OBJECT).await;
    // Its cache listed them once it watches.
    eventually("the controller watches ScaledObjects", WAIT, || async {
        let requests = apiserver.requests_under_test();
        requests.iter().any(|r| r.verb == "watch" && r.resource == "scaledobjects").then_some(())
    })
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch("n1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .expect("cordon");

    let scaled: Api<ScaledObject> = Api::namespaced(client.clone(), "apps");
    let raised = eventually("ScaledObject minReplicaCount raised to 2", WAIT, || async {
        scaled.get("web").await.ok().filter(|s| s.spec.min_replica_count == Some(2))
    })
    .await;
    let marks = raised.metadata.annotations.unwrap_or_default();
    assert_eq!(
        marks.get("eviction-autoscaler.azure.com/original-min-replicas").map(String::as_str),
        Some("1")
    );
    let raw: Api<kube::core::DynamicObject> =
        Api::namespaced_with(client.clone(), "apps", &kube::core::ApiResource::erase::<ScaledObject>(&()));
    let object = raw.get("web").await.expect("raw ScaledObject");
    assert!(object.data["spec"]["triggers"].is_array(), "fields we do not model survive our write");

    finish_drain(&client).await;
    eventually("ScaledObject minimum restored", WAIT, || async {
        scaled.get("web").await.ok().filter(|s| s.spec.min_replica_count == Some(1))
    })
    .await;
    running.stop().await;
}

fn elected() -> Arc<Config> {
    settings(SettingsArgs {
        cooldown: Some("1s".into()),
        leader_elect: Some("true".into()),
        lease_namespace: Some("default".into()),
        ..SettingsArgs::default()
    })
}

/// A replica with leader election on short Lease timings.
async fn start_elected(apiserver: &ApiServer, identity: &str) -> Running {
    let timings = LeaseTimings {
        duration: Duration::from_secs(3),
        renew_every: Duration::from_millis(500),
        retry_every: Duration::from_millis(200),
    };
    start_custom(apiserver, elected(), |c| c.with_identity(identity).with_lease_timings(timings)).await
}

/// Waits until `who` holds the Lease.
async fn wait_holder(leases: &Api<Lease>, who: &str) {
    eventually(&format!("{who} to hold the Lease"), WAIT, || async {
        let holder = leases.get("eviction-autoscaler").await.ok()?.spec?.holder_identity?;
        (holder == who).then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_follower_takes_over_a_surge_and_reverts_it() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    let client = apiserver.client().await;
    let first = start_elected(&apiserver, "first").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    wait_holder(&leases, "first").await;
    let second = start_elected(&apiserver, "second").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    eventually("surged by the holder", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(2))
    })
    .await;
    first.stop().await;
    wait_holder(&leases, "second").await;
    finish_drain(&client).await;
    eventually("the new holder reverts", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| {
            d.spec.as_ref().and_then(|s| s.replicas) == Some(1)
                && !d.metadata.annotations.clone().unwrap_or_default().contains_key("evictionSurgeReplicas")
        })
    })
    .await;
    second.stop().await;
}

/// A replica that loses the Lease stops reporting the surges it made: the holder reports them
/// now, and two replicas reporting one surge would keep `SurgeOverdue` firing and double
/// every alert.
#[tokio::test]
async fn a_demoted_replica_stops_reporting_its_surges() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    let client = apiserver.client().await;
    let first = start_elected(&apiserver, "first").await;
    let active = |running: &Running| {
        running
            .metrics_text()
            .lines()
            .find(|l| l.starts_with("eviction_autoscaler_active_surges "))
            .map(str::to_owned)
    };
    eventually("the holder reports its surge", WAIT, || async {
        (active(&first).as_deref() == Some("eviction_autoscaler_active_surges 1")).then_some(())
    })
    .await;

    // Another holder takes the Lease (as after a partition): `first` follows from its next round.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut lease = leases.get("eviction-autoscaler").await.expect("the Lease");
    let spec = lease.spec.get_or_insert_default();
    spec.holder_identity = Some("elsewhere".into());
    spec.lease_duration_seconds = Some(3600);
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(jiff::Timestamp::now()));
    leases.replace("eviction-autoscaler", &Default::default(), &lease).await.expect("take the Lease");
    eventually("the demoted replica reports no surge", WAIT, || async {
        let text = first.metrics_text();
        let leader = text.lines().any(|l| l == "eviction_autoscaler_leader 0");
        (leader && active(&first).as_deref() == Some("eviction_autoscaler_active_surges 0")).then_some(())
    })
    .await;
    first.stop().await;
}
