//! Admission webhooks as the apiserver calls them, seen from a real HTTPS webhook: the
//! `pods/eviction` AdmissionReview, failurePolicy, timeoutSeconds, denials, dry run and
//! JSONPatch (issue "kube-sim, part 2", "Done when").

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::webhook::{Answer, TestWebhook, eviction_guard};
use common::{Sim, deployment_yaml, test_behaviour};
use serde_json::{Value, json};

const HOOK: &str = "eviction.guard.example.com";
const SERVICE_DNS: &str = "guard-webhook.guard.svc";

/// A cluster routing service `guard/guard-webhook` to `addr`, with one Ready pod of `web`
/// in namespace `prod`; returns the pod's name.
async fn cluster_with_web(addr: SocketAddr) -> (Sim, String) {
    let behaviour = test_behaviour().with_service_endpoint("guard", "guard-webhook", addr);
    let sim = Sim::start_cluster(behaviour).await;
    sim.kubectl(&["create", "namespace", "prod"]).await.ok();
    let web = deployment_yaml("web", 1).replace("  name: web\n", "  name: web\n  namespace: prod\n");
    sim.apply("web.yaml", &web).await;
    sim.wait_ready("prod", "web", 1).await;
    let pod = sim.pods_of("prod", "web").remove(0);
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    (sim, name)
}

fn pod_untouched(sim: &Sim, name: &str, uid: &Value) -> bool {
    sim.exists("v1", "pods", Some("prod"), name) && {
        let pod = sim.get("v1", "pods", Some("prod"), name);
        pod["metadata"]["uid"] == *uid && pod["metadata"]["deletionTimestamp"].is_null()
    }
}

/// An address nothing listens on.
async fn closed_port() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_names_the_service_account_that_made_the_request() {
    let hook = TestWebhook::start(SERVICE_DNS, Answer::Allow).await;
    let (sim, pod) = cluster_with_web(hook.addr).await;
    sim.apply("guard.yaml", &eviction_guard(&hook.ca_bundle, "Fail", 5)).await;
    sim.server.ensure_service_account("prod", "drainer").await.expect("service account");
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: evict, namespace: prod}\n\
                rules: [{apiGroups: [''], resources: [pods/eviction], verbs: [create]}]\n---\n\
                apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: evict, namespace: prod}\n\
                roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: evict}\n\
                subjects: [{kind: ServiceAccount, name: drainer, namespace: prod}]\n";
    sim.apply("evict-role.yaml", role).await;
    let kubeconfig = sim.dir.path().join("drainer.kubeconfig");
    sim.server.write_service_account_kubeconfig("prod", "drainer", &kubeconfig).expect("kubeconfig");
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "prod"}});
    let file = sim.write("eviction.json", &eviction.to_string());
    let path = format!("/api/v1/namespaces/prod/pods/{pod}/eviction");
    let file = file.display().to_string();
    let run = sim.kubectl_as(&kubeconfig, &["create", "--raw", &path, "-f", &file]).await;
    assert_eq!(run.code, 0, "eviction as the ServiceAccount: {}", run.stderr);

    let account = sim.get("v1", "serviceaccounts", Some("prod"), "drainer");
    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let mut user = calls[0].review["request"]["userInfo"].clone();
    // A bound token's id, as upstream's token authenticator adds it: `JTI=<uuid>`.
    let credential =
        user["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap_or_default();
    assert!(credential.strip_prefix("JTI=").is_some_and(|id| id.len() == 36), "{user}");
    user.as_object_mut().map(|u| u.remove("extra"));
    assert_eq!(
        user,
        json!({
            "username": "system:serviceaccount:prod:drainer",
            "uid": account["metadata"]["uid"],
            "groups": ["system:serviceaccounts", "system:serviceaccounts:prod", "system:authenticated"],
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_sends_the_eviction_review_of_the_spec_example() {
    let hook = TestWebhook::start(SERVICE_DNS, Answer::Allow).await;
    let (sim, pod) = cluster_with_web(hook.addr).await;
    sim.apply("guard.yaml", &eviction_guard(&hook.ca_bundle, "Fail", 5)).await;
    let node = sim.get("v1", "pods", Some("prod"), &pod)["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let run = sim
        .kubectl(&["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"])
        .await;
    assert_eq!(run.code, 0, "drain failed\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);

    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "one call per eviction: {calls:?}");
    assert_eq!(calls[0].uri, "/validate-eviction?timeout=5s");
    assert_eq!(calls[0].content_type, "application/json");
    let mut review = calls[0].review.clone();
    let uid = review["request"]["uid"].as_str().unwrap_or_default().to_string();
    assert_eq!(uid.len(), 36, "a fresh UUID per call: {uid}");
    assert_eq!(
        review["request"]["userInfo"],
        json!({"username": "admin", "uid": "admin", "groups": ["system:masters", "system:authenticated"]}),
        "the requester is the authenticated user of the eviction (kubectl's admin kubeconfig)"
    );
    // The spec's example was taken with another requester; everything else must match.
    review["request"]["uid"] = json!("<uid>");
    review["request"]["userInfo"] = json!("<userInfo>");
    let expected = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "<uid>",
            "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "subResource": "eviction",
            "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "requestSubResource": "eviction",
            "name": pod,
            "namespace": "prod",
            "operation": "CREATE",
            "userInfo": "<userInfo>",
            "object": {
                "kind": "Eviction",
                "apiVersion": "policy/v1",
                "metadata": {"name": pod, "namespace": "prod", "creationTimestamp": null},
                "deleteOptions": {}
            },
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        }
    });
    assert_eq!(review, expected);
    assert!(!sim.exists("v1", "pods", Some("prod"), &pod), "the allowed eviction went through");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_is_down_blocks_with_fail_and_is_skipped_with_ignore() {
    let down = closed_port().await;
    let (sim, pod) = cluster_with_web(down).await;
    let ca = TestWebhook::start(SERVICE_DNS, Answer::Allow).await.ca_bundle.clone();
    sim.apply("guard.yaml", &eviction_guard(&ca, "Fail", 5)).await;
    let uid = sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["uid"].clone();

    let answer = sim.evict("prod", &pod, json!({}), "").await;
    assert_eq!(answer.code, 500, "{answer:?}");
    let cause = format!(
        "failed calling webhook \"{HOOK}\": failed to call webhook: Post \"https://guard-webhook.guard.svc:443/validate-eviction?timeout=5s\": dial tcp {down}: connect: connection refused"
    );
    assert_eq!(answer.body["reason"], "InternalError");
    assert_eq!(answer.body["message"], format!("Internal error occurred: {cause}"));
    assert_eq!(answer.body["details"]["causes"][0]["message"], cause);
    assert!(pod_untouched(&sim, &pod, &uid), "a failed call blocks the eviction");

    sim.apply("guard.yaml", &eviction_guard(&ca, "Ignore", 5)).await;
    let answer = sim.evict("prod", &pod, json!({}), "").await;
    assert_eq!(answer.code, 201, "{answer:?}");
    assert_eq!(answer.body["status"], "Success");
    sim.wait_until("the evicted pod is gone", Duration::from_secs(10), |s| {
        !s.exists("v1", "pods", Some("prod"), &pod)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_webhook_hits_timeout_seconds() {
    let hook = TestWebhook::start(SERVICE_DNS, Answer::Stall(Duration::from_secs(4))).await;
    let (sim, pod) = cluster_with_web(hook.addr).await;
    sim.apply("guard.yaml", &eviction_guard(&hook.ca_bundle, "Fail", 1)).await;
    let uid = sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["uid"].clone();

    let started = Instant::now();
    let answer = sim.evict("prod", &pod, json!({}), "").await;
    let took = started.elapsed();
    assert_eq!(answer.code, 500, "{answer:?}");
    let message = answer.body["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with("Post \"https://guard-webhook.guard.svc:443/validate-eviction?timeout=1s\": context deadline exceeded"),
        "{message}"
    );
    assert!(took >= Duration::from_secs(1) && took < Duration::from_millis(3500), "took {took:?}");
    assert!(pod_untouched(&sim, &pod, &uid));
    assert_eq!(hook.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_carries_the_webhook_code_and_the_upstream_message() {
    let hook =
        TestWebhook::start(SERVICE_DNS, Answer::Deny(json!({"code": 403, "message": "maintenance freeze"})))
            .await;
    let (sim, pod) = cluster_with_web(hook.addr).await;
    sim.apply("guard.yaml", &eviction_guard(&hook.ca_bundle, "Ignore", 5)).await;
    let uid = sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["uid"].clone();

    let answer = sim.evict("prod", &pod, json!({}), "").await;
    assert_eq!(answer.code, 403, "failurePolicy does not apply to denials: {answer:?}");
    assert_eq!(
        answer.body["message"],
        format!("admission webhook \"{HOOK}\" denied the request: maintenance freeze")
    );
    assert!(answer.body.get("reason").is_none(), "no default reason: {}", answer.body);

    hook.answer(Answer::Deny(json!({})));
    let answer = sim.evict("prod", &pod, json!({}), "").await;
    assert_eq!(answer.code, 400);
    assert_eq!(
        answer.body["message"],
        format!("admission webhook \"{HOOK}\" denied the request without explanation")
    );
    // Validating admission runs before the pod is read: a missing pod is denied too.
    let answer = sim.evict("prod", "no-such-pod", json!({}), "").await;
    assert_eq!(answer.code, 400, "{answer:?}");
    assert!(pod_untouched(&sim, &pod, &uid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_in_the_body_deletes_nothing_and_the_review_says_dry_run_false() {
    let hook = TestWebhook::start(SERVICE_DNS, Answer::Allow).await;
    let (sim, pod) = cluster_with_web(hook.addr).await;
    sim.apply("guard.yaml", &eviction_guard(&hook.ca_bundle, "Fail", 5)).await;
    let uid = sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["uid"].clone();
    let rv = sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["resourceVersion"].clone();

    let answer = sim.evict("prod", &pod, json!({"dryRun": ["All"]}), "").await;
    assert_eq!(answer.code, 201, "{answer:?}");
    let answer = sim.evict("prod", &pod, json!({}), "?dryRun=All").await;
    assert_eq!(answer.code, 201, "{answer:?}");
    let calls = hook.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].review["request"]["dryRun"], false, "body-only dry run is invisible to admission");
    assert_eq!(calls[0].review["request"]["object"]["deleteOptions"], json!({"dryRun": ["All"]}));
    assert_eq!(calls[1].review["request"]["dryRun"], true);
    assert_eq!(calls[1].review["request"]["options"]["dryRun"], json!(["All"]));
    assert!(pod_untouched(&sim, &pod, &uid));
    assert_eq!(
        sim.get("v1", "pods", Some("prod"), &pod)["metadata"]["resourceVersion"],
        rv,
        "nothing was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_webhook_patches_the_eviction_before_the_validating_one_sees_it() {
    let validator = TestWebhook::start(SERVICE_DNS, Answer::Allow).await;
    let mutator = TestWebhook::start(
        "mutator.guard.svc",
        Answer::Patch(json!([{"op": "add", "path": "/deleteOptions/gracePeriodSeconds", "value": 0}])),
    )
    .await;
    let (sim, pod) = cluster_with_web(validator.addr).await;
    sim.server.behaviour().expect("behaviour").set_service_endpoint("guard", "mutator", mutator.addr);
    sim.apply("guard.yaml", &eviction_guard(&validator.ca_bundle, "Fail", 5)).await;
    let mutating = eviction_guard(&mutator.ca_bundle, "Fail", 5)
        .replace("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        .replace("name: eviction-guard", "name: eviction-grace")
        .replace("name: guard-webhook, path: /validate-eviction", "name: mutator, path: /mutate");
    sim.apply("mutate.yaml", &mutating).await;

    let mark = sim.cluster().resource_version();
    let answer = sim.evict("prod", &pod, json!({}), "").await;
    assert_eq!(answer.code, 201, "{answer:?}");
    assert_eq!(mutator.calls().len(), 1);
    let seen = &validator.calls()[0].review["request"]["object"]["deleteOptions"];
    assert_eq!(*seen, json!({"gracePeriodSeconds": 0}), "the validating webhook sees the patched Eviction");
    assert!(!sim.exists("v1", "pods", Some("prod"), &pod), "grace 0 from the patch: removed at once");
    assert!(sim.cluster().resource_version() > mark);
}
