//! Write failures made for real: a 409 — another writer changes the Deployment while the
//! surge write (decided from the caches) is being admitted — is answered by re-reading the
//! Deployment and its PDB and writing once more; a 403 (an admission policy fixing replicas) leaves the EAS `Degraded` with
//! `SurgeForbidden` and no hot loop of writes.

use std::sync::Arc;
use std::time::Duration;

use e2e_support::webhook::TestWebhook;
use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::common::{apiserver, config, deployment_writes, drain_fixture, eventually, start_controller};

const WAIT: Duration = Duration::from_secs(30);

/// Marks the Deployment as changed by the other writer.
const TOUCHED: &str = "test.example.com/touched";

fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

#[tokio::test]
async fn a_conflict_is_answered_by_re_reading_and_writing_again() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    // The other writer: while an update of web that it has not touched yet is being admitted,
    // it annotates web. The apiserver then finds web changed under the admitted write and, the
    // write carrying the resourceVersion it was planned from, answers 409.
    let deployments: Api<Deployment> = Api::namespaced(apiserver.client().await, "apps");
    let other = deployments.clone();
    let webhook = TestWebhook::start(Arc::new(move |request: Value| -> BoxFuture<'static, Value> {
        let other = other.clone();
        Box::pin(async move {
            let touched =
                request.pointer(&format!("/object/metadata/annotations/{}", TOUCHED.replace('/', "~1")));
            if touched.is_none() {
                let patch = json!({"metadata": {"annotations": {TOUCHED: "yes"}}});
                other.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.expect("touch web");
            }
            json!({"allowed": true})
        })
    }))
    .await;
    apiserver.create(&webhook.configuration("other-writer", &["UPDATE"]).to_string()).await;

    let running = start_controller(&apiserver, config("1s", "1h")).await;
    eventually("surged after the conflict", WAIT, || async {
        deployments.get("web").await.ok().filter(|d| replicas(d) == 2)
    })
    .await;
    running.stop().await;

    let requests = apiserver.requests_under_test();
    let on_web: Vec<(String, u16)> = requests
        .iter()
        .filter(|r| r.resource == "deployments" && r.name == "web" && r.verb != "watch" && r.verb != "list")
        .map(|r| (r.verb.clone(), r.code))
        .collect();
    let refused =
        on_web.iter().position(|w| *w == ("patch".to_owned(), 409)).expect("a write refused with 409");
    assert_eq!(
        on_web[refused..],
        [("patch".to_owned(), 409), ("get".to_owned(), 200), ("patch".to_owned(), 200)],
        "the refused write is followed by a re-read, then one accepted write: {on_web:?}"
    );
    // The first write was decided from the caches; after losing, the budget is read afresh too.
    let patches: Vec<usize> = (0..requests.len())
        .filter(|&i| requests[i].resource == "deployments" && requests[i].verb == "patch")
        .collect();
    let reads = |range: std::ops::Range<usize>, resource: &str| {
        requests[range].iter().filter(|r| r.resource == resource && r.verb == "get").count()
    };
    assert_eq!(reads(0..patches[0], "poddisruptionbudgets"), 0, "the first write read nothing afresh");
    assert_eq!(reads(patches[0]..patches[1], "poddisruptionbudgets"), 1, "the PDB re-read after the 409");
}

#[tokio::test]
async fn forbidden_scaling_degrades_the_eas_without_a_write_loop() {
    let apiserver = apiserver().await;
    apiserver.create(&drain_fixture(1, "", true, true)).await;
    // An admission policy (like AKS Deployment Safeguards) refusing any change of replicas.
    apiserver
        .create(
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "fixed-replicas"},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                        "operations": ["UPDATE"], "resources": ["deployments"]}]},
                    "validations": [{"expression": "object.spec.replicas == oldObject.spec.replicas",
                        "message": "policy: replicas are fixed here", "reason": "Forbidden"}],
                },
            })
            .to_string(),
        )
        .await;
    apiserver
        .create(
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "fixed-replicas"},
                "spec": {"policyName": "fixed-replicas", "validationActions": ["Deny"]},
            })
            .to_string(),
        )
        .await;
    let deployments: Api<Deployment> = Api::namespaced(apiserver.client().await, "apps");
    eventually("the policy refuses a dry-run scale", WAIT, || async {
        let patch = Patch::Merge(json!({"spec": {"replicas": 7}}));
        let refused = deployments.patch("web", &PatchParams::default().dry_run(), &patch).await;
        matches!(refused, Err(kube::Error::Api(s)) if s.code == 403).then_some(())
    })
    .await;

    let running = start_controller(&apiserver, config("1s", "1h")).await;
    let eas: Api<EvictionAutoScaler> = Api::namespaced(apiserver.client().await, "apps");
    let degraded = eventually("EAS Degraded with SurgeForbidden", WAIT, || async {
        let status = eas.get("web").await.ok()?.status?;
        status.conditions.into_iter().find(|c| c.type_ == "Degraded" && c.reason == "SurgeForbidden")
    })
    .await;
    assert!(degraded.message.contains("replicas are fixed here"), "{}", degraded.message);
    // Well past the cooldown and the back-off's first steps: still the one refused attempt.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let attempts: Vec<u16> = deployment_writes(&apiserver).iter().map(|r| r.code).collect();
    assert_eq!(attempts, [403], "one attempt, then writes pause");
    let gauge = r#"eviction_autoscaler_degraded{reason="SurgeForbidden"}"#;
    assert_eq!(running.metric(gauge), 1.0, "{}", running.metrics_text());
    let refused = r#"eviction_autoscaler_writes_total{kind="deployments",outcome="forbidden"}"#;
    assert_eq!(running.metric(refused), 1.0, "{}", running.metrics_text());

    // The Deployment deleted: it is degraded no more (the alert would fire forever).
    deployments.delete("web", &Default::default()).await.expect("delete the Deployment");
    eventually("the degraded gauge cleared", WAIT, || async { (running.metric(gauge) == 0.0).then_some(()) })
        .await;
    running.stop().await;
}
