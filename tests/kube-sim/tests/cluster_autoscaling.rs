//! HPA (no metrics: replicas kept within [min, max]) and KEDA (ScaledObject → keda-hpa-<name>,
//! direct edits reverted) controllers.

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};

fn replicas(sim: &Sim) -> i64 {
    sim.get("apps/v1", "deployments", Some("default"), "web")["spec"]["replicas"].as_i64().unwrap_or(-1)
}

const HPA: &str = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  namespace: default\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n  minReplicas: 2\n  maxReplicas: 4\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hpa_keeps_replicas_within_bounds() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 1)).await;
    sim.apply("hpa.yaml", HPA).await;
    sim.wait_until("scaled up to minReplicas", Duration::from_secs(10), |s| replicas(s) == 2).await;
    sim.wait_ready("default", "web", 2).await;
    sim.kubectl(&["scale", "deployment", "web", "--replicas=7"]).await.ok();
    sim.wait_until("scaled down to maxReplicas", Duration::from_secs(10), |s| replicas(s) == 4).await;
    sim.wait_ready("default", "web", 4).await;
    let hpa = sim.get("autoscaling/v2", "horizontalpodautoscalers", Some("default"), "web");
    assert_eq!(hpa["status"]["desiredReplicas"], 4);
    assert!(hpa["status"]["lastScaleTime"].is_string());
}

const SCALED_OBJECT_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: scaledobjects.keda.sh\nspec:\n  group: keda.sh\n  names:\n    kind: ScaledObject\n    listKind: ScaledObjectList\n    plural: scaledobjects\n    singular: scaledobject\n    shortNames: [so]\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    subresources:\n      status: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";

const SCALED_OBJECT: &str = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: web\n  namespace: default\nspec:\n  scaleTargetRef:\n    name: web\n  minReplicaCount: 0\n  maxReplicaCount: 5\n  triggers:\n  - type: cron\n    metadata:\n      value: \"1\"\n";

fn keda_hpa(sim: &Sim) -> Option<serde_json::Value> {
    sim.exists("autoscaling/v2", "horizontalpodautoscalers", Some("default"), "keda-hpa-web")
        .then(|| sim.get("autoscaling/v2", "horizontalpodautoscalers", Some("default"), "keda-hpa-web"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keda_creates_its_hpa_and_reverts_direct_edits() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 1)).await;
    sim.apply("crd.yaml", SCALED_OBJECT_CRD).await;
    sim.apply("so.yaml", SCALED_OBJECT).await;
    sim.wait_until("keda-hpa-web exists", Duration::from_secs(10), |s| keda_hpa(s).is_some()).await;
    let hpa = keda_hpa(&sim).expect("hpa");
    assert_eq!(hpa["spec"]["minReplicas"], 1, "max(minReplicaCount, 1)");
    assert_eq!(hpa["spec"]["maxReplicas"], 5);
    assert_eq!(hpa["metadata"]["ownerReferences"][0]["kind"], "ScaledObject");
    assert_eq!(hpa["metadata"]["labels"]["app.kubernetes.io/managed-by"], "keda-operator");

    sim.kubectl(&["patch", "hpa", "keda-hpa-web", "--type=merge", "-p", r#"{"spec":{"maxReplicas":9}}"#])
        .await
        .ok();
    sim.wait_until("the edit is reverted", Duration::from_secs(10), |s| {
        keda_hpa(s).is_some_and(|h| h["spec"]["maxReplicas"] == 5)
    })
    .await;
    sim.kubectl(&["delete", "hpa", "keda-hpa-web"]).await.ok();
    sim.wait_until("the HPA is recreated", Duration::from_secs(10), |s| keda_hpa(s).is_some()).await;

    sim.kubectl(&["delete", "scaledobject", "web"]).await.ok();
    sim.wait_until("the owned HPA is collected", Duration::from_secs(10), |s| keda_hpa(s).is_none()).await;
}
