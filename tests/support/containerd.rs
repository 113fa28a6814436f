//! A containerd of the test's own (Debian's `containerd` and `runc`), on a socket in a temporary
//! directory: imports an image archive with `ctr images import` (what `kind load
//! image-archive` runs on a node) and runs its containers with host networking. The native
//! snapshotter copies layers instead of mounting overlays, so nothing stays mounted when the
//! test ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const NAMESPACE: &str = "e2e";
const INSTALL: &str = "install Debian's packages: apt-get install containerd runc";

pub struct Containerd {
    dir: tempfile::TempDir,
    daemon: Child,
    containers: AtomicUsize,
}

impl Containerd {
    /// Starts containerd and waits until it answers.
    pub fn start() -> Containerd {
        for tool in ["containerd", "ctr", "runc"] {
            let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output();
            assert!(found.is_ok_and(|o| o.status.success()), "{tool} is missing: {INSTALL}");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path();
        let config = format!(
            "version = 2\nroot = \"{root}\"\nstate = \"{state}\"\n\
             # Only what ctr needs: no Kubernetes CRI plugin.\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{socket}\"\n[ttrpc]\n  address = \"{socket}.ttrpc\"\n",
            root = path.join("root").display(),
            state = path.join("state").display(),
            socket = path.join("containerd.sock").display(),
        );
        std::fs::write(path.join("config.toml"), config).expect("containerd config");
        let log = std::fs::File::create(path.join("containerd.log")).expect("containerd log");
        let daemon = Command::new("containerd")
            .arg("--config")
            .arg(path.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start containerd");
        // The containers first (a container outlives its shim), then containerd and its files,
        // then the shims, which name the socket (as this script does: the pkill comes last).
        let socket = path.join("containerd.sock");
        let ctr = format!("ctr --address {} --namespace {NAMESPACE}", socket.display());
        let cleanup = format!(
            "for t in $({ctr} task ls --quiet); do {ctr} task kill --signal SIGKILL $t; done; sleep 1; \
             kill -9 {pid}; rm -rf {dir}; pkill -9 -f {socket}",
            pid = daemon.id(),
            dir = path.display(),
            socket = socket.display()
        );
        super::cluster::watchdog(daemon.id(), &cleanup).expect("start the watchdog");
        let containerd = Containerd { dir, daemon, containers: AtomicUsize::new(0) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !containerd.ctr().arg("version").output().is_ok_and(|o| o.status.success()) {
            assert!(Instant::now() < deadline, "containerd never answered:\n{}", containerd.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        containerd
    }

    /// `ctr` on this containerd's socket and namespace, with the native snapshotter.
    pub fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("--address").arg(self.dir.path().join("containerd.sock")).args(["--namespace", NAMESPACE]);
        cmd.env("CONTAINERD_SNAPSHOTTER", "native");
        cmd
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default()
    }

    /// `ctr images import ARCHIVE`; the names the images got.
    pub fn import(&self, archive: &Path) -> Vec<String> {
        let out = self.ctr().args(["images", "import"]).arg(archive).output().expect("ctr images import");
        assert!(out.status.success(), "ctr images import: {}", String::from_utf8_lossy(&out.stderr));
        let out = self.ctr().args(["images", "ls", "--quiet"]).output().expect("ctr images ls");
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
    }

    /// A fresh container id.
    pub fn container_id(&self) -> String {
        format!("c{}", self.containers.fetch_add(1, Ordering::Relaxed))
    }

    /// `ctr run --rm IMAGE ID [options…] [command…]` to the end: options are `ctr run`'s own
    /// (before the image), an empty command runs the image's entrypoint and command.
    pub fn run(&self, image: &str, options: &[&str], command: &[&str]) -> Output {
        self.run_command(image, &self.container_id(), options, command).output().expect("ctr run")
    }

    /// The `ctr run --rm` command of [`Containerd::run`] in the foreground: it forwards signals
    /// to the container, which is removed when it exits.
    pub fn run_command(&self, image: &str, id: &str, options: &[&str], command: &[&str]) -> Command {
        let mut cmd = self.ctr();
        cmd.args(["run", "--rm"]).args(options).args([image, id]).args(command);
        cmd
    }

    /// The host PIDs of a running container's processes (`ctr task ps`).
    pub fn pids(&self, id: &str) -> Vec<u32> {
        let out = self.ctr().args(["task", "ps", id]).output().expect("ctr task ps");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    }

    /// The directory the containerd lives in, for files a test mounts into a container.
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Containerd {
    /// Kills and removes every container, then containerd and any shim left.
    fn drop(&mut self) {
        let tasks = self.ctr().args(["task", "ls", "--quiet"]).output();
        for id in tasks.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default().lines() {
            let _ = self.ctr().args(["task", "kill", "--signal", "SIGKILL", id]).output();
            let _ = self.ctr().args(["task", "delete", "--force", id]).output();
            let _ = self.ctr().args(["container", "delete", id]).output();
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let socket = self.dir.path().join("containerd.sock");
        let _ = Command::new("pkill").arg("-9").arg("-f").arg(socket).status();
    }
}
