//! `cleanup --stop-deployment NAMESPACE/NAME`: before anything is cleaned up, the product's own
//! Deployment is scaled to 0 and its pods are waited for, so no running replica recreates a
//! default PDB or surges again once the cleanup is done. The Helm chart's pre-delete hook runs
//! it (the replicas still run then); by hand it replaces `kubectl scale --replicas=0`.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use eviction_autoscaler_shared::selector;

use super::StepOutcome;
use crate::error::Error;

/// How long the pods may take to stop: beyond a pod's default 30 s grace period, with room.
const STOP_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the pods are listed meanwhile.
const POLL: Duration = Duration::from_secs(1);

/// The product's own Deployment, as `--stop-deployment` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductDeployment {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for ProductDeployment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Self { namespace: namespace.to_owned(), name: name.to_owned() })
            }
            _ => Err(format!(
                "expected NAMESPACE/NAME (e.g. eviction-autoscaler/eviction-autoscaler), got {text:?}"
            )),
        }
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
        let failed = |api_error| Error::Step { what: what.clone(), api_error };
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &self.namespace);
        let Some(deployment) = deployments.get_opt(&self.name).await.map_err(failed)? else {
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
            deployments.patch(&self.name, &PatchParams::default(), &patch).await.map_err(failed)?;
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let started = tokio::time::Instant::now();
        loop {
            let left = pods.list(&ListParams::default().labels(&query)).await.map_err(failed)?.items;
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

#[cfg(test)]
mod tests {
    use super::ProductDeployment;

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
}
