//! `make demo`: the product's main job on the real control plane of `tests/cluster/` (built
//! first by `make demo`), told as it happens and then from the apiserver's audit log.
//!
//! A 1-replica Deployment with a `minAvailable: 1` PDB sits on a node; `kubectl drain` would
//! be refused forever. With eviction-autoscaler running, the drain completes and the
//! Deployment goes back to 1 replica. Exits 0 only if every step happened.

use e2e_support as support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use support::{ClusterShape, Env, deployment, namespace, pdb};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let bin = match std::env::current_exe() {
        // target/debug/examples/demo → target/debug/eviction-autoscaler
        Ok(exe) => exe.parent().and_then(|p| p.parent()).map(|p| p.join("eviction-autoscaler")),
        Err(_) => None,
    };
    let Some(bin) = bin.filter(|b| b.exists()) else {
        eprintln!("demo: build the binary first (make demo does: cargo build --bin eviction-autoscaler)");
        return ExitCode::FAILURE;
    };
    let started = Instant::now();
    let say = |text: &str| println!("[{:>5.1}s] {text}", started.elapsed().as_secs_f64());

    say(&format!(
        "starting the real control plane {} (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok: 3 nodes)",
        support::cluster::kube_version()
    ));
    let mut env = Env::start(bin, ClusterShape { nodes: 3, pods_per_node: 110 }).await;
    say("wrote certificates, applied the CRD and the webhook configuration");
    say("starting eviction-autoscaler run (namespace `demo` enabled, cooldown 3s)");
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=3s", "--signal-window=10s"]).await;

    env.apply(&namespace("demo", &[])).await;
    env.apply(&deployment("demo", "web", 1, &[])).await;
    env.apply(&pdb("demo", "web", "web", serde_json::json!({"minAvailable": 1}))).await;
    env.wait_ready("demo", "web", 1).await;
    let node = env.node_of("demo", "web").await;
    say(&format!("Deployment demo/web: 1 replica on {node}, PDB minAvailable: 1 (0 disruptions allowed)"));
    let history = env.record_deployment("demo", "web");

    let drain_started = jiff::Timestamp::now();
    say(&format!("$ kubectl drain {node} --ignore-daemonsets --delete-emptydir-data --timeout=120s"));
    let (drained, output) = env
        .kubectl_combined(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=120s",
        ])
        .await;
    for line in output.lines() {
        println!("          | {line}");
    }
    say(if drained { "drain finished" } else { "drain FAILED" });

    say("waiting for the cooldown and the revert");
    let deadline = Instant::now() + Duration::from_secs(60);
    let reverted = loop {
        let done = history
            .states()
            .last()
            .is_some_and(|s| s.replicas == 1 && !s.annotations.contains_key("evictionSurgeReplicas"));
        if done || Instant::now() > deadline {
            break done;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    println!("\nTimeline (seconds since the drain started, from the apiserver's audit log):");
    let log = env.requests();
    let at = |ts: &str| match ts.parse::<jiff::Timestamp>() {
        Ok(t) => format!("{:>6.2}s", (t - drain_started).total(jiff::Unit::Second).unwrap_or(0.0)),
        Err(_) => ts.to_owned(),
    };
    let mut blocked = false;
    let mut surged = false;
    for r in &log {
        if r.subresource == "eviction" {
            let what = match r.code {
                429 => {
                    blocked = true;
                    "refused by the PDB (429): the drain would be stuck here"
                }
                201 => "evicted (201)",
                _ => "answered",
            };
            println!("  {}  eviction of pod {}: {what}", at(&r.timestamp), r.name);
        } else if r.user_agent.starts_with(support::PRODUCT_AGENT)
            && r.resource == "deployments"
            && r.is_write()
        {
            let what = if surged { "reverts the Deployment" } else { "surges the Deployment" };
            surged = true;
            println!(
                "  {}  eviction-autoscaler {what} ({} {}, HTTP {})",
                at(&r.timestamp),
                r.verb,
                r.name,
                r.code
            );
        }
    }
    let peak = history.states().iter().map(|s| s.replicas).max().unwrap_or(0);
    let min_ready = history.states().iter().map(|s| s.ready).min().unwrap_or(0);
    println!(
        "\nReplicas: 1 → {peak} → {}; Ready replicas never below {min_ready}.",
        history.states().last().map_or(0, |s| s.replicas)
    );

    let ok = blocked && surged && drained && reverted && peak == 2 && min_ready >= 1;
    if ok {
        println!("\nOK: the blocked drain completed with no downtime, and web is back to 1 replica.");
        ExitCode::SUCCESS
    } else {
        println!("\nFAILED: blocked={blocked} surged={surged} drained={drained} reverted={reverted}");
        println!("--- product log ---\n{}", env.product_log());
        ExitCode::FAILURE
    }
}
