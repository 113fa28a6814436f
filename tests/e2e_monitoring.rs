//! The shipped monitoring, checked with Prometheus' own `promtool` (built by `make cluster-build`
//! from the pinned Prometheus module): the PrometheusRule's alerts pass `promtool check rules`
//! and their unit tests (`deploy/components/prometheusrule/alerts_test.yaml`: each alert fires
//! on its symptom, none on a Lease hand-over); every query of the Grafana dashboard parses and
//! names only metrics the real binary's `/metrics` serves on the real control plane.

use e2e_support as support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::metrics::metric_names;
use support::{ClusterShape, Env, cluster, repo_path};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const RULE: &str = "deploy/components/prometheusrule/prometheusrule.yaml";
const RULE_TESTS: &str = "deploy/components/prometheusrule/alerts_test.yaml";
const DASHBOARD: &str = "deploy/components/grafana-dashboard/dashboard.json";

/// Runs the promtool `make cluster-build` built: (success, stdout and stderr).
fn promtool(dir: &Path, args: &[&str]) -> (bool, String) {
    let bin = cluster::bin_dir_of(&cluster::kube_version()).join("promtool");
    assert!(bin.is_file(), "{} is missing: run `make cluster-build`", bin.display());
    let out = Command::new(&bin).args(args).current_dir(dir).output().expect("run promtool");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative)).unwrap_or_else(|e| panic!("read {relative}: {e}"))
}

#[test]
fn the_alerts_pass_promtool_check_and_their_unit_tests() {
    let rule: Value = serde_saphyr::from_str(&read(RULE)).expect("the PrometheusRule is YAML");
    let groups = rule["spec"]["groups"].clone();
    let alerts =
        groups.as_array().expect("groups").iter().flat_map(|g| g["rules"].as_array().unwrap()).count();
    let dir = tempfile::tempdir().expect("temp dir");
    // A rule file is the PrometheusRule's spec (JSON is YAML).
    std::fs::write(dir.path().join("full.yaml"), serde_json::json!({ "groups": groups }).to_string())
        .unwrap();
    let (ok, out) = promtool(dir.path(), &["check", "rules", "full.yaml"]);
    assert!(ok && out.contains(&format!("SUCCESS: {alerts} rules found")), "{out}");

    // The unit tests compare every annotation: they read the rules with `summary` alone.
    let mut summaries = groups.clone();
    for alert in summaries.as_array_mut().unwrap().iter_mut().flat_map(|g| g["rules"].as_array_mut().unwrap())
    {
        let summary = alert["annotations"]["summary"].clone();
        alert["annotations"] = serde_json::json!({ "summary": summary });
    }
    std::fs::write(
        dir.path().join("prometheusrule.yaml"),
        serde_json::json!({ "groups": summaries }).to_string(),
    )
    .unwrap();
    std::fs::write(dir.path().join("alerts_test.yaml"), read(RULE_TESTS)).unwrap();
    let (ok, out) = promtool(dir.path(), &["test", "rules", "alerts_test.yaml"]);
    assert!(ok && out.contains("SUCCESS"), "{out}");
    // Every alert is tested.
    let tests = read(RULE_TESTS);
    for alert in groups.as_array().unwrap().iter().flat_map(|g| g["rules"].as_array().unwrap()) {
        let name = alert["alert"].as_str().expect("an alert");
        assert!(
            tests.contains(&format!("alertname: {name}\n        exp_alerts:")),
            "{name} is tested firing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_parses_and_names_only_metrics_the_product_serves() {
    let dashboard: Value = serde_json::from_str(&read(DASHBOARD)).expect("the dashboard is JSON");
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().expect("targets"))
        .map(|t| t["expr"].as_str().expect("a query").to_owned())
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    for expr in &exprs {
        let (ok, out) = promtool(dir.path(), &["--experimental", "promql", "format", expr]);
        assert!(ok, "{expr} does not parse: {out}");
    }

    let mut env = Env::start(BIN, ClusterShape { nodes: 1, pods_per_node: 10 }).await;
    env.start_product(&[]).await;
    let served = env.metrics().await;
    let sample = |name: &str| {
        served.lines().any(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
    };
    for expr in &exprs {
        for name in metric_names(expr) {
            assert!(sample(name), "{name} (in {expr}) is not in /metrics:\n{served}");
        }
    }
}
