//! Harness additions for crash, fail-over and failure scenarios: a second product process with
//! its own ports, a kubectl running in the background while the test acts, and readers for
//! what a user checks (EAS conditions, Events, the Lease holder, an object right now).

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::{Env, Product, wait_for};

/// A `kubectl` started in the background; `finish` waits for it: (success, stdout + stderr).
pub struct BackgroundKubectl {
    child: tokio::process::Child,
}

impl BackgroundKubectl {
    pub async fn finish(self) -> (bool, String) {
        let out = self.child.wait_with_output().await.expect("background kubectl runs");
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }
}

/// A condition of an EvictionAutoScaler: (status, reason, message).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Env {
    /// Starts another `eviction-autoscaler run` with its own ports and `POD_NAME=pod_name`
    /// (the Lease holder identity starts with it), and waits for its `/readyz`. The cluster's
    /// webhook Service keeps pointing at `Env::product` until `route_webhook_to` moves it.
    pub async fn start_extra_product(&self, pod_name: &str, extra: &[&str]) -> Product {
        let log = self.dir.path().join(format!("product-{pod_name}.log"));
        let mut cmd = self.product_command(&log);
        cmd.args(extra).env("POD_NAME", pod_name);
        Product::start(cmd, log).await
    }

    /// Starts kubectl in the background (same private HOME and cache as `Env::kubectl`).
    pub fn spawn_kubectl(&self, args: &[&str]) -> BackgroundKubectl {
        let mut cmd = tokio::process::Command::from(self.kubectl_runner().command());
        let child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl on PATH");
        BackgroundKubectl { child }
    }

    /// An object as stored right now (`kubectl get`).
    pub fn object(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let resource = super::Resource::new(group, version, plural).qualified();
        let args = ["get", resource.as_str(), name, "-n", namespace, "-o", "json"];
        let text = tokio::task::block_in_place(|| self.cluster.kubectl(&args)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Every object of `resource` in `namespace` (all namespaces when empty) right now.
    pub fn objects(&self, resource: &super::Resource, namespace: &str) -> Vec<Value> {
        let qualified = resource.qualified();
        let mut args = vec!["get", qualified.as_str(), "-o", "json"];
        match namespace {
            "" => args.push("-A"),
            namespace => args.extend(["-n", namespace]),
        }
        let text = tokio::task::block_in_place(|| self.cluster.kubectl(&args)).unwrap_or_default();
        let list: Value = serde_json::from_str(&text).unwrap_or_default();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Deployment `namespace/name` right now.
    pub fn deployment_now(&self, namespace: &str, name: &str) -> Option<Value> {
        self.object("apps", "v1", "deployments", namespace, name)
    }

    /// Condition `kind` of EvictionAutoScaler `namespace/name`, as `kubectl get` shows it.
    pub async fn eas_condition(&self, namespace: &str, name: &str, kind: &str) -> Option<Condition> {
        let eas = self.get(&["evictionautoscalers", "-n", namespace, name]).await?;
        let conditions = eas.pointer("/status/conditions")?.as_array()?.clone();
        let found = conditions.into_iter().find(|c| c["type"] == kind)?;
        let text = |key: &str| found[key].as_str().unwrap_or_default().to_owned();
        Some(Condition { status: text("status"), reason: text("reason"), message: text("message") })
    }

    /// Waits until EAS `namespace/name` is `Degraded=True` with `reason`; returns its message.
    pub async fn wait_degraded(&self, namespace: &str, name: &str, reason: &str) -> String {
        let what = format!("EvictionAutoScaler {namespace}/{name} Degraded with {reason}");
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                if let Some(c) = self.eas_condition(namespace, name, "Degraded").await
                    && c.status == "True"
                    && c.reason == reason
                {
                    return c.message;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
        .await;
        match found {
            Ok(message) => message,
            Err(_) => {
                let eas = self.get(&["evictionautoscalers", "-n", namespace, name]).await;
                panic!(
                    "timed out waiting for {what}; EAS: {eas:?}\n--- product log ---\n{}",
                    self.product_log()
                )
            }
        }
    }

    /// Events in `namespace` as (reason, involved object name, message), via `kubectl get events`.
    pub async fn events(&self, namespace: &str) -> Vec<(String, String, String)> {
        let Some(list) = self.get(&["events", "-n", namespace]).await else { return Vec::new() };
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|e| {
                        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                        (text(&e["reason"]), text(&e["involvedObject"]["name"]), text(&e["message"]))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The holder of the product's Lease (`default/eviction-autoscaler`), if any.
    pub fn lease_holder(&self) -> Option<String> {
        let lease = self.object(
            "coordination.k8s.io",
            "v1",
            "leases",
            super::PRODUCT_ACCOUNT.0,
            "eviction-autoscaler",
        )?;
        lease["spec"]["holderIdentity"].as_str().filter(|h| !h.is_empty()).map(str::to_owned)
    }

    /// Product writes to `resource` (plural), whatever their outcome, in order.
    pub fn product_writes_to(&self, resource: &str) -> Vec<super::Request> {
        self.product_writes().into_iter().filter(|r| r.resource == resource).collect()
    }

    /// Product writes to `resource` that took effect: a 409 is a conditional write that lost a
    /// race with another writer (on a real cluster, often a controller's status update) and is
    /// re-read and planned again.
    pub fn acknowledged_writes_to(&self, resource: &str) -> Vec<super::Request> {
        self.product_writes_to(resource).into_iter().filter(|r| r.succeeded()).collect()
    }
}

impl Env {
    /// Freezes every kubelet (kwok stopped with SIGSTOP): no pod becomes Ready, no terminating
    /// pod goes away.
    pub fn pause_kubelets(&self) {
        self.cluster.signal("kwok", "STOP");
    }

    /// Lets the kubelets go on after [`Env::pause_kubelets`].
    pub fn resume_kubelets(&self) {
        self.cluster.signal("kwok", "CONT");
    }

    /// SIGKILLs `Env::product` and waits until the process is gone (its ports are free), so a
    /// fresh `start_product` on the same ports cannot race the dying one for them.
    pub async fn kill_product(&mut self) {
        let Some(mut product) = self.product.take() else { return };
        product.signal("KILL");
        wait_for("the killed product to exit", Duration::from_secs(30), || {
            let exited = matches!(product.child.try_wait(), Ok(Some(_)));
            async move { exited.then_some(()) }
        })
        .await;
    }
}
