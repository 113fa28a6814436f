//! The real control plane (`tests/cluster/`): etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler and kwok (the kubelets), built from their published Go modules by
//! `tests/cluster/build.sh` into `target/cluster/<version>/`, started on loopback for one test
//! and stopped by PID when dropped.
//!
//! Real settings, as a cluster an operator runs: RBAC + Node authorization, the default
//! admission plugins (webhooks included), a ServiceAccount issuer and signing key (TokenRequest
//! and `kubectl create token` work), static-token users, and an audit log (JSON lines) that
//! serves as the request log. The controllers act as their own ServiceAccounts
//! (`--use-service-account-credentials`), as kubeadm sets them up.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::audit::{self, AUDIT_POLICY};
use super::credentials::{kubeconfig, random_token, write_pki};
use super::kubectl::Kubectl;
use super::netns::ServiceNetwork;
use serde_json::{Value, json};

/// Controllers the tests rely on: workloads, PDB status, garbage collection, namespaces,
/// ServiceAccounts and their tokens, node health (nodes keep their not-ready taint without
/// it), endpoints, the root CA ConfigMap, Jobs, HPAs, and the aggregated admin/edit/view roles.
const CONTROLLERS: &str = "deployment-controller,replicaset-controller,disruption-controller,\
garbage-collector-controller,namespace-controller,serviceaccount-controller,\
serviceaccount-token-controller,node-lifecycle-controller,endpointslice-controller,\
root-ca-certificate-publisher-controller,job-controller,horizontal-pod-autoscaler-controller,\
clusterrole-aggregation-controller";

/// The Services' ClusterIP range.
const SERVICE_CIDR: &str = "10.96.0.0/16";
/// The Service port the service network proxies for the apiserver: the webhook's, as deploy/
/// ships it.
pub const SERVICE_PORT: u16 = 443;
/// The metrics Service's port (deploy/base/metrics-service.yaml), which tests read through.
pub const METRICS_SERVICE_PORT: u16 = 8080;

/// The admin user of the static token file (group `system:masters`).
pub const ADMIN_USER: &str = "admin";

/// How many nodes, and how many pods each holds.
#[derive(Clone, Debug)]
pub struct ClusterShape {
    pub nodes: usize,
    pub pods_per_node: usize,
}

impl Default for ClusterShape {
    fn default() -> Self {
        Self { nodes: 3, pods_per_node: 110 }
    }
}

/// How a control plane is set up besides its [`ClusterShape`].
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    /// Runs the control plane in a network namespace where Service ClusterIPs lead to backends
    /// the test names ([`ControlPlane::route_service`]), so webhooks configured with
    /// `clientConfig.service` are called as shipped (see `netns.rs`).
    pub service_network: bool,
    /// The controller-manager's and scheduler's `--kube-api-qps` (burst twice that); 100 when
    /// unset. Their own defaults (20/30, 50/100) create and bind ~40 pods a second, so a
    /// cluster of tens of thousands of pods needs more.
    pub component_qps: Option<u32>,
    /// Nothing of the product installed beforehand (its CRD, namespace, RBAC, webhook): the
    /// test installs it (the Helm chart, which refuses objects it does not own), then calls
    /// [`super::Env::write_product_kubeconfig`].
    pub bare: bool,
    /// etcd and kube-apiserver only: no controllers, scheduler or kubelets, and no nodes (the
    /// component tests of [`super::apiserver`] state every object, status included).
    pub apiserver_only: bool,
}

/// Where the control plane's binaries of `version` are: `$CLUSTER_BIN_DIR` (for the default
/// version), else `target/cluster/<version>/`.
pub fn bin_dir_of(version: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("CLUSTER_BIN_DIR").filter(|_| version == kube_version()) {
        return dir.into();
    }
    super::repo_root().join("target/cluster").join(version)
}

/// The version a control plane runs: `$CLUSTER_VERSION` (a version,
/// or `oldest` for `OLDEST_KUBE_VERSION`; `make test` runs the core scenarios so on the oldest
/// supported version), else `KUBE_VERSION`.
pub fn version_to_run() -> String {
    match std::env::var("CLUSTER_VERSION").ok().filter(|v| !v.is_empty()).as_deref() {
        Some("oldest") => oldest_kube_version(),
        Some(version) => version.to_owned(),
        None => kube_version(),
    }
}

/// `KUBE_VERSION` from `tests/cluster/versions.env`: the one place the version is set.
pub fn kube_version() -> String {
    version_setting("KUBE_VERSION")
}

/// `OLDEST_KUBE_VERSION`: the oldest Kubernetes the product supports.
pub fn oldest_kube_version() -> String {
    version_setting("OLDEST_KUBE_VERSION")
}

fn version_setting(key: &str) -> String {
    let path = super::repo_root().join("tests/cluster/versions.env");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| panic!("{} sets no {key}", path.display()))
}

/// A running control plane.
pub struct ControlPlane {
    dir: tempfile::TempDir,
    /// Its binaries (`target/cluster/<version>/`).
    bins: PathBuf,
    /// Started processes, in start order (stopped in reverse).
    processes: Vec<(&'static str, Child)>,
    /// Where the components run when [`ClusterOptions::service_network`] is set.
    network: Option<ServiceNetwork>,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// PEM of the CA that signed the apiserver's serving certificate.
    pub ca_pem: String,
    tokens: Vec<(String, String)>,
}

impl ControlPlane {
    /// Starts etcd, the apiserver, the controller-manager, the scheduler and kwok with `shape`
    /// nodes, and waits until `/readyz` is green and every node is Ready and untainted. A port
    /// taken by a parallel test between picking and binding is retried with new ports.
    pub fn start(shape: &ClusterShape) -> ControlPlane {
        Self::start_with(shape, &ClusterOptions::default())
    }

    /// [`ControlPlane::start`] with `options`.
    pub fn start_with(shape: &ClusterShape, options: &ClusterOptions) -> ControlPlane {
        let bins = bin_dir_of(&version_to_run());
        for bin in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"]
        {
            assert!(
                bins.join(bin).is_file(),
                "{} is missing: build the control plane first (`make cluster-build`, tests/cluster/build.sh)",
                bins.join(bin).display()
            );
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::try_start(shape, options, &bins) {
                Ok(plane) => return plane,
                Err(e) if attempt < 3 && e.contains("address already in use") => continue,
                Err(e) => panic!("the control plane did not start: {e}"),
            }
        }
    }

    fn try_start(
        shape: &ClusterShape,
        options: &ClusterOptions,
        bins: &Path,
    ) -> Result<ControlPlane, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let pki = write_pki(dir.path());
        let tokens: Vec<(String, String)> =
            ["admin", "system:kube-controller-manager", "system:kube-scheduler", "kwok"]
                .iter()
                .map(|user| ((*user).to_owned(), random_token()))
                .collect();
        let token_file: String = tokens
            .iter()
            .map(|(user, token)| {
                let groups = if user == ADMIN_USER || user == "kwok" { "system:masters" } else { "" };
                format!("{token},{user},{user},\"{groups}\"\n")
            })
            .collect();
        write(&dir.path().join("tokens.csv"), &token_file);
        write(&dir.path().join("audit-policy.yaml"), AUDIT_POLICY);
        let [etcd_port, peer_port, api_port] = free_ports();
        let server = format!("https://127.0.0.1:{api_port}");
        let mut plane = ControlPlane {
            dir,
            bins: bins.to_owned(),
            processes: Vec::new(),
            network: None,
            server,
            ca_pem: pki.ca_pem,
            tokens,
        };
        if options.service_network {
            plane.enter_service_network(api_port)?;
        }
        let d = plane.dir.path().to_owned();
        let path = |name: &str| d.join(name).display().to_string();
        let qps = options.component_qps.unwrap_or(100);
        let (qps, burst) = (format!("--kube-api-qps={qps}"), format!("--kube-api-burst={}", qps * 2));

        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        plane.spawn(
            "etcd",
            &[
                "--name=default",
                &format!("--data-dir={}", path("etcd")),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=default={peer_url}"),
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )?;
        plane.wait("etcd /health", Duration::from_secs(30), |p| {
            p.dial(([127, 0, 0, 1], etcd_port).into()).is_ok_and(|s| http_ok(s, "/health"))
        })?;

        plane.spawn(
            "kube-apiserver",
            &[
                &format!("--etcd-servers={etcd_url}"),
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                // A loopback advertise address stops the default reconciler at start.
                "--endpoint-reconciler-type=none",
                &format!("--secure-port={api_port}"),
                &format!("--tls-cert-file={}", path("apiserver.crt")),
                &format!("--tls-private-key-file={}", path("apiserver.key")),
                &format!("--client-ca-file={}", path("ca.crt")),
                &format!("--token-auth-file={}", path("tokens.csv")),
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                &format!("--service-account-key-file={}", path("sa.pub")),
                &format!("--service-account-signing-key-file={}", path("sa.key")),
                &format!("--service-cluster-ip-range={SERVICE_CIDR}"),
                &format!("--audit-policy-file={}", path("audit-policy.yaml")),
                &format!("--audit-log-path={}", path("audit.log")),
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                // 0 is not "never": the log rotates at 100 MB then (lumberjack's default), and
                // readers of audit.log lost the start of a 5,000-Deployment bench.
                "--audit-log-maxsize=1000000",
                "--allow-privileged=true",
                "--profiling=false",
            ],
        )?;
        plane.write_kubeconfig("admin.kubeconfig", ADMIN_USER);
        plane.wait("kube-apiserver /readyz", Duration::from_secs(120), |p| {
            p.kubectl(&["get", "--raw", "/readyz"]).is_ok_and(|out| out.trim() == "ok")
        })?;
        if options.apiserver_only {
            return Ok(plane);
        }

        let kcm = plane.write_kubeconfig("kcm.kubeconfig", "system:kube-controller-manager");
        plane.spawn(
            "kube-controller-manager",
            &[
                &format!("--kubeconfig={}", kcm.display()),
                &format!("--controllers={CONTROLLERS}"),
                "--use-service-account-credentials=true",
                &format!("--service-account-private-key-file={}", path("sa.key")),
                &format!("--root-ca-file={}", path("ca.crt")),
                "--leader-elect=false",
                "--secure-port=0",
                // Keeps replicas within min/max every 2 s, even without metrics.
                "--horizontal-pod-autoscaler-sync-period=2s",
                &qps,
                &burst,
            ],
        )?;
        let scheduler = plane.write_kubeconfig("scheduler.kubeconfig", "system:kube-scheduler");
        plane.spawn(
            "kube-scheduler",
            &[
                &format!("--kubeconfig={}", scheduler.display()),
                "--leader-elect=false",
                "--secure-port=0",
                &qps,
                &burst,
            ],
        )?;

        plane.create_nodes(shape)?;
        let kwok = plane.write_kubeconfig("kwok.kubeconfig", "kwok");
        let stages = plane.bins.join("kwok-stages.yaml");
        plane.spawn(
            "kwok",
            &[
                &format!("--kubeconfig={}", kwok.display()),
                &format!("--config={}", stages.display()),
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=40",
                "--server-address=",
            ],
        )?;
        let nodes = shape.nodes;
        plane.wait("every node Ready and untainted", Duration::from_secs(120), |p| {
            let Ok(out) = p.kubectl(&["get", "nodes", "-o", "json"]) else { return false };
            let list: Value = serde_json::from_str(&out).unwrap_or_default();
            let items = list["items"].as_array().cloned().unwrap_or_default();
            items.len() == nodes
                && items.iter().all(|n| {
                    let ready = n["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
                    ready && n["spec"]["taints"].as_array().is_none_or(Vec::is_empty)
                })
        })?;
        // Pods need their namespace's `default` ServiceAccount; the first test namespace would
        // otherwise race the controller that makes it.
        plane.wait("the default ServiceAccount", Duration::from_secs(60), |p| {
            p.kubectl(&["get", "serviceaccount", "default", "-n", "default"]).is_ok()
        })?;
        Ok(plane)
    }

    /// Starts the network namespace the components will run in, kube-proxy's part for
    /// [`SERVICE_PORT`], and the forward of the host's `api_port` to the apiserver inside.
    fn enter_service_network(&mut self, api_port: u16) -> Result<(), String> {
        self.spawn_command("netns", Command::new("unshare").args(["--net", "sleep", "infinity"]))?;
        let network = ServiceNetwork::new(&self.processes[0].1, SERVICE_CIDR)?;
        for port in [SERVICE_PORT, METRICS_SERVICE_PORT] {
            network.proxy_services(port).map_err(|e| format!("kube-proxy's listener on :{port}: {e}"))?;
        }
        // Racing a parallel test for the port is retried like any clash.
        let listener = std::net::TcpListener::bind(("127.0.0.1", api_port))
            .map_err(|e| format!("forward 127.0.0.1:{api_port}: {e}: address already in use"))?;
        network.forward_in(listener, ([127, 0, 0, 1], api_port).into());
        self.network = Some(network);
        Ok(())
    }

    /// Sends connections to Service address `service` (`ClusterIP:port`) to `backend` on the
    /// host's loopback. Needs [`ClusterOptions::service_network`].
    pub fn route_service(&self, service: std::net::SocketAddr, backend: std::net::SocketAddr) {
        self.network
            .as_ref()
            .expect("a control plane started with a service network")
            .route(service, backend);
    }

    /// A connection to Service address `service` (`ClusterIP:port`) as a pod would make it:
    /// from inside the service network, through its kube-proxy.
    pub fn connect_service(&self, service: std::net::SocketAddr) -> std::io::Result<std::net::TcpStream> {
        self.network.as_ref().expect("a control plane started with a service network").connect(service)
    }

    /// Whether Services are routed ([`ClusterOptions::service_network`]).
    pub fn has_service_network(&self) -> bool {
        self.network.is_some()
    }

    /// Its binaries' directory (kubectl of its version included).
    pub fn bin_dir(&self) -> &Path {
        &self.bins
    }

    /// A connection to `addr` where the components run.
    fn dial(&self, addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpStream> {
        match &self.network {
            Some(network) => network.connect(addr),
            None => std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)),
        }
    }

    /// The admin kubeconfig (user `admin`, group `system:masters`).
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// The audit log file.
    pub fn audit_log_path(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// Writes a kubeconfig for `user` of the static token file; returns its path.
    fn write_kubeconfig(&self, name: &str, user: &str) -> PathBuf {
        let token = &self.tokens.iter().find(|(u, _)| u == user).expect("a token user").1;
        let path = self.dir.path().join(name);
        write(&path, &kubeconfig(&self.server, &self.ca_pem, user, token));
        path
    }

    /// Writes a kubeconfig at `path` that authenticates as ServiceAccount `namespace/account`
    /// with a token from the TokenRequest API (`kubectl create token`), valid for a day.
    pub fn write_service_account_kubeconfig(&self, namespace: &str, account: &str, path: &Path) {
        let token = self
            .kubectl(&["create", "token", account, "-n", namespace, "--duration=24h"])
            .unwrap_or_else(|e| panic!("kubectl create token {namespace}/{account}: {e}"));
        let user = format!("system:serviceaccount:{namespace}:{account}");
        write(path, &kubeconfig(&self.server, &self.ca_pem, &user, token.trim()));
    }

    /// What the kubelet projects into a pod of `account` at
    /// `/var/run/secrets/kubernetes.io/serviceaccount` (a bound token, the cluster's CA, the
    /// namespace), written to `dir`; returns the `KUBERNETES_SERVICE_HOST` and `_PORT` a pod
    /// reaching this apiserver gets.
    pub fn write_service_account_volume(
        &self,
        namespace: &str,
        account: &str,
        dir: &Path,
    ) -> (String, String) {
        let token = self
            .kubectl(&["create", "token", account, "-n", namespace, "--duration=24h"])
            .unwrap_or_else(|e| panic!("kubectl create token {namespace}/{account}: {e}"));
        std::fs::create_dir_all(dir).expect("service account volume");
        write(&dir.join("token"), token.trim());
        write(&dir.join("ca.crt"), &self.ca_pem);
        write(&dir.join("namespace"), namespace);
        let address = self.server.trim_start_matches("https://");
        let (host, port) = address.rsplit_once(':').expect("the server URL has a port");
        (host.to_owned(), port.to_owned())
    }

    /// Every audit event so far, in the order the apiserver received the requests.
    pub fn audit_events(&self) -> Vec<Value> {
        audit::events(&self.audit_log_path())
    }

    /// The audit log as request records ([`audit::requests`]).
    pub fn requests(&self) -> Vec<super::Request> {
        audit::requests(&self.audit_events())
    }

    /// Runs this version's kubectl as admin: stdout, or stdout and stderr as the error.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = Kubectl::new(&self.kubeconfig_path(), &self.dir.path().join("kubectl-home"))
            .first_on_path(&self.bins)
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run {}: {e}", self.bins.join("kubectl").display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!("kubectl {}: {stdout}{}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Nodes `node-1` … `node-N`, managed by kwok (its annotation), each holding
    /// `pods_per_node` pods.
    fn create_nodes(&self, shape: &ClusterShape) -> Result<(), String> {
        let nodes: Vec<Value> = (1..=shape.nodes)
            .map(|i| {
                let name = format!("node-{i}");
                let capacity = json!({"cpu": "32", "memory": "256Gi", "pods": shape.pods_per_node.to_string()});
                json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {
                        "name": name,
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                        "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}
                    },
                    "status": {"capacity": capacity, "allocatable": capacity}
                })
            })
            .collect();
        let file = self.dir.path().join("nodes.json");
        write(&file, &json!({"apiVersion": "v1", "kind": "List", "items": nodes}).to_string());
        self.kubectl(&["create", "-f", &file.display().to_string()]).map(drop)
    }

    /// Starts component `name` with `args` (inside the service network, if any).
    fn spawn(&mut self, name: &'static str, args: &[&str]) -> Result<(), String> {
        let program = self.bins.join(name);
        let mut cmd = match &self.network {
            Some(network) => network.command(&program),
            None => Command::new(&program),
        };
        cmd.args(args);
        self.spawn_command(name, &mut cmd)
    }

    fn spawn_command(&mut self, name: &'static str, cmd: &mut Command) -> Result<(), String> {
        let log =
            std::fs::File::create(self.dir.path().join(format!("{name}.log"))).map_err(|e| e.to_string())?;
        let child = cmd
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("start {name}: {e}"))?;
        watchdog(child.id(), ":").map_err(|e| format!("start the watchdog of {name}: {e}"))?;
        self.processes.push((name, child));
        Ok(())
    }

    /// Sends `signal` ("STOP", "CONT", "KILL", ...) to a running component (e.g. "kwok": the
    /// kubelets).
    pub fn signal(&self, component: &str, signal: &str) {
        let (_, child) =
            self.processes.iter().find(|(name, _)| *name == component).expect("a started component");
        let _ = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status();
    }

    /// A component's log so far (`kube-apiserver`, `etcd`, ...).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// The tail of a component's log (for failure messages).
    pub fn log_tail(&self, name: &str) -> String {
        let text = self.log(name);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Polls `ready` every 200 ms until it holds; fails with the log of the first component
    /// that exited, or after `timeout`.
    fn wait(&mut self, what: &str, timeout: Duration, ready: impl Fn(&Self) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if ready(self) {
                return Ok(());
            }
            for (name, child) in &mut self.processes {
                if let Ok(Some(status)) = child.try_wait() {
                    let name = *name;
                    return Err(format!(
                        "{name} exited ({status}) while waiting for {what}:\n{}",
                        self.log_tail(name)
                    ));
                }
            }
            if Instant::now() > deadline {
                return Err(format!("timed out after {timeout:?} waiting for {what}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for ControlPlane {
    /// Stops every process by PID, the last started first: SIGTERM, then SIGKILL after 10 s.
    fn drop(&mut self) {
        for (_, child) in self.processes.iter_mut().rev() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // E2E_KEEP_DIRS (see the harness): the logs and the audit log stay for a look.
        if std::env::var_os("E2E_KEEP_DIRS").is_some() {
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
            eprintln!("control plane files kept in {}", dir.keep().display());
        }
    }
}

/// Three loopback ports that were free a moment ago (a clash is retried by [`ControlPlane::start`]).
fn free_ports() -> [u16; 3] {
    let listeners: Vec<std::net::TcpListener> =
        (0..3).map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0")).collect();
    let port = |i: usize| listeners[i].local_addr().expect("local addr").port();
    [port(0), port(1), port(2)]
}

/// A plain-HTTP GET on `stream` answered 200.
fn http_ok(mut stream: std::net::TcpStream, path: &str) -> bool {
    use std::io::Write as _;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let mut response = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut response).is_ok()
        && response.split_whitespace().nth(1) == Some("200")
}

/// A test process killed outright (a nextest timeout, SIGKILL) runs no Drop: a watchdog runs
/// `cleanup` (a shell command) and kills process `pid` once the test process is gone, so no
/// apiserver or containerd outlives its test.
pub(crate) fn watchdog(pid: u32, cleanup: &str) -> std::io::Result<()> {
    let script = format!(
        "while kill -0 {test} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 1; done; {cleanup}; kill -9 {pid} 2>/dev/null",
        test = std::process::id(),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
}

pub(crate) fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
