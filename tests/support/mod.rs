//! The one end-to-end harness: the real control plane of `tests/cluster/`
//! ([`cluster::ControlPlane`]), certificates from the real binary, the product's CRD and
//! webhook configuration applied with the real `kubectl`, the real `eviction-autoscaler`
//! binary as a child process, and the apiserver's audit log as the request log. A library
//! crate (`e2e-support`) that every scenario, the component tests against a bare apiserver
//! ([`apiserver`]), the demo and `make cluster` use; none copies it.
//!
//! Adding a scenario: create `tests/e2e_<topic>.rs` (found without editing any list; nextest
//! puts it in the `end-to-end` group) starting with `use e2e_support as support;`.
//! Each test starts its own cluster, `Env::start(BIN, ClusterShape { .. })`, so tests never
//! share nodes, namespaces or drains (the product holds surges while *any* node drains). Then
//! `env.start_product(&flags)`, objects with `env.apply(..)` ([`deployment`], [`pdb`],
//! [`namespace`]), `kubectl` as an operator types it ([`Env::kubectl_combined`], [`Env::sh`]),
//! object histories with [`Env::record_deployment`] (a watch: no state is missed), and the
//! audit log through [`Env::requests`]. Wait with [`wait_for`] and a generous deadline; never
//! sleep and hope. The install tests start theirs with the service network
//! ([`Env::start_with`]), so the apiserver calls the webhook through its shipped Service.
//! `CLUSTER_VERSION=oldest` runs any of them on the oldest supported Kubernetes.
//! `E2E_KEEP_DIRS=1` keeps the logs and the audit log of a failed run.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt;

/// Namespace and name of the webhook Service in `deploy/base/webhook.yaml`.
pub const SERVICE: (&str, &str) = ("eviction-autoscaler", "eviction-autoscaler");
/// The namespace and ServiceAccount the product runs as (deploy/base), under the apiserver's
/// RBAC with the shipped ClusterRole and Role.
pub const PRODUCT_ACCOUNT: (&str, &str) = ("eviction-autoscaler", "eviction-autoscaler");
/// The product's User-Agent prefix: how the request log tells its requests apart.
pub const PRODUCT_AGENT: &str = "eviction-autoscaler/";

/// A cluster, certificates, and at most one product process.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub cluster: cluster::ControlPlane,
    pub bin: PathBuf,
    /// Where the cluster sends admission requests (changed by [`Env::route_webhook_to`]).
    webhook_addr: std::sync::Mutex<SocketAddr>,
    pub health_addr: SocketAddr,
    pub product: Option<Product>,
    products_started: usize,
    /// Whether this test provokes 403s (an admission policy); otherwise any 403 answered to
    /// the product fails the test when the Env is dropped: the shipped RBAC must be enough.
    forbidden_expected: std::sync::atomic::AtomicBool,
}

pub use audit::Request;
pub use cluster::{ClusterOptions, ClusterShape};
#[allow(unused_imports)] // each scenario uses a part
pub use fixtures::{deployment, namespace, pdb};
pub use kubectl::Kubectl;
pub use recorder::{DeploymentState, Recorder, Resource};

/// A loopback address nothing listens on yet (bound then released): where the webhook Service
/// points before a product starts. Products never use it: they bind port 0 and report theirs,
/// since a released port can be taken by a parallel test's process.
pub fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr")
}

impl Env {
    /// Starts the real control plane with `shape` (see [`cluster::ControlPlane::start`]), writes
    /// certificates with the product's `certs` command, and applies the CRD and the webhook
    /// configuration (with its `caBundle`) with kubectl; the webhook is reached at a
    /// `clientConfig.url` on loopback (the Service has no route to a local process).
    pub async fn start(bin: impl Into<PathBuf>, shape: ClusterShape) -> Env {
        Env::start_with(bin, shape, ClusterOptions::default()).await
    }

    /// [`Env::start`] with `options` (the service network that calls the webhook through
    /// its shipped `clientConfig.service`).
    pub async fn start_with(bin: impl Into<PathBuf>, shape: ClusterShape, options: ClusterOptions) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let bare = options.bare;
        let plane = tokio::task::spawn_blocking(move || cluster::ControlPlane::start_with(&shape, &options))
            .await
            .expect("the control plane start does not panic");
        let env = Env::new(dir, plane, bin.into(), free_addr());
        if !bare {
            env.prepare().await;
        }
        env
    }

    fn new(
        dir: tempfile::TempDir,
        cluster: cluster::ControlPlane,
        bin: PathBuf,
        webhook_addr: SocketAddr,
    ) -> Env {
        let env = Env {
            dir,
            cluster,
            bin,
            webhook_addr: std::sync::Mutex::new(webhook_addr),
            health_addr: free_addr(),
            product: None,
            products_started: 0,
            forbidden_expected: Default::default(),
        };
        env.make_certs();
        env
    }

    /// The CRD, namespace, ServiceAccount and RBAC of deploy/base, the product's kubeconfig
    /// and the webhook configuration.
    async fn prepare(&self) {
        for manifest in ["crd", "namespace", "serviceaccount", "rbac"] {
            self.kubectl_ok(&["apply", "-f", &repo_path(&format!("deploy/base/{manifest}.yaml"))]).await;
        }
        self.write_product_kubeconfig();
        self.register_webhook().await;
    }

    /// The product's kubeconfig: a token of the shipped ServiceAccount (which must exist).
    pub fn write_product_kubeconfig(&self) {
        let (namespace, account) = PRODUCT_ACCOUNT;
        self.cluster.write_service_account_kubeconfig(namespace, account, &self.product_kubeconfig());
    }

    /// The admin kubeconfig of the cluster.
    pub fn kubeconfig(&self) -> PathBuf {
        self.cluster.kubeconfig_path()
    }

    /// This test makes the cluster refuse product writes with 403 on purpose.
    pub fn expect_forbidden(&self) {
        self.forbidden_expected.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The kubeconfig the product runs with: the shipped ServiceAccount's token.
    pub fn product_kubeconfig(&self) -> PathBuf {
        self.dir.path().join("product-kubeconfig")
    }

    /// `eviction-autoscaler run` on system-picked ports with the test certificates, as the
    /// shipped ServiceAccount, logging to `log`; start it with [`Product::start`].
    pub fn product_command(&self, log: &Path) -> Command {
        let certs = self.certs_dir();
        let mut cmd = Command::new(&self.bin);
        cmd.arg("run")
            .args(LOCAL_PORTS)
            .arg(format!("--tls-cert-file={}", certs.join("tls.crt").display()))
            .arg(format!("--tls-key-file={}", certs.join("tls.key").display()))
            .env("KUBECONFIG", self.product_kubeconfig())
            // As the shipped Deployment sets it (downward API): the Lease goes there.
            .env("POD_NAMESPACE", PRODUCT_ACCOUNT.0)
            .env("RUST_LOG", "info,eviction_autoscaler=debug,eviction_autoscaler_controller=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log file"));
        cmd
    }

    fn certs_dir(&self) -> PathBuf {
        self.dir.path().join("certs")
    }

    /// The CA that signed the webhook's serving certificate (for `127.0.0.1` and `localhost`).
    pub fn webhook_ca(&self) -> PathBuf {
        self.certs_dir().join("ca.crt")
    }

    /// Where the product's webhook listens (TLS).
    pub fn webhook_addr(&self) -> SocketAddr {
        *self.webhook_addr.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn make_certs(&self) {
        let service_dns = format!("{}.{}.svc", SERVICE.1, SERVICE.0);
        let status = std::process::Command::new(&self.bin)
            .args(["certs", "--out"])
            .arg(self.certs_dir())
            .args(["--dns", &service_dns, "--dns", "localhost", "--ip", "127.0.0.1"])
            .stdout(Stdio::null())
            .status()
            .expect("run eviction-autoscaler certs");
        assert!(status.success(), "eviction-autoscaler certs failed");
    }

    /// Applies `deploy/base/webhook.yaml` with every `caBundle` set to our CA. Without a service
    /// network each webhook's `clientConfig.service` becomes a `url` on loopback at
    /// `webhook_addr`, with the same path.
    pub async fn register_webhook(&self) {
        use base64::Engine as _;
        let text =
            std::fs::read_to_string(repo_path("deploy/base/webhook.yaml")).expect("deploy/base/webhook.yaml");
        let mut config: Value = serde_saphyr::from_str(&text).expect("webhook.yaml is YAML");
        let ca = std::fs::read(self.certs_dir().join("ca.crt")).expect("ca.crt");
        let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
        for hook in config["webhooks"].as_array_mut().expect("webhooks") {
            let client = &mut hook["clientConfig"];
            client["caBundle"] = Value::String(bundle.clone());
            if !self.cluster.has_service_network() {
                let path = client["service"]["path"].as_str().unwrap_or("/").to_owned();
                let addr = *self.webhook_addr.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                client["url"] = Value::String(format!("https://{addr}{path}"));
                client.as_object_mut().expect("clientConfig").remove("service");
            }
        }
        self.apply_json(&config).await;
    }

    /// Points the webhook at `addr`: the Service's ClusterIP (service network), or the
    /// apiserver's `clientConfig.url`s.
    pub async fn route_webhook_to(&self, addr: SocketAddr) {
        *self.webhook_addr.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = addr;
        if self.cluster.has_service_network() {
            let service =
                self.object("", "v1", "services", SERVICE.0, SERVICE.1).expect("the webhook Service");
            let ip: std::net::IpAddr =
                service["spec"]["clusterIP"].as_str().and_then(|ip| ip.parse().ok()).expect("a ClusterIP");
            // The apiserver dials it only if the webhook configuration names a port of the Service.
            self.cluster.route_service((ip, cluster::SERVICE_PORT).into(), addr);
        } else {
            self.register_webhook().await;
        }
    }

    /// Removes the webhook configuration (the apiserver then calls nothing).
    pub async fn unregister_webhook(&self) {
        self.kubectl_ok(&["delete", "validatingwebhookconfiguration", "eviction-autoscaler"]).await;
    }

    /// Starts the product (`run`) with test-friendly defaults plus `extra` flags, waits until
    /// `/readyz` answers 200, and points the webhook Service at it.
    pub async fn start_product(&mut self, extra: &[&str]) {
        // A previous process stops first: one product at a time is `Env::product`.
        self.product = None;
        self.products_started += 1;
        let log = self.dir.path().join(format!("product-{}.log", self.products_started));
        let mut cmd = self.product_command(&log);
        cmd.args(extra);
        let product = Product::start(cmd, log).await;
        self.health_addr = product.health_addr;
        self.route_webhook_to(product.webhook_addr).await;
        self.product = Some(product);
    }

    /// Runs kubectl against the cluster with a private HOME and discovery cache.
    pub async fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None).await
    }

    /// Runs kubectl with stderr merged into stdout, in the order kubectl wrote them (what an
    /// operator sees in a terminal): (success, text).
    pub async fn kubectl_combined(&self, args: &[&str]) -> (bool, String) {
        let mut full = vec!["-c", "exec kubectl \"$@\" 2>&1", "kubectl"];
        full.extend_from_slice(args);
        let out = self.command("sh", &full, None).await;
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `script` with `sh` as an operator would type it (kubectl as [`Env::kubectl`] runs
    /// it), stderr merged into stdout: (success, text).
    pub async fn sh(&self, script: &str) -> (bool, String) {
        let out = self.command("sh", &["-c", &format!("exec 2>&1\n{script}")], None).await;
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    async fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        self.command("kubectl", args, stdin).await
    }

    async fn command(&self, program: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = tokio::process::Command::new(program);
        self.kubectl_runner()
            .apply(cmd.as_std_mut())
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl on PATH");
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input).await.expect("write kubectl stdin");
        }
        child.wait_with_output().await.expect("kubectl runs")
    }

    /// kubectl of the control plane's version (built with it), with the cluster's admin
    /// kubeconfig and the test's private HOME.
    pub fn kubectl_runner(&self) -> Kubectl {
        Kubectl::new(&self.kubeconfig(), &self.dir.path().join("home")).first_on_path(self.cluster.bin_dir())
    }

    /// Runs kubectl and fails the test with its stderr if it fails; returns stdout.
    pub async fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert!(
            out.status.success(),
            "kubectl {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -f -` of YAML or JSON text.
    pub async fn apply(&self, manifest: &str) {
        let out = self.kubectl_with_stdin(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
        assert!(out.status.success(), "kubectl apply failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    async fn apply_json(&self, object: &Value) {
        self.apply(&object.to_string()).await;
    }

    /// An object as JSON (`kubectl get -o json`), or None when it does not exist.
    pub async fn get(&self, args: &[&str]) -> Option<Value> {
        let mut full = vec!["get", "-o", "json"];
        full.extend_from_slice(args);
        let out = self.kubectl(&full).await;
        out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("kubectl -o json"))
    }

    /// Every request the apiserver has seen (its audit log), in order of arrival.
    pub fn requests(&self) -> Vec<Request> {
        self.cluster.requests()
    }

    /// The apiserver's audit events (JSON), in order of arrival.
    pub fn audit_events(&self) -> Vec<Value> {
        self.cluster.audit_events()
    }

    /// The apiserver's log so far (why a webhook call failed, for one).
    pub fn apiserver_log(&self) -> String {
        self.cluster.log("kube-apiserver")
    }

    /// Admission webhook calls that failed and were let through (`failurePolicy: Ignore`):
    /// the audit events the apiserver annotates `failed-open…`.
    pub fn failed_open_calls(&self) -> Vec<Value> {
        self.audit_events()
            .into_iter()
            .filter(|e| {
                e["annotations"].as_object().is_some_and(|a| a.keys().any(|k| k.starts_with("failed-open")))
            })
            .collect()
    }

    /// Writes (create/update/patch/delete) made by the product.
    pub fn product_writes(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT) && r.is_write())
            .collect()
    }

    /// The product's log so far (for failure messages).
    pub fn product_log(&self) -> String {
        self.product.as_ref().map(Product::log).unwrap_or_default()
    }

    /// The product's `/metrics` text.
    pub async fn metrics(&self) -> String {
        http_get(self.health_addr, "/metrics").await.map(|(_, body)| body).unwrap_or_default()
    }
}

/// Flags that let the system pick the product's ports (reported in its log).
pub const LOCAL_PORTS: [&str; 2] = ["--webhook-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0"];

/// The product as a child process on the ports it reported; stopped with SIGTERM when dropped.
pub struct Product {
    pub child: Child,
    pub log: PathBuf,
    pub webhook_addr: SocketAddr,
    pub health_addr: SocketAddr,
}

impl Product {
    /// Spawns `cmd` (run with [`LOCAL_PORTS`], logging to `log`), reads the addresses it
    /// listens on from its log, and waits for its `/readyz` to answer 200. Fails the test
    /// with the log if the process exits or is not ready within a minute.
    pub async fn start(mut cmd: Command, log: PathBuf) -> Product {
        let mut child = cmd.spawn().expect("spawn eviction-autoscaler");
        let deadline = Instant::now() + Duration::from_secs(60);
        let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
        let (webhook_addr, health_addr) = loop {
            let text = read_log();
            if let (Some(webhook), Some(health)) =
                (listening_addr(&text, "webhook listening"), listening_addr(&text, "health listening"))
            {
                break (webhook, health);
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the product exited ({status}) before listening:\n{}", read_log());
            }
            assert!(Instant::now() < deadline, "the product never listened:\n{}", read_log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let product = Product { child, log, webhook_addr, health_addr };
        while http_get(health_addr, "/readyz").await.is_none_or(|(code, _)| code != 200) {
            assert!(Instant::now() < deadline, "the product never became ready:\n{}", product.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        product
    }

    /// Its log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its `/metrics` text (empty when unreachable).
    pub async fn metrics(&self) -> String {
        http_get(self.health_addr, "/metrics").await.map(|(_, body)| body).unwrap_or_default()
    }

    /// Sends `signal` (e.g. "TERM", "KILL", "STOP", "CONT") to the process.
    pub fn signal(&self, signal: &str) {
        let _ = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status();
    }
}

/// Set to keep every test directory (product logs, certificates; the control plane's logs and
/// audit log) for a look after the test: their paths are printed.
pub const KEEP_DIRS: &str = "E2E_KEEP_DIRS";

impl Drop for Env {
    fn drop(&mut self) {
        // The product stops while the cluster still answers (its Lease released, a clean
        // shutdown), not after: fields drop in order, and the cluster comes first.
        self.product = None;
        if std::env::var_os(KEEP_DIRS).is_some() {
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
            eprintln!("test files kept in {}", dir.keep().display());
        }
        if std::thread::panicking() {
            return;
        }
        let requests = self.requests();
        // Every kind of request the product makes is listed: a new one is a reviewed change.
        let unlisted = audit::unlisted_product_requests(&requests, PRODUCT_AGENT);
        if std::env::var_os(audit::RECORD_PRODUCT_REQUESTS).is_some() {
            audit::record_product_requests(&unlisted);
        } else {
            assert!(
                unlisted.is_empty(),
                "the product made requests of kinds {} does not list (review the RBAC and load each needs, then add it): {unlisted:#?}",
                audit::PRODUCT_REQUESTS
            );
        }
        if self.forbidden_expected.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let forbidden: Vec<String> = requests
            .into_iter()
            .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT) && r.code == 403)
            .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
            .collect();
        assert!(forbidden.is_empty(), "the shipped RBAC refused product requests: {forbidden:#?}");
    }
}

impl Drop for Product {
    /// SIGTERM (a clean shutdown releases the Lease), then waits for the exit; a process still
    /// there after 15 s is killed by a timer thread.
    fn drop(&mut self) {
        self.signal("CONT");
        self.signal("TERM");
        let (exited, wait) = std::sync::mpsc::channel::<()>();
        let pid = self.child.id().to_string();
        std::thread::spawn(move || {
            if wait.recv_timeout(Duration::from_secs(15)) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                let _ = Command::new("kill").args(["-KILL", &pid]).status();
            }
        });
        let _ = self.child.wait();
        let _ = exited.send(());
    }
}

/// The `addr=` of the first log line containing `what` (the product logs the bound address).
fn listening_addr(log: &str, what: &str) -> Option<SocketAddr> {
    let line = log.lines().find(|l| l.contains(what))?;
    line.split_once("addr=")?.1.split_whitespace().next()?.parse().ok()
}

/// Polls `check` every 200 ms until it yields a value, or fails the test after `timeout`
/// naming what it waited for.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A plain-HTTP GET: (status code, body), or None when nothing answers.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    http_get_on(stream, addr, path).await
}

/// `GET path` on a connection already made to `addr`.
pub async fn http_get_on(
    mut stream: tokio::net::TcpStream,
    addr: SocketAddr,
    path: &str,
) -> Option<(u16, String)> {
    use tokio::io::AsyncReadExt;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Some((code, body))
}

/// The repository's root (this crate is `tests/support/`).
pub fn repo_root() -> &'static Path {
    let support = Path::new(env!("CARGO_MANIFEST_DIR"));
    support.parent().and_then(Path::parent).expect("tests/support is two levels down")
}

/// A path inside the repository.
pub fn repo_path(relative: &str) -> String {
    repo_root().join(relative).display().to_string()
}

pub mod apiserver;
pub mod audit;
pub mod autoscalers;
pub mod cert_manager;
pub mod cluster;
pub mod containerd;
mod credentials;
pub mod extra;
pub mod fixtures;
pub mod go_project;
pub mod helm;
pub mod install;
pub mod keda;
pub mod kubectl;
pub mod metrics;
pub mod netns;
pub mod pdbs;
pub mod rbac;
pub mod recorder;
pub mod scenario;
pub mod stalled;
pub mod webhook;
