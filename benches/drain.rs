//! Drain time, writes per surge and signal → scale latency on the real control plane (issue 19;
//! figures in BENCHMARKS.md, "drain"). Run by hand: `cargo bench --bench drain` (`RUNS`;
//! `K` and `D` size the two scenarios, `SCENARIO=pinned|parallel` runs one of them,
//! `PRODUCT_BIN` another build of the product to compare with). Kwok
//! nodes run pods Ready 1 s after they are scheduled (tests/cluster/kwok-stages.sh); the
//! product (release) runs with `--cooldown=5s` and otherwise its defaults.
//!
//! * `pinned`: three nodes. Namespace `protected` holds K single-replica Deployments, each
//!   pinned by a PDB `minAvailable: 1`, all on node-1; `plain` holds K single-replica
//!   Deployments without a PDB, all on node-2. Each run drains node-2 (nothing blocks) and
//!   node-1 (every eviction is refused until the product's surge pod is Ready) with `kubectl
//!   drain`, one after the other (odd runs node-2 first), waits for every revert, and reports
//!   both drain times, their difference, the evictions kubectl was refused, the product's
//!   writes per Deployment from the audit log from the first drain on, and its
//!   `signal_to_scale_latency` histogram (bucket bounds: p50 ≤ x).
//! * `parallel`: six nodes. Namespace `shop` holds D Deployments of 3 replicas, each pinned by
//!   a PDB `minAvailable: 3` (maxSurge 25 % → 1), every pod on node-1…3; the three are drained
//!   at once by three `kubectl drain`s. Reports the drain time, the evictions refused, the
//!   highest replica count the product ever wrote to any Deployment (must not pass 3 + 1), how
//!   long until every Deployment is back to 3 without surge annotations, writes per
//!   Deployment, and the latency histogram.
//!
//! Both also report the latency as the audit log shows it: per Deployment, from the first
//! timed cordon to the product's first PATCH of it, as the apiserver received them.
//!
//! With `E2E_KEEP_DIRS=1` the control plane's audit log stays; `scripts/drain_timeline.py
//! AUDIT_LOG protected` then shows where a pinned drain's time went, step by step.

use std::time::{Duration, Instant};

use e2e_support::{ClusterShape, Env, PRODUCT_AGENT, deployment, namespace, pdb, wait_for};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

/// The product binary: `PRODUCT_BIN` (another build, to compare side by side), else this one.
fn product() -> String {
    std::env::var("PRODUCT_BIN").unwrap_or_else(|_| BIN.to_owned())
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Applies `manifests` (JSON objects) as one kubectl List.
async fn apply_all(env: &Env, manifests: Vec<String>) {
    let items: Vec<Value> = manifests.iter().map(|m| serde_json::from_str(m).expect("JSON")).collect();
    env.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).await;
}

/// Evictions `kubectl drain` was refused (each retried 5 s later), from its output.
fn refusals(output: &str) -> usize {
    output.matches("will retry after").count()
}

/// The placement taint: keeps new pods off a node without draining it.
const PLACEMENT: &str = "bench.example/placement";

/// Keeps new pods off `nodes` (a `NoSchedule` taint that is not a drain taint).
async fn hold(env: &Env, nodes: &[&str]) {
    let taint = format!("{PLACEMENT}=hold:NoSchedule");
    env.kubectl_ok(&[&["taint", "nodes"], nodes, &[taint.as_str()]].concat()).await;
}

/// Lets new pods onto `nodes` again.
async fn release(env: &Env, nodes: &[&str]) {
    let taint = format!("{PLACEMENT}:NoSchedule-");
    env.kubectl_ok(&[&["taint", "nodes"], nodes, &[taint.as_str()]].concat()).await;
}

/// Waits until `k` Deployments in `namespace` have `replicas` Ready replicas each.
async fn wait_all_ready(env: &Env, namespace: &str, k: usize, replicas: i64) {
    let what = format!("{k} Deployments with {replicas} Ready replicas in {namespace}");
    wait_for(&what, Duration::from_secs(300), || async move {
        let list = env.get(&["deployments", "-n", namespace]).await?;
        let items = list["items"].as_array()?;
        let ready = items.iter().filter(|d| d["status"]["readyReplicas"] == replicas).count();
        (ready == k).then_some(())
    })
    .await;
}

/// Waits until every Deployment in `namespace` is back to `replicas` without surge
/// annotations; returns how long that took.
async fn wait_all_reverted(env: &Env, namespace: &str, replicas: i64) -> Duration {
    let started = Instant::now();
    let what = format!("every Deployment in {namespace} reverted to {replicas}");
    wait_for(&what, Duration::from_secs(300), || async move {
        let list = env.get(&["deployments", "-n", namespace]).await?;
        let reverted = list["items"].as_array()?.iter().all(|d| {
            d["spec"]["replicas"] == replicas
                && d["metadata"]["annotations"]["evictionSurgeReplicas"].is_null()
        });
        reverted.then_some(())
    })
    .await;
    started.elapsed()
}

/// The product's write attempts in `namespace` so far, whatever their answer: Deployments,
/// Deployments not answered 2xx (a conflicted PATCH is a write too), EAS statuses, and all.
fn writes_in(env: &Env, namespace: &str) -> [usize; 4] {
    let writes: Vec<_> = env.product_writes().into_iter().filter(|r| r.namespace == namespace).collect();
    let deployments: Vec<_> = writes.iter().filter(|r| r.resource == "deployments").collect();
    let refused = deployments.iter().filter(|r| !r.succeeded()).count();
    let statuses =
        writes.iter().filter(|r| r.resource == "evictionautoscalers" && r.subresource == "status").count();
    [deployments.len(), refused, statuses, writes.len()]
}

/// Writes per Deployment between `before` and `after` ([`writes_in`]), as table cells:
/// Deployment attempts (with how many were not 2xx), EAS statuses.
fn per_deployment(before: [usize; 4], after: [usize; 4], k: usize) -> (String, String) {
    let per = |i: usize| (after[i] - before[i]) as f64 / k as f64;
    (format!("{:.2} ({} not 2xx)", per(0), after[1] - before[1]), format!("{:.2}", per(2)))
}

/// The highest `spec.replicas` the product wrote to any Deployment in `namespace` (from the
/// audit log's request bodies).
fn highest_written_replicas(env: &Env, namespace: &str) -> i64 {
    env.audit_events()
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["resource"] == "deployments")
        .filter(|e| e["objectRef"]["namespace"] == namespace && e["verb"] == "patch")
        .filter(|e| e["userAgent"].as_str().is_some_and(|a| a.starts_with(PRODUCT_AGENT)))
        .filter_map(|e| e["requestObject"]["spec"]["replicas"].as_i64())
        .max()
        .unwrap_or(0)
}

/// The latency histogram's p50 and p99 bounds and count, as table cells.
fn latency(metrics: &str) -> (String, String, u64) {
    let name = "eviction_autoscaler_signal_to_scale_latency_seconds";
    let (p50, surges) = quantile(metrics, name, 0.5);
    let (p99, _) = quantile(metrics, name, 0.99);
    let ms = |s: Option<f64>| s.map_or("-".to_owned(), |s| format!("{:.0} ms", s * 1000.0));
    (ms(p50), ms(p99), surges)
}

/// The latency from the audit log: for each Deployment of `namespace`, from the cordon of the
/// first of `nodes` (each node's last PATCH by kubectl, which is its drain's cordon) to the
/// product's first Deployment PATCH after it, as the apiserver received both. p50, p99 and max
/// (nearest rank), as table cells.
fn audit_latency(env: &Env, namespace: &str, nodes: &[&str]) -> String {
    let at = |r: &e2e_support::Request| r.timestamp.parse::<jiff::Timestamp>().expect("RFC 3339 timestamp");
    let requests = env.requests();
    let cordon = nodes
        .iter()
        .filter_map(|node| {
            requests.iter().rfind(|r| {
                r.resource == "nodes"
                    && r.name == *node
                    && r.verb == "patch"
                    && r.user_agent.starts_with("kubectl")
            })
        })
        .map(at)
        .min()
        .expect("the drains' cordons in the audit log");
    let mut first_patch: std::collections::BTreeMap<&str, jiff::Timestamp> = Default::default();
    for r in requests
        .iter()
        .filter(|r| r.resource == "deployments" && r.verb == "patch" && r.namespace == namespace)
    {
        if r.user_agent.starts_with(PRODUCT_AGENT) && at(r) >= cordon {
            first_patch.entry(r.name.as_str()).or_insert(at(r));
        }
    }
    let mut ms: Vec<f64> =
        first_patch.values().map(|t| t.duration_since(cordon).as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let rank =
        |q: f64| ms.get(((q * ms.len() as f64).ceil() as usize).max(1) - 1).copied().unwrap_or(f64::NAN);
    format!("{:.0} / {:.0} / {:.0} ms", rank(0.5), rank(0.99), ms.last().copied().unwrap_or(f64::NAN))
}

/// `q`-quantile of a Prometheus histogram `name` in `text`: the upper bound of the first
/// bucket holding it (a bound, not an interpolation), and the count.
fn quantile(text: &str, name: &str, q: f64) -> (Option<f64>, u64) {
    let buckets: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{name}_bucket{{le=\"")))
        .filter_map(|rest| {
            let (le, count) = rest.split_once("\"}")?;
            Some((le.parse().unwrap_or(f64::INFINITY), count.trim().parse().ok()?))
        })
        .collect();
    let total = buckets.last().map_or(0, |b| b.1);
    let wanted = (q * total as f64).ceil() as u64;
    (buckets.iter().find(|(_, count)| *count >= wanted && total > 0).map(|b| b.0), total)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = setting("RUNS", 3);
    let scenario = std::env::var("SCENARIO").unwrap_or_default();
    if scenario != "parallel" {
        let k = setting("K", 50);
        println!(
            "| run | K | drain, no PDB | drain, PDB minAvailable 1 | difference | evictions refused | Deployment writes | EAS status writes | writes in `plain` | surges | latency p50 ≤ | p99 ≤ | cordon → PATCH p50 / p99 / max |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for run in 1..=runs {
            pinned(run, k).await;
        }
    }
    if scenario != "pinned" {
        let d = setting("D", 100);
        println!(
            "| run | D | 3 drains at once | evictions refused (per Deployment) | highest replicas written | all reverted after | Deployment writes | EAS status writes | surges | latency p50 ≤ | p99 ≤ | cordon → PATCH p50 / p99 / max |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for run in 1..=runs {
            parallel(run, d).await;
        }
    }
}

/// One run of the `pinned` scenario (module documentation), as a table row.
async fn pinned(run: usize, k: usize) {
    // node-3 may end up with every pod: the plain ones, the surge pods and their replacements.
    let mut env = Env::start(product(), ClusterShape { nodes: 3, pods_per_node: 3 * k + 10 }).await;
    env.start_product(&["--actioned-namespaces=protected,plain", "--pdb-create=false", "--cooldown=5s"])
        .await;
    env.apply(&namespace("protected", &[])).await;
    env.apply(&namespace("plain", &[])).await;

    // Placement by a taint the product does not count as a drain (a cordon would be one, and
    // surge the protected Deployments before the timed drain): only node-1, then only node-2.
    hold(&env, &["node-2", "node-3"]).await;
    let names: Vec<String> = (0..k).map(|i| format!("app-{i}")).collect();
    let protected = names.iter().flat_map(|n| {
        [deployment("protected", n, 1, &[]), pdb("protected", n, n, json!({"minAvailable": 1}))]
    });
    apply_all(&env, protected.collect()).await;
    wait_all_ready(&env, "protected", k, 1).await;
    hold(&env, &["node-1"]).await;
    release(&env, &["node-2"]).await;
    apply_all(&env, names.iter().map(|n| deployment("plain", n, 1, &[])).collect()).await;
    wait_all_ready(&env, "plain", k, 1).await;
    release(&env, &["node-1", "node-3"]).await;

    let before = (writes_in(&env, "protected"), writes_in(&env, "plain"));
    // Alternating which drain goes first: the second one drains onto busier nodes.
    let timed = |node: &'static str| {
        let env = &env;
        async move {
            let started = Instant::now();
            let output = env.drain(node).await;
            (started.elapsed(), refusals(&output))
        }
    };
    let ((plain, _), (protected, refused)) = if run % 2 == 1 {
        let plain = timed("node-2").await;
        (plain, timed("node-1").await)
    } else {
        let protected = timed("node-1").await;
        (timed("node-2").await, protected)
    };
    wait_all_reverted(&env, "protected", 1).await;

    let (p50, p99, surges) = latency(&env.metrics().await);
    let (deployments, statuses) = per_deployment(before.0, writes_in(&env, "protected"), k);
    let plain_writes = writes_in(&env, "plain")[3] - before.1[3];
    println!(
        "| {run} | {k} | {:.1} s | {:.1} s | {:.1} s | {refused} | {deployments} | {statuses} | {plain_writes} | {surges} | {p50} | {p99} | {} |",
        plain.as_secs_f64(),
        protected.as_secs_f64(),
        protected.as_secs_f64() - plain.as_secs_f64(),
        audit_latency(&env, "protected", &["node-1"]),
    );
}

/// One run of the `parallel` scenario (module documentation), as a table row.
async fn parallel(run: usize, d: usize) {
    let mut env = Env::start(product(), ClusterShape { nodes: 6, pods_per_node: 3 * d + 10 }).await;
    env.start_product(&["--actioned-namespaces=shop", "--pdb-create=false", "--cooldown=5s"]).await;
    env.apply(&namespace("shop", &[])).await;

    hold(&env, &["node-4", "node-5", "node-6"]).await;
    let names: Vec<String> = (0..d).map(|i| format!("app-{i}")).collect();
    let shop = names
        .iter()
        .flat_map(|n| [deployment("shop", n, 3, &[]), pdb("shop", n, n, json!({"minAvailable": 3}))]);
    apply_all(&env, shop.collect()).await;
    wait_all_ready(&env, "shop", d, 3).await;
    release(&env, &["node-4", "node-5", "node-6"]).await;

    let before = writes_in(&env, "shop");
    let started = Instant::now();
    let outputs = tokio::join!(env.drain("node-1"), env.drain("node-2"), env.drain("node-3"));
    let drained = started.elapsed();
    let refused = refusals(&outputs.0) + refusals(&outputs.1) + refusals(&outputs.2);
    let reverted = wait_all_reverted(&env, "shop", 3).await;

    let (p50, p99, surges) = latency(&env.metrics().await);
    let (deployments, statuses) = per_deployment(before, writes_in(&env, "shop"), d);
    println!(
        "| {run} | {d} | {:.1} s | {refused} ({:.2}) | {} | {:.1} s | {deployments} | {statuses} | {surges} | {p50} | {p99} | {} |",
        drained.as_secs_f64(),
        refused as f64 / d as f64,
        highest_written_replicas(&env, "shop"),
        reverted.as_secs_f64(),
        audit_latency(&env, "shop", &["node-1", "node-2", "node-3"]),
    );
}
