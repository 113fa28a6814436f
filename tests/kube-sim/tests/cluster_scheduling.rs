//! Scheduler, node capacity, cordon taints and the DaemonSet controller (issue "kube-sim,
//! part 2": scale-up beyond capacity stays Pending/Unschedulable; uncordon lets pods bind).

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};
use serde_json::Value;

fn scheduled_condition(pod: &Value) -> Option<Value> {
    pod["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "PodScheduled").cloned()
}

fn has_cordon_taint(node: &Value) -> bool {
    node["spec"]["taints"].as_array().is_some_and(|t| {
        t.iter().any(|t| t["key"] == "node.kubernetes.io/unschedulable" && t["effect"] == "NoSchedule")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_beyond_capacity_stay_pending_until_uncordon_makes_room() {
    let behaviour = kube_sim::ClusterBehaviour { pods_per_node: 2, ..test_behaviour() };
    let sim = Sim::start_cluster(behaviour).await;
    let node = sim.get("v1", "nodes", None, "node-1");
    assert_eq!(node["status"]["allocatable"]["pods"], "2");
    assert!(
        node["status"]["conditions"][0]["type"] == "Ready"
            && node["status"]["conditions"][0]["status"] == "True"
    );

    let run = sim.kubectl(&["cordon", "node-2"]).await.ok();
    assert_eq!(run.stdout.trim(), "node/node-2 cordoned");
    sim.wait_until("the cordon taint", Duration::from_secs(10), |s| {
        has_cordon_taint(&s.get("v1", "nodes", None, "node-2"))
    })
    .await;

    sim.apply("web.yaml", &deployment_yaml("web", 4)).await;
    sim.wait_until("2 running on node-1 and 2 unschedulable", Duration::from_secs(30), |s| {
        let pods = s.pods_of("default", "web");
        let running =
            pods.iter().filter(|p| p["spec"]["nodeName"] == "node-1" && common::pod_ready(p)).count();
        let pending = pods
            .iter()
            .filter(|p| {
                p["spec"]["nodeName"].is_null()
                    && scheduled_condition(p).is_some_and(|c| c["reason"] == "Unschedulable")
            })
            .count();
        pods.len() == 4 && running == 2 && pending == 2
    })
    .await;
    let pending = sim
        .pods_of("default", "web")
        .into_iter()
        .find(|p| p["spec"]["nodeName"].is_null())
        .expect("pending pod");
    assert_eq!(pending["status"]["phase"], "Pending");
    let condition = scheduled_condition(&pending).expect("PodScheduled");
    assert_eq!(condition["status"], "False");
    assert_eq!(
        condition["message"],
        "0/2 nodes are available: 1 Too many pods, 1 node(s) were unschedulable. no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
    let run = sim
        .kubectl(&["get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}/{.status.replicas}"])
        .await
        .ok();
    assert_eq!(run.stdout, "2/4");

    let run = sim.kubectl(&["uncordon", "node-2"]).await.ok();
    assert_eq!(run.stdout.trim(), "node/node-2 uncordoned");
    sim.wait_ready("default", "web", 4).await;
    assert!(sim.pods_of("default", "web").iter().filter(|p| p["spec"]["nodeName"] == "node-2").count() == 2);
    sim.wait_until("the taint goes", Duration::from_secs(10), |s| {
        !has_cordon_taint(&s.get("v1", "nodes", None, "node-2"))
    })
    .await;
    // As on the real node lifecycle controller: the emptied list is dropped, not left as `[]`.
    let node = sim.get("v1", "nodes", None, "node-2");
    assert!(node["spec"].get("taints").is_none(), "{}", node["spec"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemonset_runs_one_pod_per_node_even_when_cordoned() {
    let sim = Sim::start_cluster(kube_sim::ClusterBehaviour { nodes: 3, ..test_behaviour() }).await;
    sim.kubectl(&["cordon", "node-3"]).await.ok();
    let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  namespace: kube-system\nspec:\n  selector:\n    matchLabels:\n      app: agent\n  template:\n    metadata:\n      labels:\n        app: agent\n    spec:\n      containers:\n      - name: agent\n        image: example/agent:1.0\n";
    sim.apply("ds.yaml", ds).await;
    sim.wait_ready("kube-system", "agent", 3).await;
    let mut nodes: Vec<String> = sim
        .pods_of("kube-system", "agent")
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or_default().to_string())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2", "node-3"]);
    sim.wait_until("DaemonSet status", Duration::from_secs(10), |s| {
        let ds = s.get("apps/v1", "daemonsets", Some("kube-system"), "agent");
        ds["status"]["desiredNumberScheduled"] == 3 && ds["status"]["numberReady"] == 3
    })
    .await;
}
