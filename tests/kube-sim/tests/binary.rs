//! The `kube-sim` binary: flags, seeding, the ready line, kubectl against it, clean SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn seeds_prints_ready_serves_kubectl_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).expect("mkdir");
    std::fs::write(
        seed_dir.join("a.yaml"),
        format!("---\n{}---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: from-list\n    namespace: team-a\n", common::deployment_yaml("web", 2)),
    )
    .expect("write seed");
    std::fs::write(
        seed_dir.join("b.json"),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"}}"#,
    )
    .expect("write seed");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--seed")
        .arg(&seed_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kube-sim starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("ready line");
    assert!(line.starts_with("kube-sim ready https://127.0.0.1:"), "{line}");

    let kubectl = common::Kubectl::new(&kubeconfig, &dir.path().join("home"));
    let run = |args: &[&str]| kubectl.command().args(args).output().expect("kubectl runs");
    let out = run(&["get", "configmap", "from-list", "-n", "team-a", "-o", "name"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/from-list",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["get", "deployments,nodes", "-A", "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "deployment.apps/web\nnode/node-1");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            assert!(exit.success(), "kube-sim exits cleanly on SIGTERM: {exit:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "kube-sim did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_seed_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = dir.path().join("bad.yaml");
    std::fs::write(&seed, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("--seed")
        .arg(&seed)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Widget /w: no resource is served for apiVersion \"example.com/v1\" kind \"Widget\""),
        "{stderr}"
    );
}
