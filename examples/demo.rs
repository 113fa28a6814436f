//! `make demo`: the product's main job on the real control plane of `tests/cluster/` (built
//! first by `make demo`), told as it happens and then from the apiserver's audit log.
//!
//! A 1-replica Deployment with a `minAvailable: 1` PDB sits on a node; `kubectl drain` would
//! be refused forever. With eviction-autoscaler running, the webhook holds the eviction while
//! the Deployment surges, the eviction passes on its first request, the drain completes and the
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
    let since = |e: &serde_json::Value, stage: &str| {
        e[stage]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| (t - drain_started).total(jiff::Unit::Second).unwrap_or(0.0))
    };
    let mut timeline: Vec<(f64, String)> = Vec::new();
    let (mut evictions, mut refused, mut surged, mut opened) = (0, 0, false, false);
    let completed = env.audit_events().into_iter().filter(|e| e["stage"] == "ResponseComplete");
    for e in completed {
        let resource = &e["objectRef"]["resource"];
        let subresource = &e["objectRef"]["subresource"];
        let name = e["objectRef"]["name"].as_str().unwrap_or_default().to_owned();
        let code = e["responseStatus"]["code"].as_u64().unwrap_or(0);
        let (Some(received), Some(answered)) =
            (since(&e, "requestReceivedTimestamp"), since(&e, "stageTimestamp"))
        else {
            continue;
        };
        if subresource == "eviction" {
            evictions += 1;
            if code == 429 {
                refused += 1;
                timeline.push((answered, format!("eviction of pod {name}: refused by the PDB (429)")));
                continue;
            }
            timeline.push((
                received,
                format!(
                    "eviction of pod {name} arrives; the webhook holds it (the PDB allows 0 disruptions)"
                ),
            ));
            let what = if code == 201 { "evicted (201) on its first request" } else { "answered" };
            timeline.push((
                answered,
                format!("eviction of pod {name}: {what}, held {:.2}s", answered - received),
            ));
        } else if e["userAgent"].as_str().is_some_and(|a| a.starts_with(support::PRODUCT_AGENT))
            && resource == "deployments"
            && e["verb"] == "patch"
        {
            let what = if surged { "reverts the Deployment" } else { "surges the Deployment" };
            surged = true;
            timeline.push((answered, format!("eviction-autoscaler {what} (patch {name}, HTTP {code})")));
        } else if !opened
            && resource == "poddisruptionbudgets"
            && subresource == "status"
            && e["requestObject"]["status"]["disruptionsAllowed"] == 1
            && e["requestObject"]["status"]["currentHealthy"] == 2
        {
            opened = true;
            timeline.push((
                answered,
                "the disruption controller opens the budget: the surge pod is Ready".to_owned(),
            ));
        }
    }
    timeline.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (at, what) in &timeline {
        println!("  {at:>6.2}s  {what}");
    }
    let peak = history.states().iter().map(|s| s.replicas).max().unwrap_or(0);
    let min_ready = history.states().iter().map(|s| s.ready).min().unwrap_or(0);
    println!(
        "\nReplicas: 1 → {peak} → {}; Ready replicas never below {min_ready}.",
        history.states().last().map_or(0, |s| s.replicas)
    );

    let first_try = evictions == 1 && refused == 0;
    let ok = first_try && surged && drained && reverted && peak == 2 && min_ready >= 1;
    if ok {
        println!(
            "\nOK: the blocked drain completed with no downtime, its eviction passed on its first request, \
             and web is back to 1 replica."
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "\nFAILED: evictions={evictions} refused={refused} surged={surged} drained={drained} reverted={reverted}"
        );
        println!("--- product log ---\n{}", env.product_log());
        ExitCode::FAILURE
    }
}
