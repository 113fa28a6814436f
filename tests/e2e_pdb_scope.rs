//! Default PDBs and the user's PDBs, opt-outs, namespace scope, hand-over and uninstall, end
//! to end (issue 7, ARCHITECTURE.md §4.5–§4.6): real binary, the real control plane, real kubectl.

use e2e_support as support;

use std::time::Duration;

use serde_json::json;
use support::pdbs::{CRD, ENABLE, PDB_CREATE, ours, pdbs};
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

async fn cluster(extra: &[&str]) -> Env {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    let mut flags = vec!["--pdb-create=true", "--actioned-namespaces=apps"];
    flags.extend_from_slice(extra);
    env.start_product(&flags).await;
    env.apply(&namespace("apps", &[])).await;
    env
}

async fn annotate_namespace(env: &Env, value: &str) {
    env.kubectl_ok(&["annotate", "--overwrite", "namespace", "apps", &format!("{ENABLE}={value}")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_pdbs_first_or_after_ours_remain_alone_and_are_never_written() {
    let env = cluster(&["--cooldown=2s", "--signal-window=10s"]).await;
    let added = env.record_added(&pdbs(), "apps");
    // `first`: the user's PDB exists before the Deployment (minAvailable = replicas, so a
    // drain needs a surge). `after`: the user's PDB arrives once ours exists.
    env.apply(&pdb("apps", "first-pdb", "first", json!({"minAvailable": 2}))).await;
    env.apply(&deployment("apps", "first", 2, &[])).await;
    env.apply(&deployment("apps", "after", 2, &[])).await;
    env.apply(&deployment("apps", "plain", 1, &[])).await;
    env.wait_pdb("apps", &ours("after"), "created", |_| true).await;
    env.apply(&pdb("apps", "after-pdb", "after", json!({"minAvailable": 1}))).await;
    env.wait_pdb_gone("apps", &ours("after")).await;
    env.wait_eas("apps", "first-pdb").await;
    env.wait_eas("apps", "after-pdb").await;
    env.wait_ready("apps", "first", 2).await;
    env.wait_ready("apps", "after", 2).await;

    // Scale, then a drain that surges `first` (its PDB allows no disruption).
    env.kubectl_ok(&["scale", "deployment", "after", "-n", "apps", "--replicas=3"]).await;
    env.wait_ready("apps", "after", 3).await;
    let history = env.record_deployment("apps", "first");
    let node = env.node_of("apps", "first").await;
    env.drain(&node).await;
    assert!(history.states().iter().any(|s| s.replicas > 2), "first was surged: {:?}", history.states());
    wait_for("first's revert to 2 replicas", Duration::from_secs(60), || {
        let last = history.states().last().cloned();
        async move { last.filter(|s| s.replicas == 2).map(|_| ()) }
    })
    .await;
    env.kubectl_ok(&["uncordon", &node]).await;

    // Namespace flips: `plain`'s PDB is the marker that each flip was acted on.
    annotate_namespace(&env, "false").await;
    env.wait_pdb_gone("apps", &ours("plain")).await;
    annotate_namespace(&env, "true").await;
    env.wait_pdb("apps", &ours("plain"), "recreated", |_| true).await;

    let expected = vec!["after-pdb".to_owned(), "first-pdb".to_owned(), ours("plain")];
    assert_eq!(env.pdb_names("apps"), expected, "exactly one PDB per Deployment");
    assert!(
        !added.states().iter().any(|a| a.name == ours("first")),
        "no default PDB ever made for a Deployment a user PDB covered: {:?}",
        added.states()
    );
    for name in ["first-pdb", "after-pdb"] {
        let writes = env.product_pdb_writes("apps", name);
        assert!(writes.is_empty(), "the product wrote the user's PDB {name}: {writes:?}");
    }
    let evictions = env.evictions();
    assert!(evictions.iter().all(|(_, code)| *code != 500), "no eviction answered 500: {evictions:?}");
    assert!(!evictions.is_empty(), "the drain evicted pods");
    // Each removal counted once although both the PDB admission and the watch act on it:
    // after's retirement (counted as retired, or as deleted when the reconciler classified
    // it) and plain's deletion by the namespace flip.
    let (retired, deleted) = (env.pdb_actions("retired").await, env.pdb_actions("deleted").await);
    assert_eq!(
        retired + deleted,
        2,
        "retired {retired} + deleted {deleted}: {:?}\n{}",
        env.product_pdb_writes("apps", &ours("after")),
        env.product_log().lines().filter(|l| l.contains("PDB")).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opting_out_later_deletes_our_pdb_and_opting_back_in_recreates_it() {
    let env = cluster(&[]).await;
    env.apply(&deployment("apps", "web", 2, &[])).await;
    env.wait_pdb("apps", &ours("web"), "created", |_| true).await;

    env.kubectl_ok(&["annotate", "deployment", "web", "-n", "apps", &format!("{PDB_CREATE}=false")]).await;
    env.wait_pdb_gone("apps", &ours("web")).await;
    env.kubectl_ok(&["annotate", "deployment", "web", "-n", "apps", &format!("{PDB_CREATE}-")]).await;
    let pdb = env.wait_pdb("apps", &ours("web"), "recreated", |_| true).await;
    assert_eq!(pdb["spec"]["minAvailable"], 2, "{pdb}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_annotations_drive_scope_live_and_invalid_values_get_an_event() {
    let env = cluster(&[]).await;
    env.apply(&namespace("other", &[])).await;
    env.apply(&deployment("other", "outside", 1, &[])).await;
    env.apply(&deployment("apps", "inside", 1, &[])).await;
    env.apply(&pdb("apps", "user-pdb", "user", json!({"minAvailable": 1}))).await;
    env.apply(&deployment("apps", "user", 1, &[])).await;
    env.wait_pdb("apps", &ours("inside"), "created", |_| true).await;

    // "maybe" is invalid: an Event on the namespace, and the default applies (apps is in
    // actionedNamespaces, other is not).
    annotate_namespace(&env, "maybe").await;
    env.kubectl_ok(&["annotate", "namespace", "other", &format!("{ENABLE}=maybe")]).await;
    for ns in ["apps", "other"] {
        wait_for(
            &format!("an Event about namespace {ns}'s invalid annotation"),
            Duration::from_secs(30),
            || async {
                let events = env
                    .get(&[
                        "events",
                        "-A",
                        "--field-selector",
                        &format!("involvedObject.kind=Namespace,involvedObject.name={ns}"),
                    ])
                    .await?;
                let found = events["items"]
                    .as_array()?
                    .iter()
                    .any(|e| e["message"].as_str().is_some_and(|m| m.contains("maybe")));
                found.then_some(())
            },
        )
        .await;
    }
    assert!(env.pdb_object("apps", &ours("inside")).is_some(), "apps stays enabled by actionedNamespaces");

    // Off: our PDB goes, the user's stays untouched. On again: recreated.
    annotate_namespace(&env, "false").await;
    env.wait_pdb_gone("apps", &ours("inside")).await;
    annotate_namespace(&env, "true").await;
    env.wait_pdb("apps", &ours("inside"), "recreated", |_| true).await;
    assert_eq!(env.pdb_names("apps"), vec![ours("inside"), "user-pdb".to_owned()]);
    assert!(env.product_pdb_writes("apps", "user-pdb").is_empty(), "the user's PDB was never written");

    // Out of scope all along (not actioned, invalid annotation): never a PDB.
    assert!(env.pdbs("other").is_empty(), "namespace other got a PDB: {:?}", env.pdb_names("other"));
    assert!(env.product_pdb_creates("other").is_empty(), "nothing was ever created in other");
    // Enabled by annotation: the reconciler creates it now.
    env.kubectl_ok(&["annotate", "--overwrite", "namespace", "other", &format!("{ENABLE}=true")]).await;
    env.wait_pdb("other", &ours("outside"), "created once other is enabled", |_| true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_pdb_survives_its_deployment_and_the_crd_which_takes_every_owned_pdb() {
    let env = cluster(&[]).await;
    env.apply(&namespace("more", &[(ENABLE, "true")])).await;
    for (ns, name) in [("apps", "kept"), ("apps", "handed"), ("apps", "gone"), ("more", "elsewhere")] {
        env.apply(&deployment(ns, name, 1, &[])).await;
    }
    env.apply(&pdb("apps", "user-pdb", "user", json!({"minAvailable": 1}))).await;
    env.apply(&deployment("apps", "user", 1, &[])).await;
    for (ns, name) in [("apps", "kept"), ("apps", "handed"), ("apps", "gone"), ("more", "elsewhere")] {
        env.wait_pdb(ns, &ours(name), "created", |_| true).await;
    }

    // Hand-over: the product drops its owner reference (its one write to that PDB).
    env.kubectl_ok(&["annotate", "pdb", &ours("handed"), "-n", "apps", "ownedBy-"]).await;
    env.wait_pdb("apps", &ours("handed"), "no owner reference", |p| {
        p["metadata"]["ownerReferences"].as_array().is_none_or(Vec::is_empty)
    })
    .await;

    // Deleting the Deployments: ours goes (the marker), the handed-over one stays.
    env.kubectl_ok(&["delete", "deployment", "-n", "apps", "handed", "gone"]).await;
    env.wait_pdb_gone("apps", &ours("gone")).await;
    assert!(env.pdb_object("apps", &ours("handed")).is_some(), "the handed-over PDB survived its Deployment");

    // Uninstall: deleting the CRD garbage-collects every owned PDB and nothing else.
    env.kubectl_ok(&["delete", "crd", CRD]).await;
    env.wait_pdb_gone("apps", &ours("kept")).await;
    env.wait_pdb_gone("more", &ours("elsewhere")).await;
    assert_eq!(env.pdb_names("apps"), vec![ours("handed"), "user-pdb".to_owned()]);

    // One write changed it: the hand-over patch. A second planning pass from a cache copy
    // older than that patch may send the same patch again; its `test` on the
    // resourceVersion makes the server refuse it (422), so nothing else ever changed it.
    let handed = env.product_pdb_writes("apps", &ours("handed"));
    let applied: Vec<_> = handed.iter().filter(|r| r.succeeded()).collect();
    assert_eq!(applied.len(), 1, "one write (the hand-over) to the handed-over PDB: {handed:?}");
    assert_eq!(applied[0].verb, "patch", "{handed:?}");
    assert!(handed.iter().all(|r| r.verb == "patch" && (r.succeeded() || r.code == 422)), "{handed:?}");
    assert_eq!(env.pdb_actions("handed_over").await, 1, "one hand-over counted");
    assert!(env.product_pdb_writes("apps", "user-pdb").is_empty(), "the user's PDB was never written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_webhook_down_the_watch_retires_ours_when_a_user_pdb_arrives() {
    let env = cluster(&[]).await;
    env.apply(&deployment("apps", "web", 2, &[])).await;
    env.wait_pdb("apps", &ours("web"), "created", |_| true).await;
    env.unregister_webhook().await;

    env.apply(&pdb("apps", "chart-pdb", "web", json!({"maxUnavailable": 1}))).await;
    env.wait_pdb_gone("apps", &ours("web")).await;
    env.wait_eas("apps", "chart-pdb").await;
    assert_eq!(env.pdb_names("apps"), vec!["chart-pdb".to_owned()], "exactly the user's PDB remains");
    assert!(env.product_pdb_writes("apps", "chart-pdb").is_empty(), "the user's PDB was never written");
    assert_eq!(env.pdb_actions("retired").await, 1, "one retirement counted");
}
