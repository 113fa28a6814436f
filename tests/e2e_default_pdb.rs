//! Default PDBs, end to end (issue 7, ARCHITECTURE.md §4.5): real binary, the real control plane, real
//! kubectl. Every Deployment in an enabled namespace gets exactly one PDB, created at its
//! admission (or by the reconciler when the webhook is down) and kept at its replicas.

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::Resource;
use support::pdbs::{CRD, OWNED_BY, TARGET, ours};
use support::recorder::{Added, Recorder};
use support::stalled::Stall;
use support::{ClusterShape, Env, namespace, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const ON: [&str; 2] = ["--pdb-create=true", "--actioned-namespaces=apps"];

async fn cluster_with_apps(extra: &[&str]) -> Env {
    cluster_shaped(ClusterShape::default(), extra).await
}

async fn cluster_shaped(shape: ClusterShape, extra: &[&str]) -> Env {
    let mut env = Env::start(BIN, shape).await;
    let mut flags = ON.to_vec();
    flags.extend_from_slice(extra);
    env.start_product(&flags).await;
    env.apply(&namespace("apps", &[])).await;
    env
}

/// The owner every default PDB must carry: exactly one reference, to the CRD object.
async fn assert_default_pdb(env: &Env, pdb: &Value, deployment: &str, min_available: i64) {
    let crd = env.get(&["crd", CRD]).await.expect("the CRD exists");
    let owners = pdb["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
    assert_eq!(owners.len(), 1, "one owner reference: {pdb}");
    assert_eq!(owners[0]["kind"], "CustomResourceDefinition", "{pdb}");
    assert_eq!(owners[0]["name"], CRD, "{pdb}");
    assert_eq!(owners[0]["uid"], crd["metadata"]["uid"], "owned by this CRD object: {pdb}");
    let annotations = &pdb["metadata"]["annotations"];
    assert_eq!(annotations[OWNED_BY], "EvictionAutoScaler", "{pdb}");
    assert_eq!(annotations[TARGET], deployment, "{pdb}");
    assert_eq!(pdb["spec"]["minAvailable"], min_available, "{pdb}");
    let d = env.get(&["deployment", "-n", "apps", deployment]).await.expect("the Deployment exists");
    assert_eq!(pdb["spec"]["selector"], d["spec"]["selector"], "the Deployment's full selector: {pdb}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_deployment_gets_its_pdb_from_the_admission_path() {
    let env = cluster_with_apps(&[]).await;
    let pdbs_added = env.record_added(&support::pdbs::pdbs(), "apps");

    env.kubectl_ok(&["create", "deployment", "web", "-n", "apps", "--image=x", "--replicas=3"]).await;
    let pdb = env.wait_pdb("apps", &ours("web"), "created", |_| true).await;
    assert_default_pdb(&env, &pdb, "web", 3).await;
    env.wait_ready("apps", "web", 3).await;

    // The webhook saw the Deployment, and the product's one successful create is the
    // admission path's (the reconciler's attempt, if any, got AlreadyExists).
    let metrics = env.metrics().await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("eviction_autoscaler_webhook_requests")
                && l.contains("/validate-deployment")),
        "the webhook was called for the Deployment:\n{metrics}"
    );
    // The one successful create is the admission path's: it writes under its own field manager
    // (the reconciler looks a second after the Deployment is stored, and gets AlreadyExists).
    let creates = env.product_pdb_creates("apps");
    assert_eq!(creates.len(), 1, "one successful create: {creates:?}");
    assert!(
        creates[0].query_param("fieldManager") == Some("eviction-autoscaler-admission"),
        "created by the admission path: {creates:?}"
    );
    assert_eq!(pdbs_added.states().len(), 1, "one PDB ever stored: {:?}", pdbs_added.states());
    // Both paths try; the loser's AlreadyExists is "done", not a second creation.
    assert_eq!(created_events(&env, "web").await, 1, "one PDBCreated Event");
    assert_eq!(env.pdb_actions("created").await, 1, "one creation counted");
}

/// `PDBCreated` Events about Deployment `apps/<deployment>`.
async fn created_events(env: &Env, deployment: &str) -> usize {
    let events = env
        .get(&[
            "events",
            "-n",
            "apps",
            "--field-selector",
            &format!("reason=PDBCreated,involvedObject.name={deployment}"),
        ])
        .await
        .expect("events");
    events["items"].as_array().map_or(0, |items| {
        items
            .iter()
            .map(|e| e["count"].as_u64().max(e["series"]["count"].as_u64()).unwrap_or(1) as usize)
            .sum()
    })
}

/// The admission path protects a new Deployment before any of its pods is Ready (before a
/// drain could evict one), without making the create wait: the webhook answers at once
/// (ARCHITECTURE §2) and the PDB is written right behind it. Pods may be *stored* first:
/// kube-controller-manager's deployment and replicaset controllers create them within
/// milliseconds of the Deployment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admission_path_stores_the_pdb_before_any_pod_is_ready() {
    let env = cluster_with_apps(&[]).await;
    let first_ready = env.record_first(&Resource::new("", "v1", "pods"), "apps", |_, pod| {
        let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    let pdbs_added = env.record_added(&support::pdbs::pdbs(), "apps");
    env.kubectl_ok(&["create", "deployment", "web", "-n", "apps", "--image=x", "--replicas=3"]).await;
    env.wait_pdb("apps", &ours("web"), "created", |_| true).await;
    env.wait_ready("apps", "web", 3).await;
    let pdb_rv = pdbs_added.states().first().map(|a| a.resource_version).expect("PDB ADDED seen");
    let ready_rv = first_ready.states().iter().map(|a| a.resource_version).min().expect("a Ready pod seen");
    assert!(pdb_rv < ready_rv, "PDB (rv {pdb_rv}) before the first Ready pod (rv {ready_rv})");
    assert_eq!(pdbs_added.states().len(), 1, "one PDB ever stored: {:?}", pdbs_added.states());
    let creates = env.product_pdb_creates("apps");
    assert!(
        creates.iter().all(|c| c.query_param("fieldManager") == Some("eviction-autoscaler-admission")),
        "created by the admission path: {creates:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_webhook_unregistered_the_reconciler_creates_the_pdb() {
    let env = cluster_with_apps(&[]).await;
    env.unregister_webhook().await;

    env.kubectl_ok(&["create", "deployment", "web", "-n", "apps", "--image=x", "--replicas=3"]).await;
    let pdb = env.wait_pdb("apps", &ours("web"), "created", |_| true).await;
    assert_default_pdb(&env, &pdb, "web", 3).await;
    let creates = env.product_pdb_creates("apps");
    assert_eq!(creates.len(), 1, "created once: {creates:?}");
    assert!(
        creates[0].query_param("fieldManager") == Some("eviction-autoscaler"),
        "created by the reconciler: {creates:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_strategy_and_match_expressions_only_selector_get_a_pdb_with_that_selector() {
    let env = cluster_with_apps(&[]).await;
    // No strategy at all (the apiserver defaults RollingUpdate 25%/25%), and a
    // selector made of matchExpressions only.
    let expressions = json!([{"key": "app", "operator": "In", "values": ["expr", "expr-canary"]}]);
    let manifest = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "expr", "namespace": "apps"},
        "spec": {
            "replicas": 2,
            "selector": {"matchExpressions": expressions},
            "template": {
                "metadata": {"labels": {"app": "expr"}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
            }
        }
    });
    env.apply(&manifest.to_string()).await;
    let pdb = env.wait_pdb("apps", &ours("expr"), "created", |_| true).await;
    assert_default_pdb(&env, &pdb, "expr", 2).await;
    assert_eq!(pdb["spec"]["selector"], json!({"matchExpressions": expressions}), "never an empty selector");
    let d = env.get(&["deployment", "-n", "apps", "expr"]).await.expect("Deployment");
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate", "defaulted strategy: {d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_moves_min_available_but_a_surge_during_a_drain_does_not() {
    let env = cluster_with_apps(&["--cooldown=2s", "--signal-window=10s"]).await;
    env.kubectl_ok(&["create", "deployment", "web", "-n", "apps", "--image=x", "--replicas=3"]).await;
    env.wait_pdb("apps", &ours("web"), "minAvailable 3", |p| p["spec"]["minAvailable"] == 3).await;

    env.kubectl_ok(&["scale", "deployment", "web", "-n", "apps", "--replicas=5"]).await;
    env.wait_pdb("apps", &ours("web"), "minAvailable 5", |p| p["spec"]["minAvailable"] == 5).await;
    env.wait_ready("apps", "web", 5).await;

    // minAvailable 5 of 5 blocks every eviction; the drain goes through only by a surge.
    let drain_starts = env.requests().last().map_or(0, |r| r.seq);
    let history = env.record_deployment("apps", "web");
    let pdb_states = env.record_pdb_min_available("apps");
    let node = env.node_of("apps", "web").await;
    env.drain(&node).await;
    let surged = history.states().iter().map(|s| s.replicas).max().unwrap_or(0);
    assert!(surged > 5, "the drain surged web: {:?}", history.states());
    wait_for("the revert to 5 replicas", Duration::from_secs(60), || {
        let last = history.states().last().cloned();
        async move { last.filter(|s| s.replicas == 5).map(|_| ()) }
    })
    .await;

    let seen: Vec<Value> =
        pdb_states.states().into_iter().filter(|(n, _)| *n == ours("web")).map(|(_, m)| m).collect();
    assert!(seen.iter().all(|m| *m == 5), "the PDB stayed at the baseline 5 during the surge: {seen:?}");
    let evictions = env.evictions();
    assert!(evictions.iter().all(|(_, code)| *code != 500), "no eviction answered 500: {evictions:?}");
    // One applied update (3 → 5; a patch whose resourceVersion `test` lost to a status update
    // is refused with 422 and planned again), and no write at all from the drain on.
    let writes = env.product_pdb_writes("apps", &ours("web"));
    let applied: Vec<_> = writes.iter().filter(|r| r.succeeded()).collect();
    assert_eq!(applied.len(), 1, "one update (3 → 5): {writes:?}");
    let during: Vec<_> = writes.iter().filter(|r| r.seq > drain_starts).collect();
    assert!(during.is_empty(), "no PDB write during the drain and surge: {during:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statefulset_gets_no_pdb_and_no_repeated_errors() {
    let env = cluster_with_apps(&[]).await;
    let sts = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "apps"},
        "spec": {
            "replicas": 2, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "registry.example/db:1"}]}
            }
        }
    });
    env.apply(&sts.to_string()).await;
    // The control plane runs no StatefulSet controller: its pods are made here, owned like upstream's.
    let uid =
        env.get(&["statefulset", "-n", "apps", "db"]).await.expect("StatefulSet")["metadata"]["uid"].clone();
    for i in 0..2 {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("db-{i}"), "namespace": "apps", "labels": {"app": "db"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                                     "uid": uid, "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {"containers": [{"name": "db", "image": "registry.example/db:1"}]}
        });
        env.apply(&pod.to_string()).await;
    }
    // A Deployment applied afterwards is the marker that the product has seen the namespace.
    env.kubectl_ok(&["create", "deployment", "marker", "-n", "apps", "--image=x", "--replicas=1"]).await;
    env.wait_pdb("apps", &ours("marker"), "created", |_| true).await;
    assert_eq!(env.pdb_names("apps"), vec![ours("marker")], "no PDB for the StatefulSet");
    let log = env.product_log();
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR") || l.contains("WARN")).collect();
    assert!(errors.is_empty(), "no errors or warnings logged:\n{}", errors.join("\n"));
}

/// Every event of the PDBs in `apps` from now on, as (type, name, uid): not only the first
/// ADDED per name, so a PDB deleted and created again shows as two uids under one name.
fn pdb_events(env: &Env) -> Recorder<(String, String, String)> {
    env.watch(&support::pdbs::pdbs(), "apps", None, |kind, o| {
        let meta = &o["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Some((kind.to_owned(), text(&meta["name"]), text(&meta["uid"])))
    })
}

/// The apiserver stores a new Deployment only once every validating webhook has answered, and
/// ours answers at once: the PDB made at its admission is stored before its Deployment. It is
/// kept while the Deployment is on its way (another webhook holds the create 5 s), and goes
/// once the admission grace is over when the Deployment is refused after all (another webhook
/// fails it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdb_made_at_admission_waits_for_its_deployment_and_goes_if_it_never_comes() {
    let env = cluster_with_apps(&[]).await;
    let events = pdb_events(&env);
    let pdbs_added = env.record_added(&support::pdbs::pdbs(), "apps");
    let deployments_added = env.record_added(&Resource::new("apps", "v1", "deployments"), "apps");
    let hold = |failure_policy, timeout_seconds| Stall {
        failure_policy,
        timeout_seconds,
        operation: "CREATE",
        only_product: false,
    };
    let _late = env
        .register_stalled_webhook("late", json!({"matchLabels": {"stored": "late"}}), hold("Ignore", 5))
        .await;
    let _never = env
        .register_stalled_webhook("never", json!({"matchLabels": {"stored": "never"}}), hold("Fail", 2))
        .await;
    let labelled = |name: &str| {
        let mut d: Value =
            serde_json::from_str(&support::deployment("apps", name, 1, &[])).expect("a Deployment");
        d["metadata"]["labels"] = json!({"stored": name});
        d.to_string()
    };
    let uids_of = |name: &str| {
        let mut uids: Vec<String> =
            events.states().into_iter().filter(|(_, n, _)| n == name).map(|(_, _, uid)| uid).collect();
        uids.dedup();
        uids
    };

    env.apply(&labelled("late")).await;
    let added = |recorder: &Recorder<Added>, name: &str| {
        recorder.states().into_iter().find(|a| a.name == name).map(|a| a.resource_version)
    };
    let stored = wait_for("late and its PDB stored", Duration::from_secs(30), || {
        let both = added(&pdbs_added, &ours("late")).zip(added(&deployments_added, "late"));
        async move { both }
    })
    .await;
    assert!(
        stored.0 < stored.1,
        "the PDB was stored before its Deployment (the case under test): {stored:?}"
    );

    let path = env.dir.path().join("never.json");
    std::fs::write(&path, labelled("never")).expect("write the manifest");
    let (created, out) = env.kubectl_combined(&["apply", "-f", &path.display().to_string()]).await;
    assert!(!created && out.contains("never.stalled.test"), "refused by the failing webhook: {out}");
    wait_for("the PDB of the refused Deployment deleted", Duration::from_secs(60), || {
        let gone = uids_of(&ours("never")).len() == 1
            && events.states().iter().any(|(kind, name, _)| kind == "DELETED" && *name == ours("never"));
        async move { gone.then_some(()) }
    })
    .await;
    // By now the late PDB is past its grace too (it was created first) and has been looked at
    // again: one PDB all along, never deleted.
    assert_eq!(uids_of(&ours("late")).len(), 1, "one late PDB: {:?}", events.states());
    assert!(
        !events.states().iter().any(|(kind, name, _)| kind == "DELETED" && *name == ours("late")),
        "the late PDB was never deleted: {:?}",
        events.states()
    );
    assert!(env.pdb_object("apps", &ours("late")).is_some(), "and is there");
    assert_eq!(env.pdb_names("apps"), [ours("late")], "nothing else is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_deployments_in_one_apply_get_exactly_five_hundred_pdbs() {
    const COUNT: usize = 500;
    let env = cluster_shaped(ClusterShape { nodes: 3, pods_per_node: 200 }, &[]).await;
    let events = pdb_events(&env);
    let manifest: Vec<String> = (0..COUNT)
        // One replica each: zero replicas would (rightly) get no PDB.
        .map(|i| support::deployment("apps", &format!("app-{i:03}"), 1, &[]))
        .collect();
    let path = env.dir.path().join("many.yaml");
    // Leading `---`: JSON documents inside a YAML stream (kubectl sniffs the first byte).
    std::fs::write(&path, format!("---\n{}", manifest.join("\n---\n"))).expect("write manifest");
    env.kubectl_ok(&["apply", "-f", &path.display().to_string()]).await;

    wait_for("500 default PDBs", Duration::from_secs(120), || {
        let n = env.pdbs("apps").len();
        async move { (n >= COUNT).then_some(()) }
    })
    .await;
    let names = env.pdb_names("apps");
    let expected: Vec<String> = (0..COUNT).map(|i| ours(&format!("app-{i:03}"))).collect();
    assert_eq!(names, expected, "one PDB per Deployment, named after it");
    let mut uids = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    for (_, name, uid) in events.states() {
        uids.entry(name).or_default().insert(uid);
    }
    let creates = env.product_pdb_creates("apps");
    let mut created = std::collections::BTreeMap::<&str, usize>::new();
    for c in &creates {
        *created.entry(c.name.as_str()).or_default() += 1;
    }
    let again: Vec<&str> = created.iter().filter(|(_, n)| **n > 1).map(|(name, _)| *name).collect();
    let recreated: Vec<_> = uids.iter().filter(|(_, u)| u.len() > 1).collect();
    // What happened to each such PDB: every request naming it, and every event of it.
    let history = |name: &str| {
        let requests: Vec<String> = env
            .requests()
            .into_iter()
            .filter(|r| r.resource == "poddisruptionbudgets" && r.name == name)
            .map(|r| format!("{} {} {} by {} ({})", r.timestamp, r.verb, r.code, r.user, r.user_agent))
            .collect();
        let seen: Vec<_> = events.states().into_iter().filter(|(_, n, _)| n == name).collect();
        format!("{name}:\n  {}\n  events: {seen:?}", requests.join("\n  "))
    };
    let suspects: std::collections::BTreeSet<&str> =
        again.iter().copied().chain(recreated.iter().map(|(n, _)| n.as_str())).collect();
    let histories: Vec<String> = suspects.into_iter().map(history).collect();
    assert!(
        again.is_empty() && recreated.is_empty(),
        "a PDB created twice or deleted and created again:\n{}",
        histories.join("\n")
    );
    let strays: Vec<_> = creates.iter().filter(|c| !expected.contains(&c.name)).collect();
    assert_eq!(creates.len(), COUNT, "exactly {COUNT} successful creates by the product: {strays:#?}");
    // Counted once the create's response is back: the 500th PDB can be listed a moment earlier.
    let counted = wait_for("500 creations counted", Duration::from_secs(10), || async {
        let n = env.pdb_actions("created").await;
        (n >= COUNT as u64).then_some(n)
    })
    .await;
    assert_eq!(counted, COUNT as u64, "exactly {COUNT} creations counted");
}

/// A reinstall that deletes the CRD and applies it again (or an upgrade that replaces it): the
/// garbage collector deletes the default PDB the old CRD owned, and the product creates it once
/// more, owned by the new CRD object, where it stays. A PDB carrying the old CRD's UID would be
/// deleted by the garbage collector at once, and created again, in a loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_created_crd_owns_the_default_pdb_again_and_it_stays() {
    let env = cluster_with_apps(&[]).await;
    env.apply(&support::deployment("apps", "web", 2, &[])).await;
    let first = env.wait_pdb("apps", &ours("web"), "created", |_| true).await;
    let uid_of = |v: &Value| v["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let old_crd = uid_of(&env.get(&["crd", CRD]).await.expect("the CRD"));
    let start = env.requests().len();

    env.kubectl_ok(&["delete", "crd", CRD]).await;
    env.kubectl_ok(&["apply", "-f", &support::repo_path("deploy/base/crd.yaml")]).await;
    let new_crd = uid_of(&env.get(&["crd", CRD]).await.expect("the CRD, applied again"));
    assert_ne!(new_crd, old_crd, "a new CRD object");
    let owned_by_new = |p: &Value| p["metadata"]["ownerReferences"][0]["uid"] == new_crd.as_str();
    let pdb = env.wait_pdb("apps", &ours("web"), "owned by the new CRD", owned_by_new).await;
    assert_ne!(uid_of(&pdb), uid_of(&first), "the old PDB went with the old CRD");
    assert_default_pdb(&env, &pdb, "web", 2).await;

    // It stays: the product acts on it later, and it is still the same object.
    env.kubectl_ok(&["scale", "deployment", "web", "-n", "apps", "--replicas=3"]).await;
    let scaled =
        env.wait_pdb("apps", &ours("web"), "minAvailable 3", |p| p["spec"]["minAvailable"] == 3).await;
    assert_eq!(uid_of(&scaled), uid_of(&pdb), "never deleted and created again");
    let creates: Vec<jiff::Timestamp> = env.requests()[start..]
        .iter()
        .filter(|r| r.user_agent.starts_with(support::PRODUCT_AGENT) && r.verb == "create")
        .filter(|r| r.resource == "poddisruptionbudgets" && r.name == ours("web") && r.succeeded())
        .map(|r| r.timestamp.parse().expect("a timestamp"))
        .collect();
    // One create, owned by the new CRD: the PDB's deletion may reach the product before the
    // CRD's, and the owner is read again before a create.
    assert_eq!(creates.len(), 1, "creates: {creates:?}\n{}", env.product_log());
}

/// `pdb.create` off stops creating, not managing (the Go chart defaults it to on, ours to off,
/// so an operator switching over turns it off without knowing): the default PDB that exists is
/// never deleted and follows its Deployment's replicas; a new Deployment gets none; the log says
/// so and names the setting that resumes creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_pdb_create_off_the_existing_default_pdb_stays_in_sync_and_no_new_one_is_made() {
    let mut env = cluster_with_apps(&[]).await;
    env.apply(&support::deployment("apps", "web", 2, &[])).await;
    env.wait_pdb("apps", &ours("web"), "created", |p| p["spec"]["minAvailable"] == 2).await;

    env.start_product(&["--pdb-create=false", "--actioned-namespaces=apps"]).await;
    env.kubectl_ok(&["scale", "deployment", "web", "-n", "apps", "--replicas=3"]).await;
    env.wait_pdb("apps", &ours("web"), "minAvailable 3 with pdb.create off", |p| {
        p["spec"]["minAvailable"] == 3
    })
    .await;

    // A new Deployment: the planner's decision (a skip counted for it) is the marker that
    // nothing more will come.
    let skips_before = pdb_skips_for_create_off(&env).await;
    env.apply(&support::deployment("apps", "api", 1, &[])).await;
    wait_for("the new Deployment's skip", Duration::from_secs(30), || async {
        (pdb_skips_for_create_off(&env).await > skips_before).then_some(())
    })
    .await;
    assert_eq!(env.pdb_names("apps"), [ours("web")], "no PDB for the new Deployment, the old one kept");
    let deletes: Vec<_> = env
        .requests()
        .into_iter()
        .filter(|r| r.resource == "poddisruptionbudgets" && r.verb == "delete")
        .collect();
    assert_eq!(deletes, Vec::new(), "no PDB was ever deleted");
    let log = env.product_log();
    assert!(
        log.contains("pdb.create is off: the default PDBs that exist are kept and kept in sync")
            && log.contains("controllerConfig.pdb.create=true"),
        "the log says what happens and how to resume:\n{log}"
    );
}

async fn pdb_skips_for_create_off(env: &Env) -> u64 {
    let metrics = env.metrics().await;
    support::metrics::metric_sum(
        &metrics,
        "eviction_autoscaler_pdb_actions_total",
        &["outcome=\"skipped\"", "reason=\"PdbCreateDisabled\""],
    ) as u64
}
