//! Helpers shared by the drain and no-write scenarios: Deployments with a rolling-update
//! strategy, raw evictions, Events, pods per node, and request-log queries.

use std::time::Duration;

use super::Request;
use serde_json::{Value, json};

use super::{DeploymentState, Env, PRODUCT_AGENT, Recorder, wait_for};

/// The annotations a surge leaves on the Deployment (Go keys).
pub const SURGE_KEYS: [&str; 2] =
    ["evictionSurgeReplicas", "eviction-autoscaler.azure.com/original-min-replicas"];

/// A Deployment like [`super::deployment`] with `strategy.rollingUpdate.maxSurge` set.
pub fn deployment_with_max_surge(namespace: &str, name: &str, replicas: i32, max_surge: Value) -> String {
    let mut object: Value = serde_json::from_str(&super::deployment(namespace, name, replicas, &[]))
        .unwrap_or_else(|e| panic!("deployment manifest is JSON: {e}"));
    object["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": 0}});
    object.to_string()
}

/// Our own bookkeeping of outside resets (override count, back-off, gave-up).
pub const OVERRIDES_KEY: &str = "eviction-autoscaler.azure.com/surge-overrides";

/// True when `state` carries none of the product's surge annotations.
pub fn unsurged(state: &DeploymentState) -> bool {
    SURGE_KEYS.iter().chain([&OVERRIDES_KEY]).all(|k| !state.annotations.contains_key(*k))
}

/// True when `state` carries the surge annotations.
pub fn surged(state: &DeploymentState) -> bool {
    SURGE_KEYS.iter().all(|k| state.annotations.contains_key(*k))
}

/// Waits until the last recorded state satisfies `check`; returns it.
pub async fn wait_state(
    history: &Recorder<DeploymentState>,
    what: &str,
    timeout: Duration,
    check: impl Fn(&DeploymentState) -> bool,
) -> DeploymentState {
    wait_for(what, timeout, || {
        let last = history.states().last().cloned().filter(&check);
        async move { last }
    })
    .await
}

impl Env {
    /// Every product write attempt to Deployment `namespace/name` (the workload itself, not
    /// its Events or EAS), whatever its answer: a conflicted PATCH is a write too.
    pub fn deployment_writes(&self, namespace: &str, name: &str) -> Vec<Request> {
        self.product_writes()
            .into_iter()
            .filter(|r| r.resource == "deployments" && r.namespace == namespace && r.name == name)
            .collect()
    }

    /// The answer codes of [`Self::deployment_writes`], in order, conflicts left out: `[200, 200]`
    /// is one surge and one revert with nothing refused. A 409 is a write guarded by the
    /// resourceVersion the product had just read that lost to another writer (on a real cluster
    /// mostly the deployment controller's status update after a pod came or went); the product
    /// re-reads and decides again. Each one left out is checked to have such a write to lose
    /// against between the product's writes before and after it (the audit log is in order of
    /// completion): a conflict nobody caused fails the test.
    pub fn deployment_write_codes(&self, namespace: &str, name: &str) -> Vec<u16> {
        let requests = self.requests();
        let others: Vec<u64> = requests
            .iter()
            .filter(|r| r.resource == "deployments" && r.namespace == namespace && r.name == name)
            .filter(|r| r.is_write() && r.succeeded() && !r.user_agent.starts_with(PRODUCT_AGENT))
            .map(|r| r.seq)
            .collect();
        let ours = self.deployment_writes(namespace, name);
        for (i, write) in ours.iter().enumerate().filter(|(_, w)| w.code == 409) {
            let after = i.checked_sub(1).map_or(0, |p| ours[p].seq);
            let before = ours.get(i + 1).map_or(u64::MAX, |n| n.seq);
            assert!(
                others.iter().any(|seq| (after..before).contains(seq)),
                "a conflict without another writer's write to lose against: {write:?} in {ours:?}"
            );
        }
        ours.iter().map(|r| r.code).filter(|code| *code != 409).collect()
    }

    /// Product writes to any workload or autoscaler (Deployments, HPAs, ScaledObjects).
    pub fn workload_writes(&self) -> Vec<Request> {
        self.product_writes()
            .into_iter()
            .filter(|r| {
                matches!(r.resource.as_str(), "deployments" | "horizontalpodautoscalers" | "scaledobjects")
            })
            .collect()
    }

    /// Pod LIST/WATCH requests by the product with neither a field nor a label selector.
    pub fn unselective_pod_reads(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT) && r.resource == "pods")
            .filter(|r| matches!(r.verb.as_str(), "list" | "watch"))
            .filter(|r| !r.query.contains("fieldSelector=") && !r.query.contains("labelSelector="))
            .collect()
    }

    /// Sends one eviction for `namespace/pod` the way a descheduler does (`kubectl create
    /// --raw .../eviction`): (accepted, kubectl's output).
    pub async fn evict(&self, namespace: &str, pod: &str) -> (bool, String) {
        let body = json!({
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace}
        });
        let file = self.dir.path().join(format!("eviction-{namespace}-{pod}.json"));
        std::fs::write(&file, body.to_string()).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
        let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}/eviction");
        self.kubectl_combined(&["create", "--raw", &path, "-f", &file.display().to_string()]).await
    }

    /// Names of the pods of `app=<app>` in `namespace` on `node` (not terminating).
    pub async fn pods_on(&self, namespace: &str, app: &str, node: &str) -> Vec<String> {
        let list =
            self.get(&["pods", "-n", namespace, "-l", &format!("app={app}")]).await.unwrap_or_default();
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["spec"]["nodeName"] == node && p["metadata"]["deletionTimestamp"].is_null())
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// Events on Deployment `namespace/name` with `reason`: their messages.
    pub async fn deployment_events(&self, namespace: &str, name: &str, reason: &str) -> Vec<String> {
        let list = self.get(&["events", "-n", namespace]).await.unwrap_or_default();
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["reason"] == reason && e["involvedObject"]["kind"] == "Deployment")
            .filter(|e| e["involvedObject"]["name"] == name)
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits for an Event with `reason` on Deployment `namespace/name`; returns its message.
    pub async fn wait_event(&self, namespace: &str, name: &str, reason: &str, timeout: Duration) -> String {
        wait_for(&format!("a {reason} Event on {namespace}/{name}"), timeout, || async move {
            self.deployment_events(namespace, name, reason).await.into_iter().next()
        })
        .await
    }

    /// Waits for the EvictionAutoScaler `namespace/name` (named like its PDB): a marker that
    /// the product has seen the PDB and its Deployment.
    pub async fn wait_eas(&self, namespace: &str, name: &str) {
        wait_for(&format!("EvictionAutoScaler {namespace}/{name}"), Duration::from_secs(60), || async {
            self.get(&["evictionautoscalers", "-n", namespace, name]).await.map(|_| ())
        })
        .await;
    }

    /// Waits until the EvictionAutoScaler `namespace/name` reports `pod` as its last eviction
    /// in its status: proof that the product evaluated the Deployment after seeing the signal.
    pub async fn wait_eas_last_eviction(&self, namespace: &str, name: &str, pod: &str) {
        wait_for(
            &format!("EAS {namespace}/{name} status.lastEviction = {pod}"),
            Duration::from_secs(30),
            || async {
                let eas = self.get(&["evictionautoscalers", "-n", namespace, name]).await?;
                (eas["status"]["lastEviction"]["podName"] == pod).then_some(())
            },
        )
        .await;
    }
}
