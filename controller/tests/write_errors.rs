//! Write failures against kube-sim, made real by an admission hook: a 409 is answered by a
//! re-read and one more write; a 403 (a policy forbidding scaling) leaves the EAS `Degraded`
//! with `SurgeForbidden` and no hot loop of writes.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Sim, config, drain_fixture, eventually, start_controller};
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use kube_sim::{AdmissionHook, AdmissionRequest, ApiError, Operation};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

/// Refuses Deployment updates: the first `conflicts` with 409, then all with 403 if `forbid`.
struct Refuse {
    conflicts: AtomicUsize,
    forbid: bool,
    seen: AtomicUsize,
}

impl AdmissionHook for Refuse {
    fn mutate<'a>(&'a self, _: &'a AdmissionRequest) -> BoxFuture<'a, Result<Option<Value>, ApiError>> {
        Box::pin(async { Ok(None) })
    }

    fn validate<'a>(&'a self, request: &'a AdmissionRequest) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            if request.resource.plural != "deployments" || request.operation != Operation::Update {
                return Ok(());
            }
            self.seen.fetch_add(1, Ordering::SeqCst);
            let left = self.conflicts.load(Ordering::SeqCst);
            if left > 0 {
                self.conflicts.store(left - 1, Ordering::SeqCst);
                return Err(ApiError::optimistic_lock("apps", "deployments", &request.name));
            }
            if self.forbid {
                return Err(ApiError::forbidden(
                    "apps",
                    "deployments",
                    &request.name,
                    "scaling is not allowed here",
                ));
            }
            Ok(())
        })
    }
}

fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

#[tokio::test]
async fn a_conflict_is_answered_by_re_reading_and_writing_again() {
    let sim = Sim::start().await;
    sim.seed(&drain_fixture(1, "", true, true)).await;
    let hook = Arc::new(Refuse { conflicts: AtomicUsize::new(1), forbid: false, seen: AtomicUsize::new(0) });
    sim.server.cluster().set_admission_hook(Some(hook.clone()));
    let running = start_controller(&sim, config("1s", "1h")).await;
    let deployments: Api<Deployment> = Api::namespaced(sim.client().await, "apps");
    eventually("surged after the conflict", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 2)
    })
    .await;
    assert_eq!(hook.seen.load(Ordering::SeqCst), 2, "one refused write, one accepted");
    running.stop().await;
}

#[tokio::test]
async fn forbidden_scaling_degrades_the_eas_without_a_write_loop() {
    let sim = Sim::start().await;
    sim.seed(&drain_fixture(1, "", true, true)).await;
    let hook = Arc::new(Refuse { conflicts: AtomicUsize::new(0), forbid: true, seen: AtomicUsize::new(0) });
    sim.server.cluster().set_admission_hook(Some(hook.clone()));
    let running = start_controller(&sim, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(sim.client().await, "apps");
    let degraded = eventually("EAS Degraded with SurgeForbidden", WAIT, || async {
        let status = eas.get("web").await.ok()?.status?;
        status.conditions.into_iter().find(|c| c.type_ == "Degraded" && c.reason == "SurgeForbidden")
    })
    .await;
    assert!(degraded.message.contains("forbidden"), "{}", degraded.message);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(hook.seen.load(Ordering::SeqCst), 1, "one attempt, then writes pause");
    let gauge = r#"eviction_autoscaler_degraded{reason="SurgeForbidden"}"#;
    let degraded_count = || {
        let text = running.metrics_text();
        text.lines().find(|l| l.starts_with(gauge)).map(|l| l[gauge.len()..].trim().to_owned())
    };
    assert_eq!(degraded_count().as_deref(), Some("1"), "{}", running.metrics_text());
    let refused = r#"eviction_autoscaler_writes_total{kind="deployments",outcome="forbidden"} 1"#;
    assert!(running.metrics_text().contains(refused), "{}", running.metrics_text());

    // The Deployment deleted: it is degraded no more (the alert would fire forever).
    let deployments: Api<Deployment> = Api::namespaced(sim.client().await, "apps");
    deployments.delete("web", &Default::default()).await.expect("delete the Deployment");
    eventually("the degraded gauge cleared", WAIT, || async {
        (degraded_count().as_deref() == Some("0")).then_some(())
    })
    .await;
    running.stop().await;
}
