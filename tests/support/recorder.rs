//! Every state an object went through, recorded by a watch in the background: kube-sim's
//! in-process watch (no sample is missed, unlike polling) or `kubectl get -w` on the real
//! control plane.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube_sim::Server;
use serde_json::Value;

use super::{Cluster, Env};

/// States collected by a background watch; stops when dropped.
pub struct Recorder<T> {
    states: std::sync::Arc<std::sync::Mutex<Vec<T>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    watch: Option<Child>,
}

impl<T: Clone + Send + 'static> Recorder<T> {
    /// Every change of `gvr` `namespace/name` from kube-sim's in-process watch (no sample is
    /// missed, unlike polling), mapped by `map`.
    pub fn of_sim_watch(
        sim: &Server,
        gvr: &kube_sim::Gvr,
        namespace: &str,
        name: &str,
        map: fn(&Value) -> T,
    ) -> Recorder<T> {
        use futures::StreamExt as _;
        let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let opts = kube_sim::WatchOptions {
            field_selector: Some(format!("metadata.name={name}")),
            timeout: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        let mut stream = sim.cluster().watch(gvr, Some(namespace), &opts).expect("watch");
        let sink = states.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                // Bookmarks carry no object worth recording.
                if event.object["metadata"]["name"].as_str().is_none_or(|n| n.is_empty()) {
                    continue;
                }
                sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(map(&event.object));
            }
        });
        Recorder::of_task(states, task)
    }

    /// Every object `kubectl get NAME -w -o json` (`cmd`) prints, mapped by `map`.
    pub fn of_kubectl_watch(mut cmd: Command, map: fn(&Value) -> T) -> Recorder<T> {
        let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl -w");
        let stdout = child.stdout.take().expect("kubectl stdout");
        let sink = states.clone();
        std::thread::spawn(move || {
            // Pretty-printed objects one after another: a stream of JSON values.
            for object in
                serde_json::Deserializer::from_reader(std::io::BufReader::new(stdout)).into_iter::<Value>()
            {
                let Ok(object) = object else { break };
                sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(map(&object));
            }
        });
        let recorder = Recorder { states, task: None, watch: Some(child) };
        // The first object is the current state: recording starts once it is in. (Tests run
        // on a multi-threaded runtime; the wait moves its other tasks off this thread.)
        tokio::task::block_in_place(|| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while recorder.states().is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        recorder
    }
}

impl<T: Clone> Recorder<T> {
    /// States that `task` pushes into `states`.
    pub fn of_task(
        states: std::sync::Arc<std::sync::Mutex<Vec<T>>>,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Recorder { states, task: Some(task), watch: None }
    }

    pub fn states(&self) -> Vec<T> {
        self.states.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl<T> Drop for Recorder<T> {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
        if let Some(child) = &mut self.watch {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every state a Deployment went through, as seen by an in-process watch (no sample is
/// missed, unlike polling).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeploymentState {
    pub replicas: i64,
    pub ready: i64,
    pub annotations: serde_json::Map<String, Value>,
}

impl Env {
    /// Starts recording every change of Deployment `namespace/name`: kube-sim's in-process
    /// watch, or `kubectl get -w` on the real control plane.
    pub fn record_deployment(&self, namespace: &str, name: &str) -> Recorder<DeploymentState> {
        fn state(o: &Value) -> DeploymentState {
            DeploymentState {
                replicas: o["spec"]["replicas"].as_i64().unwrap_or(1),
                ready: o["status"]["readyReplicas"].as_i64().unwrap_or(0),
                annotations: o["metadata"]["annotations"].as_object().cloned().unwrap_or_default(),
            }
        }
        match &self.cluster {
            Cluster::Sim(sim) => {
                let gvr = kube_sim::Gvr::new("apps", "v1", "deployments");
                Recorder::of_sim_watch(sim, &gvr, namespace, name, state)
            }
            Cluster::Real(_) => {
                let mut cmd = Command::new("kubectl");
                self.kubectl_env(&mut cmd).args([
                    "get",
                    "deployment",
                    name,
                    "-n",
                    namespace,
                    "-w",
                    "-o",
                    "json",
                ]);
                Recorder::of_kubectl_watch(cmd, state)
            }
        }
    }
}
