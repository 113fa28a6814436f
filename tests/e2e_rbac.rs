//! Least privilege, end to end: the product runs as the shipped ServiceAccount under the real
//! RBAC authorizer in every scenario (the harness fails a test on any 403 answered to it). Here one
//! scenario walks every code path that needs a permission — default PDBs created, resized and
//! deleted, a drain surging a plain Deployment (one surge losing its write to another writer
//! and decided again from fresh reads), an HPA and a KEDA ScaledObject, the Lease,
//! Events, a namespace leaving scope, `cleanup` as the ServiceAccount — and every verb of every rule the shipped Roles grant must
//! have been used.

use e2e_support as support;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use support::autoscalers::{KEDA_CRD, hpa, scaled_object};
use support::pdbs::is_owned;
use support::rbac::{grants, unused};
use support::webhook::TestWebhook;
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const APPS: [&str; 3] = ["web", "scaled", "keda"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_permission_the_shipped_roles_grant_is_used() {
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    env.apply(KEDA_CRD).await;
    env.start_product(&[
        "--actioned-namespaces=demo",
        "--pdb-create=true",
        "--cooldown=2s",
        "--signal-window=10s",
    ])
    .await;
    env.apply(&namespace("demo", &[])).await;
    for app in APPS {
        env.apply(&deployment("demo", app, 1, &[])).await;
    }
    env.apply(&hpa("demo", "scaled", 1, 2)).await;
    env.apply(&scaled_object("demo", "keda", 1, 2)).await;
    wait_for("a default PDB for each Deployment", Duration::from_secs(60), || {
        let owned = env.pdbs("demo").iter().filter(|p| is_owned(p)).count();
        async move { (owned == APPS.len()).then_some(()) }
    })
    .await;
    for app in APPS {
        env.wait_ready("demo", app, 1).await;
    }

    // Drains surge each app (Deployment, HPA and ScaledObject writes, pod reads, EAS, Events);
    // web's surge, decided from the caches, loses to another writer and is decided again from
    // fresh reads (its PDB by name, its pods by label).
    let _other_writer = touch_web_while_its_first_update_is_admitted(&env).await;
    let mut nodes: Vec<String> = Vec::new();
    for app in APPS {
        let node = env.node_of("demo", app).await;
        if !nodes.contains(&node) {
            env.drain(&node).await;
            env.kubectl_ok(&["uncordon", &node]).await;
            nodes.push(node);
        }
    }
    // A resize (PDB patch), then an opt-out (PDB and EAS deleted).
    env.kubectl_ok(&["scale", "deployment", "web", "-n", "demo", "--replicas=2"]).await;
    wait_for("web's PDB resized", Duration::from_secs(60), || {
        let resized = env.pdbs("demo").iter().any(|p| {
            is_owned(p)
                && p["metadata"]["name"] == "web-eviction-autoscaler"
                && p["spec"]["minAvailable"] == 2
        });
        async move { resized.then_some(()) }
    })
    .await;
    env.kubectl_ok(&[
        "annotate",
        "deployment",
        "keda",
        "-n",
        "demo",
        "eviction-autoscaler.azure.com/pdb-create=false",
    ])
    .await;
    wait_for("the opted-out Deployment's PDB deleted", Duration::from_secs(60), || {
        let left = env.pdbs("demo").iter().filter(|p| is_owned(p)).count();
        async move { (left == APPS.len() - 1).then_some(()) }
    })
    .await;
    // The namespace leaves scope: the EvictionAutoScaler of a user PDB is removed.
    env.apply(&deployment("demo", "guarded", 1, &[])).await;
    env.apply(&pdb("demo", "guarded", "guarded", json!({"minAvailable": 1}))).await;
    wait_guarded_eas(&env, true, "the user PDB's EvictionAutoScaler").await;
    env.kubectl_ok(&["annotate", "namespace", "demo", "eviction-autoscaler.azure.com/enable=false"]).await;
    wait_guarded_eas(&env, false, "the EvictionAutoScaler removed").await;

    // `cleanup` as the ServiceAccount (the Helm chart's pre-delete hook), the product stopped:
    // the namespace back in scope first, so there is something to clean up.
    env.kubectl_ok(&[
        "annotate",
        "namespace",
        "demo",
        "eviction-autoscaler.azure.com/enable=true",
        "--overwrite",
    ])
    .await;
    wait_guarded_eas(&env, true, "the user PDB's EvictionAutoScaler again").await;
    env.product = None;
    // With --stop-deployment (no Deployment here: the product ran as a local process), the
    // stopped product's Lease goes too.
    let cleanup = std::process::Command::new(BIN)
        .args(["cleanup", "--stop-deployment=eviction-autoscaler/eviction-autoscaler"])
        .env("KUBECONFIG", env.product_kubeconfig())
        .output()
        .expect("cleanup runs");
    assert!(
        cleanup.status.success(),
        "cleanup as the ServiceAccount: {}",
        String::from_utf8_lossy(&cleanup.stderr)
    );
    let printed = String::from_utf8_lossy(&cleanup.stdout);
    assert!(
        printed.contains("remove lease eviction-autoscaler/eviction-autoscaler (leader election): done"),
        "{printed}"
    );
    let left = env.kubectl_ok(&["get", "evictionautoscalers", "-A", "-o", "name"]).await;
    assert_eq!(left.trim(), "", "cleanup removed every EvictionAutoScaler");
    assert_eq!(env.pdbs("demo").iter().filter(|p| is_owned(p)).count(), 0, "and every default PDB");

    let grants = grants("deploy/base/rbac.yaml");
    assert!(!grants.is_empty(), "the shipped rbac.yaml grants something");
    let requests = env.requests();
    let unused: Vec<String> = unused(&grants, &requests).iter().map(ToString::to_string).collect();
    assert_eq!(unused, Vec::<String>::new(), "granted but never used (least privilege)");
}

/// Marks `web` changed by someone else.
const TOUCHED: &str = "test.example.com/touched";

/// Another writer: while the first update of demo/web is admitted, it annotates web, so the
/// apiserver answers that update (guarded by its resourceVersion) with 409.
async fn touch_web_while_its_first_update_is_admitted(env: &Env) -> TestWebhook {
    let client = support::apiserver::client_from(&env.kubeconfig(), "other-writer").await;
    let deployments: Api<Deployment> = Api::namespaced(client, "demo");
    let webhook = TestWebhook::start(Arc::new(move |request: Value| -> BoxFuture<'static, Value> {
        let deployments = deployments.clone();
        Box::pin(async move {
            let touched =
                request.pointer(&format!("/object/metadata/annotations/{}", TOUCHED.replace('/', "~1")));
            if request["name"] == "web" && touched.is_none() {
                let patch = json!({"metadata": {"annotations": {TOUCHED: "yes"}}});
                deployments
                    .patch("web", &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .expect("touch web");
            }
            json!({"allowed": true})
        })
    }))
    .await;
    env.apply(&webhook.configuration("other-writer", &["UPDATE"]).to_string()).await;
    webhook
}

/// A permission taken away (the ClusterRole edited): the product says so — `Degraded` with the
/// apiserver's words, an Event, its log — keeps serving, and does not retry in a loop.
/// Waits until the EvictionAutoScaler of the user PDB demo/guarded exists (or is gone).
async fn wait_guarded_eas(env: &Env, exists: bool, what: &str) {
    wait_for(what, Duration::from_secs(60), || {
        let eas = env.object("eviction-autoscaler.azure.com", "v1", "evictionautoscalers", "demo", "guarded");
        async move { (eas.is_some() == exists).then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_permission_is_reported_without_a_crash_or_a_retry_loop() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.expect_forbidden();
    env.start_product(&["--actioned-namespaces=demo", "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("demo", &[])).await;
    env.protected_workload("demo", "web", 1, 1).await;
    let role = env.get(&["clusterrole", "eviction-autoscaler"]).await.expect("the shipped ClusterRole");
    assert_eq!(role["rules"][0]["resources"], json!(["deployments"]), "rule 0 is about Deployments");
    env.kubectl_ok(&[
        "patch",
        "clusterrole",
        "eviction-autoscaler",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules/0/verbs","value":["get","list","watch"]}]"#,
    ])
    .await;

    let node = env.node_of("demo", "web").await;
    let drain = env.spawn_kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=12s"]);
    let message = env.wait_degraded("demo", "web", "SurgeForbidden").await;
    assert!(message.contains(r#"cannot patch resource "deployments""#), "the apiserver's reason: {message}");
    let event = env.wait_event("demo", "web", "SurgeForbidden", Duration::from_secs(30)).await;
    assert!(event.contains("forbidden"), "{event}");
    let (ok, _) = drain.finish().await;
    assert!(!ok, "without the permission the drain stays blocked");

    let health = env.health_addr;
    let ready = support::http_get(health, "/readyz").await.map(|(code, _)| code);
    assert_eq!(ready, Some(200), "still serving");
    let attempts = env.product_writes_to("deployments");
    assert!((1..=2).contains(&attempts.len()), "refused writes are not retried in a loop: {attempts:?}");
    assert!(env.product_log().contains("forbidden"), "the log says why");
}
