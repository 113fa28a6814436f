//! The webhook as the apiserver sees it during real drains: every eviction is one signal and a
//! server-side dry-run drain is none. (A stopped or killed webhook never blocking a drain is
//! proven on the shipped install: e2e_install.rs.)

use e2e_support as support;

use support::metrics::metric_sum;
use support::{ClusterShape, Env, namespace};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SIGNALS: &str = "eviction_autoscaler_webhook_signals_emitted_total";
const DRY_RUNS: &str = "eviction_autoscaler_webhook_dry_runs_ignored_total";
const REQUESTS: &str = "eviction_autoscaler_webhook_requests_total";

/// Two replicas, one per node, behind a PDB that allows one disruption: drains never block.
async fn env_with_roomy_workload() -> Env {
    let mut env = Env::start(BIN, ClusterShape { nodes: 3, pods_per_node: 110 }).await;
    env.start_product(&["--actioned-namespaces=apps", "--cooldown=2s", "--signal-window=10s"]).await;
    env.apply(&namespace("apps", &[])).await;
    env.protected_workload("apps", "web", 2, 1).await;
    env
}

fn eviction_posts(env: &Env) -> usize {
    env.requests().iter().filter(|r| r.subresource == "eviction" && r.method == "POST").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_signal_per_eviction_and_none_for_a_server_side_dry_run() {
    let env = env_with_roomy_workload().await;
    let node = env.node_of("apps", "web").await;

    let (ok, output) =
        env.kubectl_combined(&["drain", &node, "--ignore-daemonsets", "--dry-run=server"]).await;
    assert!(ok, "dry-run drain: {output}");
    let dry_posts = eviction_posts(&env);
    assert!(dry_posts > 0, "the server-side dry run sends evictions");
    let metrics = env.metrics().await;
    assert_eq!(metric_sum(&metrics, SIGNALS, &[]), 0.0, "a dry run emits no signal");
    assert_eq!(metric_sum(&metrics, DRY_RUNS, &[]), dry_posts as f64, "each dry-run eviction is counted");
    env.kubectl_ok(&["uncordon", &node]).await;

    env.drain(&node).await;
    let real_posts = eviction_posts(&env) - dry_posts;
    assert!(real_posts > 0);
    let metrics = env.metrics().await;
    assert_eq!(metric_sum(&metrics, SIGNALS, &[]), real_posts as f64, "one signal per eviction POST");
    assert_eq!(
        metric_sum(&metrics, REQUESTS, &["path=\"/validate-eviction\""]),
        (dry_posts + real_posts) as f64,
        "every eviction reached the webhook"
    );
}

/// A review larger than the webhook reads (3 MiB; a Deployment padded to the apiserver's own
/// 3 MiB request limit makes one) is answered 413 with the reason over the apiserver's HTTP/2
/// client, which fails open and logs that answer. A reset stream would leave it only a
/// transport error to log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_review_from_the_apiserver_is_answered_413_with_the_reason() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&["--actioned-namespaces=apps"]).await;
    env.apply(&namespace("apps", &[])).await;
    // The request just under the apiserver's limit; the review adds the defaults and its own
    // fields, and goes over the webhook's.
    let limit = 3 * 1024 * 1024;
    let manifest = |padding: usize| {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "huge", "namespace": "apps"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "huge"}},
                "template": {"metadata": {"labels": {"app": "huge"}},
                    "spec": {"containers": [{"name": "c", "image": "x",
                        "env": [{"name": "PADDING", "value": "x".repeat(padding)}]}]}}}
        })
        .to_string()
    };
    let body = manifest(limit - 64 - manifest(0).len());
    assert_eq!(body.len(), limit - 64);
    let file = env.dir.path().join("huge.json");
    std::fs::write(&file, body).expect("write the manifest");
    // Stored or refused afterwards (etcd takes 1.5 MiB): the webhook was called first.
    let path = "/apis/apps/v1/namespaces/apps/deployments";
    let _ = env.kubectl_combined(&["create", "--raw", path, "-f", &file.to_string_lossy()]).await;

    // Each review of the create (the apiserver may try it twice) refused, and the apiserver's
    // log shows our reason: client-go reports a Status body's message, over HTTP/2.
    let log = env.apiserver_log();
    let failed: Vec<&str> =
        log.lines().filter(|l| l.contains("Failed calling webhook, failing open")).collect();
    let metrics = env.metrics().await;
    let too_large =
        metric_sum(&metrics, REQUESTS, &["path=\"/validate-deployment\"", "result=\"too_large\""]);
    assert!(too_large >= 1.0, "the webhook refused the oversized review:\n{metrics}");
    assert_eq!(failed.len() as f64, too_large, "the apiserver failed open on each:\n{}", failed.join("\n"));
    for line in failed {
        assert!(
            line.contains("request body is larger than 3145728 bytes"),
            "the reason reached the apiserver: {line}"
        );
    }
}
