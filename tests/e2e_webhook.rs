//! The webhook as the apiserver sees it during real drains: every eviction is one signal and a
//! server-side dry-run drain is none; an oversized review is answered 413 with its reason to
//! every HTTP/2 client that meets it (the apiserver's, Go's net/http, curl). (A stopped or killed webhook never blocking a drain is
//! proven on the shipped install: e2e_install.rs.)

use std::path::Path;
use std::process::Command;

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

/// The answer to `body` POSTed by curl over HTTP/2 (nghttp2; Debian's 7.88 reports a reset
/// stream as an error even after a complete answer): "CODE PROTOCOL" and the body.
fn curl_post(ca: &Path, url: &str, body: &Path) -> String {
    let out = Command::new("curl")
        .args(["--http2", "--silent", "--show-error", "--cacert"])
        .arg(ca)
        .args(["-H", "Content-Type: application/json", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .args(["--write-out", "\n%{http_code} HTTP/%{http_version}", url])
        .output()
        .expect("run curl (Debian package curl)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "curl failed on {url}: {stderr}\n{stdout}");
    let (answer, status) = stdout.rsplit_once('\n').unwrap_or_default();
    format!("{status}\n{answer}")
}

/// The same, by Go's net/http (`tests/support/h2post`), the apiserver's HTTP/2 client.
fn go_post(ca: &Path, url: &str, body: &Path) -> String {
    let out = Command::new("go")
        .args(["run", "."])
        .arg(ca)
        .arg(url)
        .arg(body)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/h2post"))
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("run go (the Go toolchain the control plane is built with)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Go's client failed on {url}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.trim_end().to_owned()
}

/// curl and Go's net/http, over HTTP/2, each get the 413 and its reason on both review paths,
/// from the real binary: the webhook reads what is left of an oversized body before it
/// answers, so no client is answered with a reset stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_review_over_http2_is_answered_413_to_curl_and_go() {
    let mut env = Env::start(BIN, ClusterShape::default()).await;
    env.start_product(&[]).await;
    let body = env.dir.path().join("oversized.json");
    std::fs::write(&body, format!("{{\"padding\": \"{}\"}}", "x".repeat(4 * 1024 * 1024))).expect("write");
    let (ca, addr) = (env.webhook_ca(), env.webhook_addr());
    for path in ["/validate-eviction", "/validate-deployment"] {
        let url = format!("https://127.0.0.1:{}{path}", addr.port());
        for (client, answer) in [("curl", curl_post(&ca, &url, &body)), ("Go", go_post(&ca, &url, &body))] {
            let (status, reason) = answer.split_once('\n').unwrap_or((&answer, ""));
            assert!(status.starts_with("413 HTTP/2"), "{client} on {path}: {answer}");
            assert!(
                reason.contains("request body is larger than 3145728 bytes"),
                "{client} on {path} reads the reason: {answer}"
            );
        }
    }
}
