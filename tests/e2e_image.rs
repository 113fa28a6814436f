//! The product image (`make image`, deploy/image/): two builds of one commit are the same bytes;
//! containerd imports it under the name the shipped Deployment asks for and runs it as 65532
//! with no shell inside; skopeo copies it with its digest; and the binary in it serves the
//! shipped install on the real control plane — a blocked drain goes through and the
//! Deployment is put back.

use e2e_support as support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::containerd::Containerd;
use support::metrics::metric_sum;
use support::{ClusterOptions, ClusterShape, Env, PRODUCT_AGENT, repo_root, wait_for};

const MINUTE: Duration = Duration::from_secs(60);
const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// How containerd (and a kubelet reading `image: eviction-autoscaler:0.1.0`) names the image.
const IMAGE: &str = concat!("docker.io/library/eviction-autoscaler:", env!("CARGO_PKG_VERSION"));

/// `make image IMAGE_DIR=dir VARS…`: the archive it wrote.
fn make_image(dir: &Path, vars: &[String]) -> PathBuf {
    let mut make = Command::new("make");
    // The test runner's CARGO_PKG_NAME, CARGO_MANIFEST_DIR… would reach build scripts that
    // watch them (ring's) and rebuild the release binary: make runs with the user's cargo env.
    for (name, _) in std::env::vars()
        .filter(|(k, _)| k.starts_with("CARGO") && k != "CARGO_HOME" && k != "CARGO_TARGET_DIR")
    {
        make.env_remove(name);
    }
    let out = make
        .current_dir(repo_root())
        .args(["--no-print-directory", "image"])
        .arg(format!("IMAGE_DIR={}", dir.display()))
        .args(vars)
        .output()
        .expect("run make");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "make image failed:\n{text}");
    let archive = dir.join(format!("eviction-autoscaler-{VERSION}.oci.tar"));
    assert!(text.contains(&archive.display().to_string()), "make image names the archive it wrote:\n{text}");
    archive
}

/// `skopeo ARGS…`'s output, which must succeed.
fn skopeo(args: &[&str]) -> String {
    let out = Command::new("skopeo").args(args).output().unwrap_or_else(|e| {
        panic!("skopeo: {e} (install Debian's package: apt-get install skopeo)");
    });
    assert!(out.status.success(), "skopeo {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `skopeo inspect [--raw | --config] oci-archive:ARCHIVE` as JSON.
fn inspect(archive: &Path, how: &[&str]) -> Value {
    let reference = format!("oci-archive:{}", archive.display());
    let args: Vec<&str> =
        ["inspect"].into_iter().chain(how.iter().copied()).chain([reference.as_str()]).collect();
    serde_json::from_str(&skopeo(&args)).expect("skopeo prints JSON")
}

fn git(args: &[&str]) -> String {
    let out = Command::new("git").current_dir(repo_root()).args(args).output().expect("git");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn make_image_twice_on_one_commit_gives_the_same_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = make_image(&dir.path().join("a"), &[]);
    // The second from a copy of the binary with another mode and modification time: neither
    // may reach the image.
    let copy = dir.path().join("eviction-autoscaler");
    std::fs::copy(repo_root().join("target/release/eviction-autoscaler"), &copy)
        .expect("copy the release binary");
    let file = std::fs::File::options().write(true).open(&copy).expect("the copy");
    file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000)).expect("set mtime");
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
    let second = make_image(&dir.path().join("b"), &[format!("IMAGE_BINARY={}", copy.display())]);

    let (first_bytes, second_bytes) =
        (std::fs::read(&first).expect("first"), std::fs::read(&second).expect("second"));
    assert!(first_bytes == second_bytes, "two builds of one commit wrote different archives");
    let digest = inspect(&first, &[])["Digest"].clone();
    assert_eq!(inspect(&second, &[])["Digest"], digest);

    // The labels name this version and commit, dated at the commit.
    let labels = &inspect(&first, &[])["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], VERSION);
    let revision = git(&["describe", "--always", "--dirty", "--abbrev=40", "--match=NONE"]);
    assert_eq!(labels["org.opencontainers.image.revision"], revision.as_str());
    let commit_time: i64 = git(&["log", "-1", "--format=%ct"]).parse().expect("commit time");
    let created = jiff::Timestamp::from_second(commit_time).expect("a time").to_string();
    assert_eq!(labels["org.opencontainers.image.created"], created.as_str());
}

#[test]
fn containerd_runs_the_image_as_nonroot_without_a_shell_and_skopeo_keeps_its_digest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archive = make_image(dir.path(), &[]);
    let containerd = Containerd::start();
    assert!(containerd.import(&archive).contains(&IMAGE.to_owned()), "imported as {IMAGE}");

    let config = inspect(&archive, &["--config"]);
    let entrypoint = config["config"]["Entrypoint"][0].as_str().expect("an entrypoint");
    let tunables = format!("GLIBC_TUNABLES={}", eviction_autoscaler_image::GLIBC_TUNABLES);
    assert!(
        config["config"]["Env"].as_array().is_some_and(|env| env.iter().any(|e| *e == *tunables)),
        "the allocator settings are the image's: {}",
        config["config"]["Env"]
    );
    let run = |command: &[&str]| {
        let out = containerd.run(IMAGE, &[], command);
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    };
    assert_eq!(run(&[entrypoint, "--version"]), (true, format!("eviction-autoscaler {VERSION}\n")));
    let (ok, help) = run(&[entrypoint, "--help"]);
    assert!(ok && help.contains("Usage: eviction-autoscaler <COMMAND>"), "{help}");
    // The entrypoint and default command: `run`, which looks for a cluster as user nonroot
    // (HOME from the image's /etc/passwd) and says it found none.
    let (ok, text) = run(&[]);
    assert!(
        !ok && text.contains("cannot find the cluster") && text.contains("/home/nonroot/.kube/config"),
        "{text}"
    );
    let (ok, text) = run(&["/bin/sh", "-c", "true"]);
    assert!(!ok && text.contains("/bin/sh: no such file or directory"), "no shell in the image: {text}");

    // What a push carries: skopeo reads the archive and copies it with the same digest.
    let digest = inspect(&archive, &[])["Digest"].as_str().expect("a digest").to_owned();
    let copy = dir.path().join("copy");
    skopeo(&[
        "copy",
        &format!("oci-archive:{}", archive.display()),
        &format!("oci:{}:{VERSION}", copy.display()),
    ]);
    let index: Value =
        serde_json::from_slice(&std::fs::read(copy.join("index.json")).expect("the copy's index"))
            .expect("JSON");
    assert_eq!(index["manifests"][0]["digest"], digest.as_str());

    // The READMEs state the layer's size (what a node pulls), within 15 %.
    let layer =
        inspect(&archive, &["--raw"])["layers"][0]["size"].as_f64().expect("a layer size") / 1024.0 / 1024.0;
    for readme in ["README.md", "deploy/image/README.md"] {
        let text = std::fs::read_to_string(repo_root().join(readme)).expect("the README");
        let stated: f64 = text
            .split_once(" MiB compressed")
            .and_then(|(before, _)| before.rsplit(|c: char| !c.is_ascii_digit() && c != '.').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{readme} states the image's layer as `N MiB compressed`"));
        assert!(
            (stated - layer).abs() <= layer * 0.15,
            "{readme} says {stated} MiB, the layer is {layer:.1} MiB"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_serves_the_shipped_install_a_blocked_drain_passes_and_the_deployment_is_put_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archive = make_image(dir.path(), &[]);
    let containerd = Containerd::start();
    containerd.import(&archive);
    let entrypoint = inspect(&archive, &["--config"])["config"]["Entrypoint"][0]
        .as_str()
        .expect("an entrypoint")
        .to_owned();

    let options = ClusterOptions { service_network: true, ..ClusterOptions::default() };
    let env = Env::start_with(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }, options).await;
    let objects = env.install(".").await;
    env.project_config();
    let (replica, id) = env
        .start_replica_in_container(&containerd, IMAGE, &entrypoint, &objects, "eviction-autoscaler-a")
        .await;

    // Every process of the container runs as 65532 (real, effective, saved and filesystem ids).
    let pids = containerd.pids(&id);
    assert!(!pids.is_empty(), "the container has a process");
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
        let uid = status.lines().find(|l| l.starts_with("Uid:")).expect("a Uid line");
        assert_eq!(uid.split_whitespace().skip(1).collect::<Vec<_>>(), ["65532"; 4], "{uid}");
    }

    // The self-managed certificate: the image's binary made the Secret and filled the bundle.
    env.wait_bundle_is_the_ca("the caBundle filled by the containerized replica").await;
    env.route_webhook_to(replica.webhook_addr).await;
    env.protected_workload("kube-system", "dns", 1, 1).await;
    let dns = env.record_deployment("kube-system", "dns");
    env.drain(&env.node_of("kube-system", "dns").await).await;
    let requests = replica.metrics().await;
    let evictions =
        metric_sum(&requests, "eviction_autoscaler_webhook_requests_total", &["path=\"/validate-eviction\""]);
    assert!(evictions >= 1.0, "the replica reviewed the evictions");
    assert_eq!(
        env.failed_open_calls(),
        Vec::<Value>::new(),
        "every webhook call succeeded over verified TLS"
    );
    dns.wait_seen("kube-system/dns surged", MINUTE, |s| s.replicas == 2).await;
    wait_for("kube-system/dns put back to 1 replica", 2 * MINUTE, || {
        let last = dns.states().last().map(|s| s.replicas);
        async move { (last == Some(1)).then_some(()) }
    })
    .await;
    let agent = format!("{PRODUCT_AGENT}{VERSION} (eviction-autoscaler-a)");
    assert!(
        env.requests().iter().any(|r| r.user_agent == agent && r.resource == "deployments" && r.succeeded()),
        "the replica in the container scaled the Deployment as {agent}"
    );
}
