//! What objects went through, recorded by a watch in the background (`kubectl get -w
//! --output-watch-events`). No sample is missed, unlike polling.

use std::collections::HashSet;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Env;

/// States collected by a background watch; stops when dropped.
pub struct Recorder<T> {
    states: Arc<Mutex<Vec<T>>>,
    watch: Child,
}

impl<T: Clone> Recorder<T> {
    pub fn states(&self) -> Vec<T> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits until some recorded state satisfies `seen` (e.g. a Deployment surged), failing
    /// with `what` after `timeout`.
    pub async fn wait_seen(&self, what: &str, timeout: Duration, seen: impl Fn(&T) -> bool) {
        super::wait_for(what, timeout, || {
            let found = self.states().iter().any(&seen);
            async move { found.then_some(()) }
        })
        .await;
    }
}

impl<T> Drop for Recorder<T> {
    fn drop(&mut self) {
        let _ = self.watch.kill();
        let _ = self.watch.wait();
    }
}

impl Env {
    /// Watches `resource` in `namespace` (only object `name` when given) from now on, starting
    /// with the objects that exist, and records what `keep` makes of each event: its type
    /// (`ADDED`, `MODIFIED`, `DELETED`) and object; `None` records nothing.
    pub fn watch<T: Send + 'static>(
        &self,
        resource: &Resource,
        namespace: &str,
        name: Option<&str>,
        mut keep: impl FnMut(&str, &Value) -> Option<T> + Send + 'static,
    ) -> Recorder<T> {
        let states = Arc::new(Mutex::new(Vec::new()));
        let sink = states.clone();
        let mut record = move |kind: &str, object: &Value| {
            // Bookmarks carry no object worth recording.
            if object["metadata"]["name"].as_str().is_none_or(str::is_empty) {
                return;
            }
            if let Some(state) = keep(kind, object) {
                sink.lock().unwrap_or_else(PoisonError::into_inner).push(state);
            }
        };
        let qualified = resource.qualified();
        // kubectl lists, then watches from the list's resourceVersion: once the audit log shows
        // its watch, nothing that happens next is missed.
        let watches = || {
            self.requests()
                .iter()
                .filter(|r| r.verb == "watch" && r.user_agent.starts_with("kubectl"))
                .filter(|r| r.resource == resource.plural && r.namespace == namespace)
                .count()
        };
        let before = watches();
        let mut cmd = self.kubectl_runner().command();
        cmd.args(["get", &qualified]).args(name).args([
            "-n",
            namespace,
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ]);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get -w");
        let stdout = child.stdout.take().expect("kubectl stdout");
        std::thread::spawn(move || {
            // Pretty-printed {"type", "object"} events one after another.
            let events = serde_json::Deserializer::from_reader(std::io::BufReader::new(stdout));
            for event in events.into_iter::<Value>() {
                let Ok(event) = event else { break };
                record(event["type"].as_str().unwrap_or_default(), &event["object"]);
            }
        });
        // Tests run on a multi-threaded runtime; the wait moves its other tasks off this thread.
        tokio::task::block_in_place(|| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while watches() == before {
                assert!(Instant::now() < deadline, "kubectl get {qualified} -w never started watching");
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Recorder { states, watch: child }
    }

    /// Starts recording every version of object `namespace/name` of `resource`.
    pub fn record_object(&self, resource: &Resource, namespace: &str, name: &str) -> Recorder<Value> {
        self.watch(resource, namespace, Some(name), |_, object| Some(object.clone()))
    }

    /// Starts recording every change of Deployment `namespace/name`.
    pub fn record_deployment(&self, namespace: &str, name: &str) -> Recorder<DeploymentState> {
        self.watch(&Resource::new("apps", "v1", "deployments"), namespace, Some(name), |_, o| {
            Some(DeploymentState {
                replicas: o["spec"]["replicas"].as_i64().unwrap_or(1),
                ready: o["status"]["readyReplicas"].as_i64().unwrap_or(0),
                annotations: o["metadata"]["annotations"].as_object().cloned().unwrap_or_default(),
            })
        })
    }

    /// Records the ADDED events of `resource` objects in `namespace` from now on.
    pub fn record_added(&self, resource: &Resource, namespace: &str) -> Recorder<Added> {
        self.record_first(resource, namespace, |kind, _| kind == "ADDED")
    }

    /// Records, per object of `resource` in `namespace`, the first event from now on for which
    /// `matches(type, object)` holds (e.g. the pod turned Ready).
    pub fn record_first(
        &self,
        resource: &Resource,
        namespace: &str,
        matches: fn(&str, &Value) -> bool,
    ) -> Recorder<Added> {
        let mut seen = HashSet::new();
        self.watch(resource, namespace, None, move |kind, o| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            (matches(kind, o) && seen.insert(name.clone())).then(|| Added {
                name,
                resource_version: o["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            })
        })
    }
}

/// A Deployment as a user watches it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeploymentState {
    pub replicas: i64,
    pub ready: i64,
    pub annotations: serde_json::Map<String, Value>,
}

/// The first time an object was seen in some state (stored, Ready…): its name and the
/// resourceVersion of that event (etcd's, cluster-wide, so comparable across kinds).
#[derive(Clone, Debug)]
pub struct Added {
    pub name: String,
    pub resource_version: u64,
}

/// A kind of object, as the API serves it: group (`""` for core), version, plural.
#[derive(Clone, Debug)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl Resource {
    pub fn new(group: &str, version: &str, plural: &str) -> Resource {
        Resource { group: group.into(), version: version.into(), plural: plural.into() }
    }

    /// `plural.version.group` as kubectl names a resource unambiguously (`plural` for core).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}.{}", self.plural, self.version, self.group)
        }
    }
}
