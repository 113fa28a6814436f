//! `eviction-autoscaler cleanup [--dry-run]` (issue 7, for uninstall), end to end: real
//! binary, the real control plane, real kubectl. After the product ran with `--pdb-create` and stopped,
//! cleanup reverts the surge left behind, deletes every owned PDB, hands over a PDB the user
//! took over, removes the EvictionAutoScaler objects (releasing the Go finalizers), never
//! writes to the user's PDB, and a second run has nothing to do.

use e2e_support as support;

use std::process::Output;
use std::time::Duration;

use serde_json::json;
use support::pdbs::{CRD, is_owned, ours};
use support::{ClusterShape, Env, PRODUCT_AGENT, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SURGE: &str = "evictionSurgeReplicas";
const ORIGINAL: &str = "eviction-autoscaler.azure.com/original-min-replicas";
const GO_FINALIZERS: [&str; 2] =
    ["eviction-autoscaler.azure.com/surge-revert", "eviction-autoscaler.azure.com/pdb-floor"];

/// Runs `eviction-autoscaler cleanup <args>` against the cluster; returns (success, stdout,
/// stderr).
async fn cleanup(env: &Env, args: &[&str]) -> (bool, String, String) {
    let mut command = std::process::Command::new(BIN);
    command.arg("cleanup").args(args).env("KUBECONFIG", env.kubeconfig()).env("HOME", env.dir.path());
    let output: Output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the cleanup task finishes")
        .expect("run eviction-autoscaler cleanup");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

/// Writes made with the product's User-Agent after request number `since`.
fn writes_since(env: &Env, since: u64) -> Vec<support::Request> {
    env.requests()
        .into_iter()
        .filter(|r| r.seq > since && r.user_agent.starts_with(PRODUCT_AGENT) && r.is_write())
        .collect()
}

fn last_seq(env: &Env) -> u64 {
    env.requests().last().map_or(0, |r| r.seq)
}

fn eas_names(env: &Env) -> Vec<String> {
    let gvr = support::Resource::new("eviction-autoscaler.azure.com", "v1", "evictionautoscalers");
    env.objects(&gvr, "").iter().filter_map(|o| o["metadata"]["name"].as_str().map(String::from)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_undoes_everything_ours_once_and_never_touches_the_users_pdb() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--pdb-create=true", "--actioned-namespaces=apps"]).await;
    env.apply(&namespace("apps", &[])).await;
    // The user's PDB exists before its Deployment: no default PDB for `db`.
    env.apply(&pdb("apps", "db-budget", "db", json!({"minAvailable": 1}))).await;
    env.apply(&deployment("apps", "db", 2, &[])).await;
    env.apply(&deployment("apps", "web", 3, &[])).await;
    env.apply(&deployment("apps", "api", 2, &[])).await;
    for name in ["web", "api"] {
        env.wait_pdb("apps", &ours(name), "created", |_| true).await;
    }
    env.wait_ready("apps", "web", 3).await;
    env.kill_product().await;

    // Left behind as the Go project (or a killed product) leaves it: a surged Deployment, an
    // EvictionAutoScaler held by the Go finalizers, and a PDB the user took over (ownedBy
    // removed) that still carries the CRD owner reference.
    env.apply(&deployment("apps", "web", 4, &[(SURGE, "4"), (ORIGINAL, "3")])).await;
    let eas = json!({
        "apiVersion": "eviction-autoscaler.azure.com/v1", "kind": "EvictionAutoScaler",
        "metadata": {"name": "web", "namespace": "apps", "finalizers": GO_FINALIZERS},
        "spec": {"targetName": "web", "targetKind": "deployment"}
    });
    env.apply(&eas.to_string()).await;
    // An HPA surge: the raised minimum and our annotations are on the HPA.
    let hpa = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api", "namespace": "apps", "annotations": {SURGE: "3", ORIGINAL: "2"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 3, "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]
        }
    });
    env.apply(&hpa.to_string()).await;
    let crd = env.get(&["crd", CRD]).await.expect("the CRD exists");
    let taken_over = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "legacy", "namespace": "apps", "ownerReferences": [{
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "name": CRD, "uid": crd["metadata"]["uid"]}]},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "legacy"}}}
    });
    env.apply(&taken_over.to_string()).await;
    let user_pdb_before = env.pdb_object("apps", "db-budget").expect("the user's PDB");
    assert!(!eas_names(&env).is_empty(), "an EvictionAutoScaler to remove");

    // Dry run: the plan, and no write.
    let mark = last_seq(&env);
    let (ok, out, err) = cleanup(&env, &["--dry-run"]).await;
    assert!(ok, "dry run succeeds:\n{out}\n{err}");
    for line in [
        "would revert surge: Deployment apps/web from 4 to 3",
        "would revert surge: HorizontalPodAutoscaler apps/api from 3 to 2",
        "would drop owner reference: poddisruptionbudget apps/legacy (the user's now)",
        "would delete poddisruptionbudget apps/api-eviction-autoscaler",
        "would delete poddisruptionbudget apps/web-eviction-autoscaler",
        "would release finalizers [eviction-autoscaler.azure.com/surge-revert, eviction-autoscaler.azure.com/pdb-floor] and delete evictionautoscaler apps/web",
    ] {
        assert!(out.lines().any(|l| l == line), "dry run lists {line:?}:\n{out}");
    }
    assert!(out.contains("nothing changed"), "{out}");
    assert!(!out.contains("poddisruptionbudget apps/db-budget"), "the user's PDB is not listed:\n{out}");
    let dry_run_writes = writes_since(&env, mark);
    assert!(dry_run_writes.is_empty(), "the dry run writes nothing: {dry_run_writes:?}");
    let planned = out.lines().filter(|l| l.starts_with("would ")).count();

    // The real run.
    let mark = last_seq(&env);
    let (ok, out, err) = cleanup(&env, &[]).await;
    assert!(ok, "cleanup succeeds:\n{out}\n{err}");
    assert!(out.contains("revert surge: Deployment apps/web from 4 to 3: done"), "{out}");
    // EvictionAutoScalers owned by a deleted PDB may be garbage-collected first: "already done".
    let finished = out.lines().filter(|l| l.ends_with(": done") || l.ends_with(": already done")).count();
    assert_eq!(finished, planned, "every planned step done:\n{out}");
    assert!(out.lines().any(|l| l.starts_with("cleanup finished:") && l.ends_with(", 0 skipped")), "{out}");
    let web = env.deployment_now("apps", "web").expect("web");
    assert_eq!(web["spec"]["replicas"], 3, "back to the baseline: {web}");
    let annotations = &web["metadata"]["annotations"];
    assert!(
        annotations.get(SURGE).is_none() && annotations.get(ORIGINAL).is_none(),
        "annotations gone: {web}"
    );
    let hpa = env.object("autoscaling", "v2", "horizontalpodautoscalers", "apps", "api").expect("the HPA");
    assert_eq!(hpa["spec"]["minReplicas"], 2, "the HPA minimum back to its baseline: {hpa}");
    let annotations = &hpa["metadata"]["annotations"];
    assert!(
        annotations.get(SURGE).is_none() && annotations.get(ORIGINAL).is_none(),
        "annotations gone: {hpa}"
    );
    let owned: Vec<_> = env.pdbs("").into_iter().filter(is_owned).collect();
    assert!(owned.is_empty(), "no owned PDB left: {owned:?}");
    assert_eq!(env.pdb_names("apps"), ["db-budget", "legacy"], "the users' PDBs stay");
    let legacy = env.pdb_object("apps", "legacy").expect("legacy");
    assert!(legacy["metadata"].get("ownerReferences").is_none(), "our owner reference dropped: {legacy}");
    // Its status follows the cluster (the disruption controller); what the user wrote stays.
    let user_pdb = env.pdb_object("apps", "db-budget").expect("the user's PDB stays");
    for field in ["/spec", "/metadata/annotations", "/metadata/ownerReferences", "/metadata/uid"] {
        assert_eq!(user_pdb.pointer(field), user_pdb_before.pointer(field), "{field} unchanged: {user_pdb}");
    }
    let user_writes = env.product_pdb_writes("apps", "db-budget");
    assert!(user_writes.is_empty(), "zero writes to the user's PDB: {user_writes:?}");
    assert_eq!(eas_names(&env), Vec::<String>::new(), "no EvictionAutoScaler left");
    let writes = writes_since(&env, mark);
    assert!(
        writes.iter().all(|w| w.resource != "poddisruptionbudgets" || w.name != "db-budget"),
        "{writes:?}"
    );
    assert!(writes.iter().any(|w| w.resource == "evictionautoscalers" && w.verb == "delete"), "{writes:?}");

    // Once the Deployment controller follows, the surge pod is gone too.
    wait_for("web back at 3 pods", Duration::from_secs(30), || {
        let status = env.deployment_now("apps", "web").map(|d| d["status"]["replicas"].clone());
        async move { (status == Some(json!(3))).then_some(()) }
    })
    .await;

    // Idempotent: nothing left, nothing written.
    let mark = last_seq(&env);
    let (ok, out, err) = cleanup(&env, &[]).await;
    assert!(ok, "second cleanup succeeds:\n{out}\n{err}");
    assert!(out.trim().starts_with("nothing to do"), "{out}");
    let again = writes_since(&env, mark);
    assert!(again.is_empty(), "the second run writes nothing: {again:?}");
}

/// An error other than NotFound/Conflict stops cleanup with a non-zero exit naming the
/// object; the steps before it are printed and done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_delete_fails_the_command_naming_the_pdb() {
    let env = Env::start(BIN, ClusterShape { nodes: 1, pods_per_node: 10 }).await;
    env.apply(&namespace("locked", &[])).await;
    env.apply(&namespace("free", &[])).await;
    let leftover = |namespace: &str, name: &str| {
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace,
                "annotations": {"ownedBy": "EvictionAutoScaler", "target": name}},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}}
        })
        .to_string()
    };
    env.apply(&leftover("free", "open")).await;
    env.apply(&leftover("locked", "guarded")).await;
    // A policy whose webhook cannot be reached (no route to its Service) with
    // failurePolicy Fail refuses PDB deletes in `locked`: the apiserver answers 500.
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "guard"},
        "webhooks": [{
            "name": "guard.example.com",
            "clientConfig": {"service": {"namespace": "guard", "name": "guard", "path": "/"}},
            "rules": [{"apiGroups": ["policy"], "apiVersions": ["v1"], "operations": ["DELETE"],
                "resources": ["poddisruptionbudgets"]}],
            "objectSelector": {},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "locked"}},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]
        }]
    });
    env.apply(&policy.to_string()).await;
    // Steps run sorted by namespace: `free` first.
    let (ok, out, err) = cleanup(&env, &[]).await;
    assert!(!ok, "cleanup fails:\n{out}\n{err}");
    assert!(out.contains("delete poddisruptionbudget free/open: done"), "{out}\n{err}");
    assert!(err.contains("delete poddisruptionbudget locked/guarded"), "the error names the object:\n{err}");
    assert_eq!(env.pdb_names("locked"), ["guarded"], "the refused PDB stays");
    assert_eq!(env.pdb_names("free"), Vec::<String>::new(), "the step before it was done");
}
