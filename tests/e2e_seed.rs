//! The seed's verification steps (验证安装), typed as the document prints them, on the real
//! control plane.

use e2e_support as support;

use std::time::Duration;

use serde_json::Value;
use support::scenario::{SURGE_KEYS, wait_state};
use support::{ClusterShape, Env, deployment, namespace, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

/// The seed's "验证安装" (verify the installation), in its cluster-wide mode with
/// `controllerConfig.pdb.create=true controllerConfig.namespaces.enabledByDefault=true`, every
/// command typed exactly as the document prints it (`<namespace>` = shop, `<app-label>` = web).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_verification_steps_hold_cluster_wide_with_pdb_creation() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let config = env.dir.path().join("controller-config.yaml");
    std::fs::write(
        &config,
        "controllerConfig:\n  pdb:\n    create: true\n  namespaces:\n    enabledByDefault: true\n",
    )
    .expect("write the config file");
    let config_flag = format!("--config={}", config.display());
    env.start_product(&[&config_flag, "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("shop", &[])).await;
    env.apply(&deployment("shop", "web", 2, &[])).await;
    env.wait_ready("shop", "web", 2).await;
    let pdb_name = "web-eviction-autoscaler";
    wait_for("the default PDB to allow 0 disruptions", Duration::from_secs(60), || async {
        let p = env.get(&["pdb", "-n", "shop", pdb_name]).await?;
        (p["status"]["observedGeneration"] == 1 && p["status"]["disruptionsAllowed"] == 0).then_some(())
    })
    .await;

    // 1. The PDBs the extension created.
    let (found, listing) = env.sh("kubectl get pdb -A -o custom-columns=NAME:.metadata.name,NAMESPACE:.metadata.namespace,MIN-AVAILABLE:.spec.minAvailable,OWNER:.metadata.annotations.ownedBy | grep EvictionAutoScaler").await;
    let columns: Vec<Vec<&str>> = listing.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(
        found && columns == [vec![pdb_name, "shop", "2", "EvictionAutoScaler"]],
        "step 1 shows:\n{listing}"
    );

    // 2. The custom resources (the controller creates the EvictionAutoScaler once it has
    // seen the PDB).
    wait_for("step 2 to list the EvictionAutoScaler", Duration::from_secs(60), || async {
        let (listed, resources) = env.sh("kubectl get evictionautoscalers --all-namespaces").await;
        let rows: Vec<Vec<String>> = resources
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().take(3).map(str::to_owned).collect())
            .collect();
        (listed && rows == [vec!["shop".to_owned(), pdb_name.to_owned(), "web".to_owned()]]).then_some(())
    })
    .await;

    // 3. The cordon test.
    let history = env.record_deployment("shop", "web");
    let node_query = "kubectl get pods -n shop -l app=web -o=jsonpath='{.items[0].spec.nodeName}'";
    let (cordoned, text) = env.sh(&format!("NODE=$({node_query})\nkubectl cordon $NODE")).await;
    assert!(cordoned && text.contains("cordoned"), "kubectl cordon: {text}");
    let node = text.split_whitespace().next().unwrap_or_default().trim_start_matches("node/").to_owned();
    // "Check that the deployment scaled up" and "Verify PDB allowed disruptions".
    wait_state(&history, "the Deployment scaled up to 3 Ready replicas", Duration::from_secs(60), |s| {
        s.replicas == 3 && s.ready == 3
    })
    .await;
    let (_, pods) = env.sh("kubectl get pods -n shop").await;
    let running = pods.lines().filter(|l| l.starts_with("web-") && l.contains("Running")).count();
    assert_eq!(running, 3, "kubectl get pods -n shop shows:\n{pods}");
    let allowed = wait_for("the PDB to allow a disruption", Duration::from_secs(60), || async {
        let (_, yaml) = env.sh(&format!("kubectl get poddisruptionbudget {pdb_name} -n shop -o yaml")).await;
        let value: Value = serde_saphyr::from_str(&yaml).ok()?;
        let allowed = value["status"]["disruptionsAllowed"].as_i64().filter(|a| *a > 0)?;
        Some((allowed, yaml))
    })
    .await;
    assert_eq!(allowed.0, 1, "{}", allowed.1);
    // "Watch for automatic PDB management events": why it scaled, listed in time order with
    // the Events of Kubernetes' own controllers (the surge after the Deployment's creation).
    let (sorted, events) = env.sh("kubectl get events -n shop --sort-by='.lastTimestamp'").await;
    assert!(sorted, "kubectl get events -n shop: {events}");
    let surge_line = assert_listed_in_time_order(&events);
    assert!(events.lines().count() - surge_line <= 8, "the surge is among the latest Events:\n{events}");
    // The troubleshooting steps: every namespace, then only what concerns drains.
    let (sorted, events) = env.sh("kubectl get events -A --sort-by='.lastTimestamp'").await;
    assert!(sorted, "kubectl get events -A: {events}");
    assert_listed_in_time_order(&events);
    let (found, events) = env
        .sh("kubectl get events --sort-by='.lastTimestamp' -A | grep -i \"disruption\\|evict\\|drain\"")
        .await;
    let ours = |reason: &str| events.lines().any(|l| l.contains(reason) && l.contains("deployment/web"));
    assert!(found && ours("PDBCreated") && ours("SurgeStarted"), "the grep shows:\n{events}");

    // After verification, uncordon: back to the baseline.
    let (uncordoned, text) = env.sh(&format!("NODE={node}\nkubectl uncordon $NODE")).await;
    assert!(uncordoned && text.contains("uncordoned"), "kubectl uncordon: {text}");
    wait_state(
        &history,
        "the Deployment back to 2 replicas without surge annotations",
        Duration::from_secs(60),
        |s| s.replicas == 2 && s.ready == 2 && SURGE_KEYS.iter().all(|k| !s.annotations.contains_key(*k)),
    )
    .await;
    let states = history.states();
    assert!(states.iter().all(|s| s.ready >= 2), "Ready replicas dropped below the baseline: {states:?}");
}

/// `listing` (kubectl get events, sorted by `.lastTimestamp`) shows the surge after the
/// Deployment controller's first Event about `web` (its creation; a null `lastTimestamp` would
/// sort it as the oldest, or hide it); returns the surge's line.
fn assert_listed_in_time_order(listing: &str) -> usize {
    let lines: Vec<&str> = listing.lines().collect();
    // With -A the first column is the namespace (other tests may share the control plane).
    let in_shop = |l: &str| !listing.starts_with("NAMESPACE") || l.starts_with("shop ");
    let line_of = |reason: &str| {
        lines.iter().position(|l| in_shop(l) && l.contains(reason) && l.contains("deployment/web"))
    };
    let created =
        line_of("ScalingReplicaSet").unwrap_or_else(|| panic!("no ScalingReplicaSet Event:\n{listing}"));
    let surged = line_of("SurgeStarted").unwrap_or_else(|| panic!("no SurgeStarted Event:\n{listing}"));
    assert!(created < surged, "the surge sorts after the Deployment's creation:\n{listing}");
    surged
}
