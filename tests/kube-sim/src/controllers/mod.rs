//! The cluster's behaviour (issue "kube-sim, part 2"): in-process controllers driven by the
//! change feed, each a small module wiring the pure rules of [`crate::cluster_logic`] to the
//! [`Cluster`] API, plus the Eviction subresource and admission webhooks.
//!
//! [`start`] turns a plain API server into a "cluster": it creates the nodes, registers
//! `pods/eviction`, installs the admission-webhook hook and runs the controllers until the
//! returned [`BehaviourHandle`] is dropped.

mod daemonset;
mod deployment;
mod disruption;
mod events;
mod gc;
mod hpa;
mod keda;
mod kubelet;
mod namespace;
mod namespace_defaults;
mod node_lifecycle;
mod replicaset;
pub(crate) mod runtime;
mod scheduler;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::json;

use crate::cluster::{Cluster, ClusterConfig, Gvr, WriteOptions};
use crate::error::ApiError;
use runtime::{Ctx, Loop};

/// Set to `"true"` on a pod to make (or keep) it unready; remove it to let it become Ready.
pub use crate::cluster_logic::kubelet::UNREADY_ANNOTATION;

/// The User-Agent product of the controllers' writes (their field manager), as upstream's
/// `kube-controller-manager` sends it.
pub(crate) const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// How the simulated cluster behaves (`--nodes`, `--pods-per-node`, ...).
#[derive(Clone, Debug)]
pub struct ClusterBehaviour {
    /// Nodes `node-1`..`node-N`, created Ready at start.
    pub nodes: usize,
    /// Pod capacity per node (`status.allocatable.pods`).
    pub pods_per_node: usize,
    /// Time from a pod starting to it becoming Ready (whole seconds; Ready conditions carry
    /// second-precision times).
    pub pod_ready_delay: Duration,
    /// Factor applied to termination grace periods by the kubelet (1.0 = real time; 0.1
    /// turns the default 30 s into 3 s).
    pub termination_grace_scale: f64,
    /// Where a webhook `clientConfig.service` (`namespace`, `name`) is reached.
    pub service_endpoints: HashMap<(String, String), SocketAddr>,
    /// The version KEDA's HPAs are labelled with.
    pub keda_version: String,
    /// The CA published in every namespace's `kube-root-ca.crt` ConfigMap (the server sets it to
    /// its own; none is published when empty).
    pub root_ca_pem: String,
}

impl Default for ClusterBehaviour {
    fn default() -> Self {
        Self {
            nodes: 3,
            pods_per_node: 110,
            pod_ready_delay: Duration::from_secs(1),
            termination_grace_scale: 1.0,
            service_endpoints: HashMap::new(),
            keda_version: "2.16.0".into(),
            root_ca_pem: String::new(),
        }
    }
}

impl ClusterBehaviour {
    /// `config` with what the controllers need: graceful pod deletion (the kubelet finishes
    /// it) and the `foregroundDeletion`/`orphan` finalizers (the garbage collector handles them).
    pub fn cluster_config(&self, config: ClusterConfig) -> ClusterConfig {
        ClusterConfig {
            graceful_pod_deletion: true,
            deletion_finalizers: true,
            namespace_controller: true,
            ..config
        }
    }

    /// Adds a `--service-endpoint NAMESPACE/NAME=HOST:PORT` route.
    pub fn with_service_endpoint(mut self, namespace: &str, name: &str, addr: SocketAddr) -> Self {
        self.service_endpoints.insert((namespace.to_string(), name.to_string()), addr);
        self
    }
}

/// Parses `NAMESPACE/NAME=HOST:PORT` (HOST an IP address or `localhost`).
pub fn parse_service_endpoint(text: &str) -> Result<((String, String), SocketAddr), String> {
    let bad = || format!("invalid service endpoint {text:?}: expected NAMESPACE/NAME=HOST:PORT");
    let (service, address) = text.split_once('=').ok_or_else(bad)?;
    let (namespace, name) = service.split_once('/').ok_or_else(bad)?;
    if namespace.is_empty() || name.is_empty() {
        return Err(bad());
    }
    let address = address.replace("localhost:", "127.0.0.1:");
    let addr: SocketAddr = address.parse().map_err(|e| format!("{}: {e}", bad()))?;
    Ok(((namespace.to_string(), name.to_string()), addr))
}

/// Parses a duration such as `1s`, `500ms`, `2m` (humantime syntax).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// Routes for webhook services, changeable while running.
pub(crate) type ServiceRoutes = Arc<RwLock<HashMap<(String, String), SocketAddr>>>;

/// The running behaviour: dropping it stops the controllers.
pub struct BehaviourHandle {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    routes: ServiceRoutes,
    bridge: Arc<crate::webhooks::AdmissionBridge>,
    ctx: Arc<Ctx>,
}

impl std::fmt::Debug for BehaviourHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BehaviourHandle").field("tasks", &self.tasks.len()).finish()
    }
}

impl BehaviourHandle {
    /// Routes webhook calls for service `namespace/name` to `addr` from now on.
    pub fn set_service_endpoint(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.routes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((namespace.to_string(), name.to_string()), addr);
    }

    /// Pauses one controller loop (a test hook, e.g. to observe a PDB before the disruption
    /// controller has seen it): `node-lifecycle`, `scheduler`, `kubelet`, `replicaset`,
    /// `deployment`, `disruption`, `disruption-target-cleanup`, `garbage-collector`, `hpa`,
    /// `keda`, `daemonset`, `namespace-defaults`, `namespace`. Changes queue up and are handled on
    /// [`Self::resume`].
    pub fn pause(&self, controller: &str) {
        self.ctx.set_paused(controller, true);
    }

    /// Resumes a paused controller loop.
    pub fn resume(&self, controller: &str) {
        self.ctx.set_paused(controller, false);
    }

    /// Stops the controllers (the API keeps serving; webhooks are no longer called).
    pub fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.bridge.detach();
    }
}

impl Drop for BehaviourHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The node object kube-sim creates for `name`: what the real control plane of `tests/cluster`
/// has — the node its harness creates for kwok, as kwok's `node-initialize` stage fills it in
/// (every NodeSystemInfo field, the five kubelet conditions, no addresses, kubelet port 0).
pub fn node_object(name: &str, pods_per_node: usize) -> serde_json::Value {
    let now = crate::meta::now_rfc3339();
    let capacity = json!({"cpu": "32", "memory": "256Gi", "pods": pods_per_node.to_string()});
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"lastHeartbeatTime": now, "lastTransitionTime": now, "message": message, "reason": reason,
            "status": status, "type": kind})
    };
    let kwok = "kwok-0.8.0";
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"beta.kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux", "type": "kwok"}},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity,
            "conditions": [
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": kwok,
                "kernelVersion": kwok, "kubeProxyVersion": kwok, "kubeletVersion": kwok,
                "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
            "phase": "Running"}})
}

/// Makes `cluster` behave like a cluster: creates the nodes (kept if they exist), serves
/// `pods/eviction`, calls admission webhooks, runs the controllers. Needs a Tokio runtime.
/// The cluster should have been built with [`ClusterBehaviour::cluster_config`].
pub async fn start(cluster: &Cluster, behaviour: ClusterBehaviour) -> Result<BehaviourHandle, ApiError> {
    let nodes = Gvr::new("", "v1", "nodes");
    let keep =
        WriteOptions { keep_status: true, skip_admission: true, ..WriteOptions::from_user_agent("kubelet") };
    for i in 1..=behaviour.nodes {
        let name = format!("node-{i}");
        if cluster.get(&nodes, None, &name).is_err() {
            cluster.create(&nodes, None, node_object(&name, behaviour.pods_per_node), &keep).await?;
        }
    }
    let routes: ServiceRoutes = Arc::new(RwLock::new(behaviour.service_endpoints.clone()));
    let webhooks = Arc::new(crate::webhooks::Webhooks::new(routes.clone()));
    let bridge = Arc::new(crate::webhooks::AdmissionBridge {
        webhooks: webhooks.clone(),
        cluster: std::sync::Mutex::new(Some(cluster.clone())),
    });
    cluster.set_admission_hook(Some(bridge.clone()));
    crate::eviction_handler::register(cluster, webhooks);
    let ctx = Ctx::new(cluster.clone(), behaviour);
    let loops = vec![
        Loop::new("node-lifecycle", node_lifecycle::NodeLifecycle, 1),
        Loop::new("scheduler", scheduler::Scheduler::default(), 1),
        Loop::new("kubelet", kubelet::Kubelet, 2),
        Loop::new("replicaset", replicaset::ReplicaSets, 4),
        Loop::new("deployment", deployment::Deployments, 2),
        Loop::new("disruption", disruption::Disruption::default(), 2),
        Loop::new("disruption-target-cleanup", disruption::StaleDisruptionTargets, 1),
        Loop::new("garbage-collector", gc::GarbageCollector, 2),
        Loop::new("hpa", hpa::Hpa, 1),
        Loop::new("keda", keda::Keda, 1),
        Loop::new("daemonset", daemonset::DaemonSets, 1),
        Loop::new("namespace-defaults", namespace_defaults::NamespaceDefaults, 1),
        Loop::new("namespace", namespace::Namespaces, 1),
    ];
    let tasks = runtime::run(ctx.clone(), loops);
    Ok(BehaviourHandle { tasks, routes, bridge, ctx })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_endpoints_and_durations_parse_with_clear_errors() {
        let ((ns, name), addr) =
            parse_service_endpoint("guard/guard-webhook=127.0.0.1:9443").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((ns.as_str(), name.as_str(), addr.port()), ("guard", "guard-webhook", 9443));
        let (_, local) = parse_service_endpoint("a/b=localhost:8443").unwrap_or_else(|e| panic!("{e}"));
        assert!(local.ip().is_loopback());
        for bad in ["guard-webhook=127.0.0.1:1", "a/b", "/b=127.0.0.1:1", "a/b=nowhere"] {
            let err = parse_service_endpoint(bad).err().unwrap_or_default();
            assert!(err.contains("NAMESPACE/NAME=HOST:PORT"), "{bad}: {err}");
        }
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err_and(|e| e.contains("\"soon\"")));
    }

    #[test]
    fn the_cluster_config_enables_graceful_deletion_and_deletion_finalizers() {
        let config = ClusterBehaviour::default()
            .cluster_config(ClusterConfig { history_limit: 7, ..ClusterConfig::default() });
        assert!(config.graceful_pod_deletion && config.deletion_finalizers && config.namespace_controller);
        assert_eq!(config.history_limit, 7);
        let node = node_object("node-9", 12);
        assert_eq!(node["status"]["allocatable"]["pods"], "12");
    }
}
