//! Drain time and signal → scale latency on the real control plane (issue 19; figures in
//! BENCHMARKS.md, "drain"). Run by hand: `cargo bench --bench drain` (`K`, `RUNS`).
//!
//! Three kwok nodes (pods Ready 1 s after they are scheduled, tests/cluster/kwok-stages.sh), the
//! product (release) in namespaces `protected` and `plain`. `protected` holds K single-replica
//! Deployments, each pinned by a PDB `minAvailable: 1`, all on node-1; `plain` holds K
//! single-replica Deployments without a PDB, all on node-2. node-3 is empty. Each run drains
//! node-2 (nothing blocks) and node-1 (every eviction is refused until the product's surge
//! pod is Ready) with `kubectl drain`, one after the other (odd runs node-2 first, even runs
//! node-1 first), and reports both times, their difference, and the product's
//! `signal_to_scale_latency` histogram over the run (bucket bounds: p50 ≤ x).

use std::time::{Duration, Instant};

use e2e_support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Applies `manifests` (JSON objects) as one kubectl List.
async fn apply_all(env: &Env, manifests: Vec<String>) {
    let items: Vec<Value> = manifests.iter().map(|m| serde_json::from_str(m).expect("JSON")).collect();
    env.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).await;
}

/// Waits until `k` Deployments in `namespace` have their one replica Ready.
async fn wait_all_ready(env: &Env, namespace: &str, k: usize) {
    wait_for(&format!("{k} Deployments Ready in {namespace}"), Duration::from_secs(300), || async move {
        let list = env.get(&["deployments", "-n", namespace]).await?;
        let ready = list["items"].as_array()?.iter().filter(|d| d["status"]["readyReplicas"] == 1).count();
        (ready == k).then_some(())
    })
    .await;
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
    let (k, runs) = (setting("K", 50), setting("RUNS", 3));
    println!(
        "| run | K | drain, no PDB | drain, PDB minAvailable 1 | difference | surges | latency p50 ≤ | p99 ≤ |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for run in 1..=runs {
        let mut env = Env::start_real(BIN, ClusterShape { nodes: 3, pods_per_node: 2 * k + 10 }).await;
        env.start_product(&["--actioned-namespaces=protected,plain", "--pdb-create=false"]).await;
        env.apply(&namespace("protected", &[])).await;
        env.apply(&namespace("plain", &[])).await;

        // Placement by cordons: only node-1 schedulable, then only node-2.
        env.kubectl_ok(&["cordon", "node-2", "node-3"]).await;
        let names: Vec<String> = (0..k).map(|i| format!("app-{i}")).collect();
        let protected = names.iter().flat_map(|n| {
            [deployment("protected", n, 1, &[]), pdb("protected", n, n, json!({"minAvailable": 1}))]
        });
        apply_all(&env, protected.collect()).await;
        wait_all_ready(&env, "protected", k).await;
        env.kubectl_ok(&["cordon", "node-1"]).await;
        env.kubectl_ok(&["uncordon", "node-2"]).await;
        apply_all(&env, names.iter().map(|n| deployment("plain", n, 1, &[])).collect()).await;
        wait_all_ready(&env, "plain", k).await;
        env.kubectl_ok(&["uncordon", "node-1", "node-3"]).await;

        // Alternating which drain goes first: the second one drains onto busier nodes.
        let timed = |node: &'static str| {
            let env = &env;
            async move {
                let started = Instant::now();
                env.drain(node).await;
                started.elapsed()
            }
        };
        let (plain, protected) = if run % 2 == 1 {
            let plain = timed("node-2").await;
            (plain, timed("node-1").await)
        } else {
            let protected = timed("node-1").await;
            (timed("node-2").await, protected)
        };

        let metrics = env.metrics().await;
        let name = "eviction_autoscaler_signal_to_scale_latency_seconds";
        let (p50, surges) = quantile(&metrics, name, 0.5);
        let (p99, _) = quantile(&metrics, name, 0.99);
        let ms = |s: Option<f64>| s.map_or("-".to_owned(), |s| format!("{:.0} ms", s * 1000.0));
        println!(
            "| {run} | {k} | {:.1} s | {:.1} s | {:.1} s | {surges} | {} | {} |",
            plain.as_secs_f64(),
            protected.as_secs_f64(),
            protected.as_secs_f64() - plain.as_secs_f64(),
            ms(p50),
            ms(p99),
        );
    }
}
