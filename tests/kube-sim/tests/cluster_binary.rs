//! The `kube-sim` binary with the cluster-behaviour flags.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kubectl(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = common::Kubectl::new(&dir.join("kubeconfig"), &dir.join("home"))
        .command()
        .args(args)
        .output()
        .expect("kubectl runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn nodes_flag_runs_a_cluster_whose_pods_become_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--listen", "127.0.0.1:0", "--nodes", "2", "--pods-per-node", "7", "--pod-ready-delay", "1s"])
        .args([
            "--termination-grace-scale",
            "0.05",
            "--service-endpoint",
            "guard/guard-webhook=127.0.0.1:9443",
        ])
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kube-sim starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("ready line");
    assert!(line.starts_with("kube-sim ready https://127.0.0.1:"), "{line}");

    let (code, out) = kubectl(
        dir.path(),
        &["get", "nodes", "-o", "jsonpath={.items[*].metadata.name} {.items[0].status.allocatable.pods}"],
    );
    assert_eq!((code, out.as_str()), (0, "node-1 node-2 7"));
    let deploy = dir.path().join("web.yaml");
    std::fs::write(&deploy, common::deployment_yaml("web", 2)).expect("write");
    let (code, _) = kubectl(dir.path(), &["apply", "-f", deploy.to_str().expect("utf-8")]);
    assert_eq!(code, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, ready) =
            kubectl(dir.path(), &["get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}"]);
        if ready == "2" {
            break;
        }
        assert!(Instant::now() < deadline, "the deployment never became ready (readyReplicas {ready:?})");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_malformed_service_endpoint_is_rejected_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--listen", "127.0.0.1:0", "--nodes", "1", "--service-endpoint", "guard-webhook:9443"])
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .output()
        .expect("kube-sim runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NAMESPACE/NAME=HOST:PORT"), "{stderr}");
}
