//! The service network: a network namespace of the test's own in which the control plane runs,
//! so that the shipped webhook configuration (`clientConfig.service`) is reached the way a
//! cluster reaches it, with no address outside this machine's loopback ever a target.
//!
//! The apiserver's webhook client dials a Service's ClusterIP and port (kube-apiserver's
//! default ClusterIP resolver; kube-proxy makes that address lead to a pod). In the namespace
//! the whole Service range is a local route on `lo`, and [`ServiceNetwork::proxy_services`]
//! plays kube-proxy in user space, as kube-proxy's old userspace mode did: a connection to
//! `ClusterIP:port` is spliced to the backend a test routed it to — a product replica listening
//! on the host's loopback. The control plane's own port is forwarded the other way, from the
//! host's `127.0.0.1:<port>` to the same address inside, so kubectl, the product and the test
//! use the one kubeconfig the components use.
//!
//! Needs root (CAP_SYS_ADMIN: `unshare --net`, setns) and util-linux's `unshare`/`nsenter` and iproute2's `ip`; the namespace ends
//! with its last process.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::thread::LinkNameSpaceType;

/// Backends by the Service address (`ClusterIP:port`) a connection was made to, and the
/// connections spliced to each, so a new route can end them.
pub type Routes = Arc<Mutex<HashMap<SocketAddr, Route>>>;

/// Where one Service address leads, and the client side of every connection carried there.
#[derive(Debug)]
pub struct Route {
    backend: SocketAddr,
    carried: Vec<TcpStream>,
}

/// A network namespace held open by a `sleep` process (see the module doc).
pub struct ServiceNetwork {
    /// `/proc/<holder>/ns/net`.
    path: PathBuf,
    routes: Routes,
}

impl ServiceNetwork {
    /// `holder` must be `unshare --net sleep …` just spawned: waits until it has its own
    /// namespace, brings `lo` up and makes `service_cidr` local there.
    pub fn new(holder: &Child, service_cidr: &str) -> Result<ServiceNetwork, String> {
        let path = PathBuf::from(format!("/proc/{}/ns/net", holder.id()));
        let own = std::fs::read_link("/proc/self/ns/net").map_err(|e| format!("read our netns: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        // Between fork and unshare the holder is still in ours.
        let gone = |e| format!("`unshare --net` exited ({e}): it needs root, see netns.log");
        while std::fs::read_link(&path).map_err(gone)? == own {
            if Instant::now() > deadline {
                return Err("`unshare --net` made no network namespace within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let network = ServiceNetwork { path, routes: Routes::default() };
        network.ip(&["link", "set", "lo", "up"])?;
        network.ip(&["route", "add", "local", service_cidr, "dev", "lo"])?;
        Ok(network)
    }

    /// `program` to be run inside the namespace (nsenter execs it: the child's PID is the
    /// program's).
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.path.display())).arg("--").arg(program);
        cmd
    }

    fn ip(&self, args: &[&str]) -> Result<(), String> {
        let out = self
            .command(Path::new("ip"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run nsenter ip: {e} (install util-linux and iproute2)"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// A connection to `addr` inside the namespace.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        inside(&self.path, move || TcpStream::connect_timeout(&addr, Duration::from_secs(2)))
    }

    /// Forwards connections to the host's `listener` to `inner` inside the namespace.
    pub fn forward_in(&self, listener: TcpListener, inner: SocketAddr) {
        let path = self.path.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                match inside(&path, move || TcpStream::connect(inner)) {
                    Ok(server) => splice(client, server),
                    Err(_) => drop(client), // the component is gone: the client sees a reset
                }
            }
        });
    }

    /// Starts kube-proxy's part on `port` of every Service address: each connection goes to
    /// the backend [`ServiceNetwork::route`] set for its destination, or is closed.
    pub fn proxy_services(&self, port: u16) -> io::Result<()> {
        let listener = inside(&self.path, move || TcpListener::bind(("0.0.0.0", port)))?;
        let routes = self.routes.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(to) = client.local_addr() else { continue };
                let backend =
                    routes.lock().unwrap_or_else(PoisonError::into_inner).get(&to).map(|r| r.backend);
                if let Some(server) = backend.and_then(|b| TcpStream::connect(b).ok()) {
                    if let (Ok(handle), Some(route)) = (
                        client.try_clone(),
                        routes.lock().unwrap_or_else(PoisonError::into_inner).get_mut(&to),
                    ) {
                        route.carried.push(handle);
                    }
                    splice(client, server);
                }
            }
        });
        Ok(())
    }

    /// Sends connections to `service` (`ClusterIP:port`) to `backend` from now on, and ends
    /// those it carried to another backend, as when that backend's pod goes: a client that keeps
    /// its connections open (the apiserver's webhook client) would otherwise go on calling it.
    pub fn route(&self, service: SocketAddr, backend: SocketAddr) {
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        let route = routes.entry(service).or_insert(Route { backend, carried: Vec::new() });
        if route.backend != backend {
            route.backend = backend;
            for stream in route.carried.drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Runs `f` on a thread that has entered the namespace at `path`: sockets it makes live there.
fn inside<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let namespace = std::fs::File::open(path)?;
    std::thread::spawn(move || {
        // setns: only this thread changes its network namespace.
        rustix::thread::move_into_link_name_space(namespace.as_fd(), Some(LinkNameSpaceType::Network))?;
        f()
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
}

/// Copies both ways until each side has closed its half.
fn splice(a: TcpStream, b: TcpStream) {
    let pump = |from: TcpStream, to: TcpStream| {
        std::thread::spawn(move || {
            let _ = io::copy(&mut &from, &mut &to);
            let _ = to.shutdown(Shutdown::Write);
        })
    };
    if let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) {
        pump(a, b2);
        pump(b, a2);
    }
}
