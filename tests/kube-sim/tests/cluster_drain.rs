//! `kubectl drain` against budgets, with the real kubectl (issue "kube-sim, part 2", first
//! "Done when" item).

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, pdb_yaml, test_behaviour};
use serde_json::Value;

/// A Deployment whose pods use an emptyDir (so `--delete-emptydir-data` matters).
fn web_with_emptydir(replicas: u32) -> String {
    deployment_yaml("web", replicas).replace(
        "        image: example/web:1.0\n",
        "        image: example/web:1.0\n        volumeMounts:\n        - name: scratch\n          mountPath: /scratch\n      volumes:\n      - name: scratch\n        emptyDir: {}\n",
    )
}

const AGENT_DAEMONSET: &str = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  namespace: kube-system\nspec:\n  selector:\n    matchLabels:\n      app: agent\n  template:\n    metadata:\n      labels:\n        app: agent\n    spec:\n      containers:\n      - name: agent\n        image: example/agent:1.0\n";

fn node_of(pod: &Value) -> String {
    pod["spec"]["nodeName"].as_str().unwrap_or_default().to_string()
}

fn eviction_posts(sim: &Sim, mark: u64) -> usize {
    sim.requests_since(mark).iter().filter(|r| r.method == "POST" && r.path.ends_with("/eviction")).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_with_a_budget_that_allows_one_disruption_moves_the_pod() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("agent.yaml", AGENT_DAEMONSET).await;
    sim.apply("web.yaml", &web_with_emptydir(2)).await;
    sim.apply("pdb.yaml", &pdb_yaml("web-pdb", "web", "maxUnavailable: 1")).await;
    sim.wait_ready("default", "web", 2).await;
    sim.wait_ready("kube-system", "agent", 2).await;
    sim.wait_pdb("default", "web-pdb", 1).await;
    let victim = sim
        .pods_of("default", "web")
        .into_iter()
        .find(|p| node_of(p) == "node-1")
        .expect("a web pod on node-1");

    let run = sim
        .kubectl(&["drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"])
        .await;
    assert_eq!(run.code, 0, "drain failed\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    let victim_name = victim["metadata"]["name"].as_str().unwrap_or_default();
    assert!(run.stdout.contains(&format!("pod/{victim_name} evicted")), "{}", run.stdout);
    assert!(run.stdout.contains("node/node-1 drained"), "{}", run.stdout);
    assert!(run.stderr.contains("ignoring DaemonSet-managed Pods"), "{}", run.stderr);

    sim.wait_ready("default", "web", 2).await;
    let pods = sim.pods_of("default", "web");
    assert!(pods.iter().all(|p| node_of(p) == "node-2"), "the replacement runs elsewhere: {pods:?}");
    assert!(!sim.exists("v1", "pods", Some("default"), victim_name), "the evicted pod is gone");
    let node = sim.get("v1", "nodes", None, "node-1");
    assert_eq!(node["spec"]["unschedulable"], true);
    let taints = node["spec"]["taints"].as_array().cloned().unwrap_or_default();
    assert!(
        taints.iter().any(|t| t["key"] == "node.kubernetes.io/unschedulable" && t["effect"] == "NoSchedule"),
        "{taints:?}"
    );
    let agents = sim.pods_of("kube-system", "agent");
    assert_eq!(
        agents.iter().filter(|p| node_of(p) == "node-1").count(),
        1,
        "daemon pods stay on the drained node"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_blocked_by_min_available_retries_until_timeout_then_succeeds_after_scale_up() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &web_with_emptydir(1)).await;
    sim.apply("pdb.yaml", &pdb_yaml("web-pdb", "web", "minAvailable: 1")).await;
    sim.wait_ready("default", "web", 1).await;
    sim.wait_pdb("default", "web-pdb", 0).await;
    let pod = sim.pods_of("default", "web").remove(0);
    let (name, uid, node) = (pod["metadata"]["name"].clone(), pod["metadata"]["uid"].clone(), node_of(&pod));

    let mark = sim.mark();
    let started = std::time::Instant::now();
    let run = sim
        .kubectl(&["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"])
        .await;
    let took = started.elapsed();
    assert_ne!(
        run.code, 0,
        "drain must fail at the timeout\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("(will retry after 5s)"), "{}", run.stderr);
    assert!(run.stderr.contains("global timeout reached: 20s"), "{}", run.stderr);
    assert!(took >= Duration::from_secs(20), "kubectl gave up after {took:?}");
    let posts = eviction_posts(&sim, mark);
    assert!((4..=6).contains(&posts), "one eviction POST every 5 s over 20 s, got {posts}");
    let node_object = sim.get("v1", "nodes", None, &node);
    assert_eq!(node_object["spec"]["unschedulable"], true, "the node stays cordoned");
    let same = sim.get("v1", "pods", Some("default"), name.as_str().unwrap_or_default());
    assert_eq!(same["metadata"]["uid"], uid, "the pod is untouched");
    assert!(same["metadata"]["deletionTimestamp"].is_null());
    assert!(
        same["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["type"] != "DisruptionTarget"))
    );
    let pdb = sim.get("policy/v1", "poddisruptionbudgets", Some("default"), "web-pdb");
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);

    sim.kubectl(&["scale", "deployment", "web", "--replicas=2"]).await.ok();
    sim.wait_ready("default", "web", 2).await;
    sim.wait_pdb("default", "web-pdb", 1).await;
    let other =
        sim.pods_of("default", "web").into_iter().find(|p| p["metadata"]["uid"] != uid).expect("the new pod");
    assert_ne!(node_of(&other), node, "the new pod cannot land on the cordoned node");

    let run = sim
        .kubectl(&["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"])
        .await;
    assert_eq!(run.code, 0, "drain failed\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!("pod/{} evicted", name.as_str().unwrap_or_default())),
        "{}",
        run.stdout
    );
    sim.wait_ready("default", "web", 2).await;
    assert!(sim.pods_of("default", "web").iter().all(|p| node_of(p) != node));
}
