//! `cleanup --stop-deployment NAMESPACE/NAME`: before anything is cleaned up, the product's own
//! Deployment is scaled to 0 and its pods are waited for, so no running replica recreates a
//! default PDB or surges again once the cleanup is done; last, what it made for itself there
//! ([`OwnObject`]) is removed. The Helm chart's pre-delete hook runs it (the replicas still
//! run then); by hand it replaces `kubectl scale --replicas=0`.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use serde_json::json;

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::keys::{SECRET_OWNER_LABEL, is_product_secret};
use eviction_autoscaler_shared::selector;

use super::{StepOutcome, failed};
use crate::error::{Error, is_conflict, is_not_found};

/// How long the pods may take to stop: beyond a pod's default 30 s grace period, with room.
const STOP_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the pods are listed meanwhile.
const POLL: Duration = Duration::from_secs(1);

/// `NAMESPACE/NAME` split in two; the error shows `example`.
pub fn namespaced_name(text: &str, example: &str) -> Result<(String, String), String> {
    match text.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((namespace.to_owned(), name.to_owned()))
        }
        _ => Err(format!("expected NAMESPACE/NAME (e.g. {example}), got {text:?}")),
    }
}

/// The product's own Deployment, as `--stop-deployment` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductDeployment {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for ProductDeployment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (namespace, name) = namespaced_name(text, "eviction-autoscaler/eviction-autoscaler")?;
        Ok(Self { namespace, name })
    }
}

impl fmt::Display for ProductDeployment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl ProductDeployment {
    /// The step's line in the report.
    pub fn action(&self) -> String {
        format!("stop deployment {self} (scale to 0, wait for its pods to go)")
    }

    /// Scales it to 0 and waits until none of its pods is left. Gone already: done already.
    pub async fn stop(&self, client: &Client) -> Result<StepOutcome, Error> {
        let what = format!("stop deployment {self}");
        let step_failed = |api_error| Error::Step { what: what.clone(), api_error };
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &self.namespace);
        let Some(deployment) = deployments.get_opt(&self.name).await.map_err(step_failed)? else {
            return Ok(StepOutcome::AlreadyDone);
        };
        let query = deployment
            .spec
            .as_ref()
            .map(|spec| selector::query(&spec.selector))
            .transpose()
            .map_err(|e| Error::ProductNotStopped { deployment: self.to_string(), why: e.to_string() })?
            .unwrap_or_default();
        let scaled = deployment.spec.as_ref().and_then(|s| s.replicas) != Some(0);
        if scaled {
            let patch = Patch::Merge(json!({"spec": {"replicas": 0}}));
            deployments.patch(&self.name, &PatchParams::default(), &patch).await.map_err(step_failed)?;
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let started = tokio::time::Instant::now();
        loop {
            let left = pods.list(&ListParams::default().labels(&query)).await.map_err(step_failed)?.items;
            if left.is_empty() {
                return Ok(if scaled { StepOutcome::Done } else { StepOutcome::AlreadyDone });
            }
            if started.elapsed() >= STOP_TIMEOUT {
                let names: Vec<String> = left.into_iter().filter_map(|p| p.metadata.name).collect();
                return Err(Error::ProductNotStopped {
                    deployment: self.to_string(),
                    why: format!("its pods were still there after {STOP_TIMEOUT:?}: {}", names.join(", ")),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// What the product made for itself in its namespace that no manifest lists, so neither
/// `helm uninstall` nor `kubectl delete -k` removes it: its leader Lease and, with
/// self-managed certificates, its Secret. Removed last, and only once the product is stopped:
/// a running one would make them again, and lose its serving certificate meanwhile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnObject {
    /// The leader Lease, with leader election on.
    Lease { namespace: String, name: String },
    /// The self-managed certificate Secret, in that mode; removed only if labelled as ours.
    Secret { namespace: String, name: String },
}

impl OwnObject {
    /// Where the product's settings put them (`config` resolved as `run` resolves it;
    /// `client_namespace` stands in for an unset namespace, as the client's does in `run`).
    pub fn all(config: &Config, client_namespace: &str) -> Vec<Self> {
        let lease = config.leader_elect.then(|| Self::Lease {
            namespace: config.lease_namespace.clone(),
            name: config.lease_name.clone(),
        });
        let secret = (!config.cert_secret.is_empty()).then(|| Self::Secret {
            namespace: config.namespace_or(client_namespace),
            name: config.cert_secret.clone(),
        });
        lease.into_iter().chain(secret).collect()
    }

    /// The step's line in the report.
    pub fn action(&self) -> String {
        match self {
            Self::Lease { namespace, name } => format!("remove lease {namespace}/{name} (leader election)"),
            Self::Secret { namespace, name } => {
                format!("remove secret {namespace}/{name} (self-managed certificate)")
            }
        }
    }

    /// Deletes it (a Secret by UID, and only if the product made it).
    pub async fn remove(&self, client: &Client) -> Result<StepOutcome, Error> {
        let deleted = |result: Result<(), kube::Error>, what: String| match result {
            Ok(_) => Ok(StepOutcome::Done),
            Err(e) if is_not_found(&e) => Ok(StepOutcome::AlreadyDone),
            Err(e) if is_conflict(&e) => {
                Ok(StepOutcome::Skipped("replaced meanwhile; run cleanup again".into()))
            }
            Err(e) => Err(failed(what)(e)),
        };
        match self {
            Self::Lease { namespace, name } => {
                let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
                deleted(
                    api.delete(name, &DeleteParams::default()).await.map(drop),
                    format!("remove lease {namespace}/{name}"),
                )
            }
            Self::Secret { namespace, name } => {
                let what = format!("remove secret {namespace}/{name}");
                let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
                let Some(secret) = api.get_opt(name).await.map_err(failed(what.clone()))? else {
                    return Ok(StepOutcome::AlreadyDone);
                };
                if !is_product_secret(&secret.metadata) {
                    let (key, value) = SECRET_OWNER_LABEL;
                    let why = format!("not made by eviction-autoscaler (no label {key}={value})");
                    return Ok(StepOutcome::Skipped(why));
                }
                let preconditions = Preconditions { uid: secret.metadata.uid, resource_version: None };
                let params = DeleteParams { preconditions: Some(preconditions), ..DeleteParams::default() };
                deleted(api.delete(name, &params).await.map(drop), what)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OwnObject, ProductDeployment};
    use eviction_autoscaler_shared::config::{Config, SettingsArgs};

    #[test]
    fn the_deployment_is_named_namespace_slash_name() {
        let parsed: ProductDeployment = "ops/eviction-autoscaler".parse().expect("valid");
        assert_eq!(parsed, ProductDeployment { namespace: "ops".into(), name: "eviction-autoscaler".into() });
        assert_eq!(parsed.to_string(), "ops/eviction-autoscaler");
        for bad in ["eviction-autoscaler", "/name", "ns/", "a/b/c", ""] {
            let error = bad.parse::<ProductDeployment>().expect_err(bad);
            assert!(error.contains("NAMESPACE/NAME"), "{bad}: {error}");
        }
    }

    #[test]
    fn the_own_objects_are_where_the_settings_put_them() {
        let resolve = |args: SettingsArgs| Config::resolve(&args, None).expect("valid settings");
        let in_ops = || SettingsArgs { pod_namespace: Some("ops".into()), ..SettingsArgs::default() };
        // The chart's self-managed mode: the Lease and the Secret in the pod's namespace.
        let self_managed = SettingsArgs { cert_secret: Some("eviction-autoscaler-tls".into()), ..in_ops() };
        let actions: Vec<String> =
            OwnObject::all(&resolve(self_managed), "default").iter().map(OwnObject::action).collect();
        assert_eq!(
            actions,
            [
                "remove lease ops/eviction-autoscaler (leader election)",
                "remove secret ops/eviction-autoscaler-tls (self-managed certificate)"
            ]
        );
        // cert-manager's Secret is not the product's; without leader election there is no Lease.
        let no_lease = SettingsArgs { leader_elect: Some("false".into()), ..in_ops() };
        assert_eq!(OwnObject::all(&resolve(no_lease), "default"), []);
    }
}
