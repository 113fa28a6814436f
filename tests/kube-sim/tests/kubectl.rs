//! The kubectl commands of the "Done when", run with the real kubectl.

mod common;

use common::{Sim, deployment_yaml, node_yaml, pod_yaml};
use serde_json::Value;

fn project_crd() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/base/crd.yaml");
    std::fs::read_to_string(path).unwrap_or_else(|_| common::EVICTION_AUTOSCALER_CRD.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_create_then_configure_then_unchanged() {
    let sim = Sim::start().await;
    let file = sim.write("deploy.yaml", &deployment_yaml("api", 3));
    let file = file.to_str().expect("utf-8 path");
    let run = sim.kubectl(&["apply", "-f", file]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/api created");
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "api");
    assert_eq!(deploy["spec"]["replicas"], 3);
    assert_eq!(deploy["metadata"]["generation"], 1);
    assert!(
        deploy["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string()
    );

    sim.write("deploy.yaml", &deployment_yaml("api", 4).replace("example/api:1.0", "example/api:2.0"));
    let run = sim.kubectl(&["apply", "-f", file]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/api configured");
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "api");
    assert_eq!(deploy["spec"]["replicas"], 4);
    assert_eq!(deploy["spec"]["template"]["spec"]["containers"][0]["image"], "example/api:2.0");
    assert_eq!(deploy["spec"]["template"]["spec"]["containers"].as_array().map(Vec::len), Some(1));
    assert_eq!(deploy["metadata"]["generation"], 2);

    let mark = sim.mark();
    let run = sim.kubectl(&["apply", "-f", file]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/api unchanged");
    assert!(sim.requests_since(mark).iter().all(|r| !r.is_write()), "an identical re-apply writes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_kustomize_directory() {
    let sim = Sim::start().await;
    sim.write("kust/deploy.yaml", &deployment_yaml("web", 2));
    sim.write(
        "kust/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n",
    );
    sim.write(
        "kust/kustomization.yaml",
        "resources:\n- deploy.yaml\n- cm.yaml\ncommonLabels:\n  team: core\n",
    );
    let dir = sim.dir.path().join("kust");
    let run = sim.kubectl(&["apply", "-k", dir.to_str().expect("utf-8")]).await.ok();
    assert!(run.stdout.contains("deployment.apps/web created"), "{}", run.stdout);
    assert!(run.stdout.contains("configmap/settings created"), "{}", run.stdout);
    let cm = sim.get("v1", "configmaps", Some("default"), "settings");
    assert_eq!(cm["metadata"]["labels"]["team"], "core");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_server_side_creates_then_merges() {
    let sim = Sim::start().await;
    let file = sim.write("deploy.yaml", &deployment_yaml("api", 3));
    let file = file.to_str().expect("utf-8");
    let run = sim.kubectl(&["apply", "--server-side", "-f", file]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/api serverside-applied");
    sim.write("deploy.yaml", &deployment_yaml("api", 5));
    sim.kubectl(&["apply", "--server-side", "-f", file]).await.ok();
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "api");
    assert_eq!(deploy["spec"]["replicas"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_outputs_json_yaml_wide_and_tables() {
    let sim = Sim::start().await;
    sim.seed(&format!(
        "{}---\n{}---\n{}",
        node_yaml("node-1"),
        pod_yaml("web-1", "web", "node-1"),
        pod_yaml("web-2", "web", "node-1")
    ))
    .await;

    let run = sim.kubectl(&["get", "pods", "-o", "json"]).await.ok();
    let list: Value = serde_json::from_str(&run.stdout).expect("json output");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["web-1", "web-2"]);

    let run = sim.kubectl(&["get", "pod", "web-1", "-o", "yaml"]).await.ok();
    assert!(run.stdout.contains("name: web-1") && run.stdout.contains("kind: Pod"), "{}", run.stdout);

    let run = sim.kubectl(&["get", "pods", "-o", "wide"]).await.ok();
    assert!(run.stdout.contains("web-1") && run.stdout.contains("web-2"), "{}", run.stdout);

    let run = sim
        .kubectl(&["get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName=node-1", "-o", "name"])
        .await
        .ok();
    assert_eq!(run.stdout.trim(), "pod/web-1\npod/web-2");

    let run = sim.kubectl(&["get", "nodes"]).await.ok();
    assert!(run.stdout.contains("node-1"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_file_and_get_pdb() {
    let sim = Sim::start().await;
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: api-pdb\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: api\n";
    let file = sim.write("pdb.yaml", pdb);
    let run = sim.kubectl(&["create", "-f", file.to_str().expect("utf-8")]).await.ok();
    assert_eq!(run.stdout.trim(), "poddisruptionbudget.policy/api-pdb created");
    let run = sim.kubectl(&["create", "-f", file.to_str().expect("utf-8")]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Error from server (AlreadyExists)"), "{}", run.stderr);
    let run = sim.kubectl(&["get", "pdb"]).await.ok();
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(header.starts_with("NAME"), "{}", run.stdout);
    assert!(run.stdout.contains("api-pdb"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_makes_evictionautoscalers_served() {
    let sim = Sim::start().await;
    let crd = sim.write("crd.yaml", &project_crd());
    sim.kubectl(&["apply", "-f", crd.to_str().expect("utf-8")]).await.ok();
    let run = sim.kubectl(&["get", "evictionautoscalers"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("No resources found in default namespace."), "{}", run.stderr);
    let cr = "apiVersion: eviction-autoscaler.azure.com/v1\nkind: EvictionAutoScaler\nmetadata:\n  name: web\nspec:\n  targetName: web\n  targetKind: deployment\n";
    let file = sim.write("cr.yaml", cr);
    let run = sim.kubectl(&["apply", "-f", file.to_str().expect("utf-8")]).await.ok();
    assert!(run.stdout.contains("created"), "{}", run.stdout);
    let run = sim.kubectl(&["get", "evictionautoscalers"]).await.ok();
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(header.starts_with("NAME") && header.contains("TARGET"), "printer columns: {}", run.stdout);
    assert!(run.stdout.contains("web"), "{}", run.stdout);
    let run = sim.kubectl(&["get", "eas", "web", "-o", "jsonpath={.spec.targetName}"]).await.ok();
    assert_eq!(run.stdout, "web", "short name");
    // Client-side apply of a changed custom resource sends a merge patch.
    sim.write("cr.yaml", &cr.replace("targetName: web", "targetName: api"));
    let run = sim.kubectl(&["apply", "-f", file.to_str().expect("utf-8")]).await.ok();
    assert!(run.stdout.contains("configured"), "{}", run.stdout);
    let stored = sim.get("eviction-autoscaler.azure.com/v1", "evictionautoscalers", Some("default"), "web");
    assert_eq!(stored["spec"]["targetName"], "api");
    assert_eq!(stored["metadata"]["generation"], 2);
    let run = sim.kubectl(&["delete", "-f", file.to_str().expect("utf-8")]).await.ok();
    assert!(run.stdout.contains("deleted"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_namespace_and_configmap_generators_send_protobuf() {
    let sim = Sim::start().await;
    let run = sim.kubectl(&["create", "namespace", "team-b"]).await.ok();
    assert_eq!(run.stdout.trim(), "namespace/team-b created");
    assert!(sim.exists("v1", "namespaces", None, "team-b"));
    let run = sim.kubectl(&["create", "configmap", "c2", "--from-literal=k=v"]).await.ok();
    assert_eq!(run.stdout.trim(), "configmap/c2 created");
    assert_eq!(sim.get("v1", "configmaps", Some("default"), "c2")["data"]["k"], "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_annotate_label() {
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    let run = sim.kubectl(&["scale", "deployment", "web", "--replicas=5"]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/web scaled");
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "web");
    assert_eq!(deploy["spec"]["replicas"], 5);
    assert_eq!(deploy["metadata"]["generation"], 2);

    let run = sim.kubectl(&["scale", "deployment", "web", "--replicas=3", "--current-replicas=5"]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/web scaled");
    let run = sim.kubectl(&["scale", "deployment", "web", "--replicas=3", "--current-replicas=7"]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Expected replicas to be 7, was 3"), "{}", run.stderr);

    let run = sim.kubectl(&["annotate", "deployment", "web", "team=core"]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/web annotated");
    let run = sim.kubectl(&["label", "deployment", "web", "tier=front"]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/web labeled");
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "web");
    assert_eq!(deploy["metadata"]["annotations"]["team"], "core");
    assert_eq!(deploy["metadata"]["labels"]["tier"], "front");
    let run = sim.kubectl(&["annotate", "deployment", "web", "team-"]).await.ok();
    assert_eq!(run.stdout.trim(), "deployment.apps/web annotated");
    assert!(
        sim.get("apps/v1", "deployments", Some("default"), "web")["metadata"]["annotations"]["team"]
            .is_null()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_uncordon_and_delete() {
    let sim = Sim::start().await;
    sim.seed(&format!("{}---\n{}", node_yaml("node-1"), pod_yaml("web-1", "web", "node-1"))).await;
    let run = sim.kubectl(&["cordon", "node-1"]).await.ok();
    assert_eq!(run.stdout.trim(), "node/node-1 cordoned");
    assert_eq!(sim.get("v1", "nodes", None, "node-1")["spec"]["unschedulable"], true);
    let run = sim.kubectl(&["cordon", "node-1"]).await.ok();
    assert_eq!(run.stdout.trim(), "node/node-1 already cordoned");
    let run = sim.kubectl(&["uncordon", "node-1"]).await.ok();
    assert_eq!(run.stdout.trim(), "node/node-1 uncordoned");
    assert!(sim.get("v1", "nodes", None, "node-1")["spec"]["unschedulable"].is_null());
    let run = sim.kubectl(&["delete", "pod", "web-1"]).await.ok();
    assert_eq!(run.stdout.trim(), "pod \"web-1\" deleted");
    assert!(!sim.exists("v1", "pods", Some("default"), "web-1"));
    let run = sim.kubectl(&["delete", "pod", "web-1"]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Error from server (NotFound): pods \"web-1\" not found"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_raw_paths() {
    let sim = Sim::start().await;
    let run = sim.kubectl(&["get", "--raw", "/metrics"]).await.ok();
    assert!(run.stdout.contains("apiserver_request_total"), "{}", run.stdout);
    let run = sim.kubectl(&["get", "--raw", "/api/v1/namespaces/default"]).await.ok();
    let ns: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(ns["kind"], "Namespace");
    let run = sim.kubectl(&["get", "--raw", "/api/v1/namespaces/nope"]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Error from server (NotFound)"), "{}", run.stderr);
    let run = sim.kubectl(&["version"]).await.ok();
    assert!(run.stdout.contains("Server Version: v1.32.0-kube-sim"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_recorder_events_show_in_kubectl_get_events() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    let reporter = Reporter { controller: "eviction-autoscaler".into(), instance: Some("replica-0".into()) };
    let recorder = Recorder::new(sim.client().await, reporter);
    let deploy = sim.get("apps/v1", "deployments", Some("default"), "web");
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some("web".into()),
        namespace: Some("default".into()),
        uid: deploy["metadata"]["uid"].as_str().map(String::from),
        ..Default::default()
    };
    let event = Event {
        type_: EventType::Normal,
        reason: "SurgeStarted".into(),
        note: Some("scaled web to 3 for an eviction".into()),
        action: "Scale".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.expect("first publish creates");
    recorder.publish(&event, &reference).await.expect("second publish patches the series");
    let run = sim.kubectl(&["get", "events"]).await.ok();
    assert!(run.stdout.contains("SurgeStarted"), "{}", run.stdout);
    assert!(run.stdout.contains("scaled web to 3 for an eviction"), "{}", run.stdout);
    let run = sim
        .kubectl(&["get", "events", "--field-selector", "involvedObject.name=web", "-o", "json"])
        .await
        .ok();
    let list: Value = serde_json::from_str(&run.stdout).expect("json");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "the recorder's second publish updated the same Event");
    assert_eq!(items[0]["reportingComponent"], "eviction-autoscaler");
    assert_eq!(items[0]["involvedObject"]["kind"], "Deployment");
}
