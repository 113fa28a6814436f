//! `eviction-autoscaler audit` at cluster scale (issue 42; figures in BENCHMARKS.md, "audit").
//! Run by hand: `cargo bench --bench audit` (`RUNS`, default 3; `NAMESPACES` × `PER_NS`
//! Deployments, default 100 × 100; `PODS` per Deployment, default 5; `NODES`, default 1,000).
//!
//! A bare apiserver of the real control plane (no controllers: through them 50,000 pods did not
//! come up in 30 minutes on 2 cores) is seeded directly: the nodes, the Deployments, one PDB per
//! Deployment (a quarter of them `blocks_all`), and every pod as its ReplicaSet and kubelet
//! would leave it — created on its node, then written Running and Ready through the status
//! subresource. Then, `RUNS` times and alternating, the release binary's `audit -A -o json` and
//! `kubectl get deploy,pdb,pods -A -o json` (what an operator would otherwise read), each with
//! its output to /dev/null, timed by GNU time: elapsed seconds and peak RSS.

use std::process::Command;
use std::time::Instant;

use e2e_support::apiserver::ApiServer;
use futures::{StreamExt, stream};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
/// Requests in flight while seeding.
const CONCURRENCY: usize = 64;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Creates every object of `objects` (JSON) in `api`'s kind, CONCURRENCY at a time.
async fn create_all<K>(api: &Api<K>, objects: Vec<Value>) -> usize
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let count = objects.len();
    stream::iter(objects)
        .map(|object| async move {
            let typed: K = serde_json::from_value(object).expect("a valid object");
            api.create(&PostParams::default(), &typed).await.expect("created");
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    count
}

/// Runs `command` under GNU time: (elapsed seconds, peak RSS in MiB, exit code).
fn timed(command: Command) -> (f64, f64, i32) {
    let mut time = Command::new("/usr/bin/time");
    time.args(["-f", "%e %M", "--"]).arg(command.get_program()).args(command.get_args());
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            time.env(key, value);
        }
    }
    let output =
        time.stdout(std::process::Stdio::null()).output().expect("GNU time runs (apt-get install time)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    let mut fields = last.split_whitespace().map(|f| f.parse::<f64>().unwrap_or(f64::NAN));
    let (elapsed, kib) = (fields.next().unwrap_or(f64::NAN), fields.next().unwrap_or(f64::NAN));
    (elapsed, kib / 1024.0, output.status.code().unwrap_or(-1))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (runs, namespaces, per_ns, pods, nodes) = (
        setting("RUNS", 3),
        setting("NAMESPACES", 100),
        setting("PER_NS", 100),
        setting("PODS", 5),
        setting("NODES", 1000),
    );
    let server = ApiServer::start().await;
    let client = server.client().await;
    let seeding = Instant::now();

    let namespace_docs: Vec<String> = (0..namespaces)
        .map(|n| format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: team-{n}}}\n"))
        .collect();
    server.create(&namespace_docs.join("---\n")).await;
    let node_objects = (0..nodes).map(|i| json!({"metadata": {"name": format!("node-{i}")}})).collect();
    create_all(&Api::<k8s_openapi::api::core::v1::Node>::all(client.clone()), node_objects).await;

    let mut deployments = 0;
    let mut budgets = 0;
    let mut created_pods = 0;
    for n in 0..namespaces {
        let ns = format!("team-{n}");
        let apps: Vec<String> = (0..per_ns).map(|d| format!("app-{d}")).collect();
        let deployment_objects = apps
            .iter()
            .map(|app| {
                json!({
                    "metadata": {"name": app, "namespace": ns},
                    "spec": {"replicas": pods, "selector": {"matchLabels": {"app": app}},
                             "template": {"metadata": {"labels": {"app": app}},
                                          "spec": {"containers": [{"name": "main", "image": "x"}]}}}
                })
            })
            .collect();
        deployments += create_all(
            &Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), &ns),
            deployment_objects,
        )
        .await;
        let budget_objects = apps
            .iter()
            .enumerate()
            .map(|(d, app)| {
                let budget = match d % 4 {
                    0 => json!({"minAvailable": pods}),
                    1 => json!({"minAvailable": 1}),
                    2 => json!({"maxUnavailable": 1}),
                    _ => json!({"minAvailable": "50%"}),
                };
                let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
                spec.as_object_mut().unwrap().extend(budget.as_object().unwrap().clone());
                json!({"metadata": {"name": app, "namespace": ns}, "spec": spec})
            })
            .collect();
        budgets += create_all(
            &Api::<k8s_openapi::api::policy::v1::PodDisruptionBudget>::namespaced(client.clone(), &ns),
            budget_objects,
        )
        .await;
        let pod_api = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), &ns);
        let names: Vec<(String, String, usize)> = apps
            .iter()
            .enumerate()
            .flat_map(|(d, app)| {
                (0..pods).map(move |k| (app.clone(), format!("{app}-5d8-{k}"), (n * per_ns + d) * pods + k))
            })
            .collect();
        let pod_objects = names
            .iter()
            .map(|(app, name, i)| {
                json!({
                    "metadata": {"name": name, "namespace": ns,
                                 "labels": {"app": app, "pod-template-hash": "5d8"},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": format!("{app}-5d8"), "uid": format!("00000000-0000-0000-0000-{n:06}{i:06}"),
                                     "controller": true}]},
                    "spec": {"nodeName": format!("node-{}", i % nodes.max(1)), "containers": [{"name": "main", "image": "x"}]}
                })
            })
            .collect();
        created_pods += create_all(&pod_api, pod_objects).await;
        let status = json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}});
        stream::iter(names.iter())
            .map(|(_, name, _)| {
                let (api, status) = (&pod_api, &status);
                async move {
                    api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                        .await
                        .expect("status written");
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<()>>()
            .await;
    }
    println!(
        "seeded {nodes} nodes, {deployments} Deployments, {budgets} PDBs, {created_pods} pods (Running, Ready) in {:.0} s",
        seeding.elapsed().as_secs_f64()
    );

    let kubeconfig = server.plane().kubeconfig_path();
    let home = tempfile::tempdir().expect("a HOME for kubectl");
    println!(
        "| run | audit -A -o json | peak RSS | kubectl get deploy,pdb,pods -A -o json | peak RSS | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    for run in 1..=runs {
        let mut audit = Command::new(BIN);
        audit.args(["audit", "-A", "-o", "json"]).env("KUBECONFIG", &kubeconfig).env("HOME", home.path());
        let mut kubectl = Command::new(server.plane().bin_dir().join("kubectl"));
        kubectl
            .args(["get", "deploy,pdb,pods", "-A", "-o", "json"])
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", home.path())
            .env("KUBECACHEDIR", home.path().join("cache"));
        // Alternate which goes first: the apiserver's caches and the page cache favour neither.
        let (audit, kubectl) = if run % 2 == 1 {
            let a = timed(audit);
            (a, timed(kubectl))
        } else {
            let k = timed(kubectl);
            (timed(audit), k)
        };
        assert!(matches!(audit.2, 0 | 1), "the audit ran (exit {})", audit.2);
        assert_eq!(kubectl.2, 0, "kubectl ran");
        println!(
            "| {run} | {:.2} s | {:.0} MiB | {:.2} s | {:.0} MiB | {:.2} |",
            audit.0,
            audit.1,
            kubectl.0,
            kubectl.1,
            audit.0 / kubectl.0
        );
    }
}
