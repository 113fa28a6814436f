//! PodDisruptionBudget status and the Eviction API's budget rules, end to end (issue
//! "kube-sim, part 2": worked examples §2.9, unready pods, disruptedPods, two PDBs, Pending
//! pods, dry run, unhealthyPodEvictionPolicy, unobserved budgets, concurrency).

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, pdb_yaml, test_behaviour};
use serde_json::{Value, json};

/// (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed)
type Counts = (i64, i64, i64, i64);

fn status_tuple(pdb: &Value) -> Counts {
    let s = &pdb["status"];
    let n = |f: &str| s[f].as_i64().unwrap_or(-1);
    (n("expectedPods"), n("desiredHealthy"), n("currentHealthy"), n("disruptionsAllowed"))
}

fn bare_pod(name: &str, app: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    app: {app}\nspec:\n  containers:\n  - name: main\n    image: example/{app}:1.0\n"
    )
}

async fn wait_status(sim: &Sim, name: &str, want: Counts) -> Value {
    sim.wait_until(&format!("PDB {name} status {want:?}"), Duration::from_secs(30), |s| {
        let pdb = s.get("policy/v1", "poddisruptionbudgets", Some("default"), name);
        pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"] && status_tuple(&pdb) == want
    })
    .await;
    sim.get("policy/v1", "poddisruptionbudgets", Some("default"), name)
}

fn name_of(pod: &Value) -> String {
    pod["metadata"]["name"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_status_matches_the_worked_examples_including_unready_and_disrupted_pods() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    let cases: &[(&str, u32, &str, Counts)] = &[
        ("a", 3, "minAvailable: 2", (3, 2, 3, 1)),
        ("b", 3, "maxUnavailable: 1", (3, 2, 3, 1)),
        ("c", 10, "minAvailable: 25%", (10, 3, 10, 7)),
        ("d", 10, "maxUnavailable: 25%", (10, 7, 10, 3)),
        ("e", 3, "maxUnavailable: 50%", (3, 1, 3, 2)),
        ("f", 3, "minAvailable: 100%", (3, 3, 3, 0)),
        ("l", 0, "minAvailable: 1", (0, 1, 0, 0)),
    ];
    let mut yaml = String::new();
    for (app, replicas, rule, _) in cases {
        yaml.push_str(&format!("---\n{}---\n{}", deployment_yaml(app, *replicas), pdb_yaml(app, app, rule)));
    }
    for (i, app) in ["j", "j", "j", "k", "k", "k"].iter().enumerate() {
        yaml.push_str(&format!("---\n{}", bare_pod(&format!("{app}-{i}"), app)));
    }
    yaml.push_str(&format!(
        "---\n{}---\n{}",
        pdb_yaml("j", "j", "maxUnavailable: 1"),
        pdb_yaml("k", "k", "minAvailable: 2")
    ));
    sim.apply("all.yaml", &yaml).await;
    for (app, _, _, want) in cases {
        wait_status(&sim, app, *want).await;
    }
    wait_status(&sim, "j", (0, 0, 3, 0)).await;
    let k = wait_status(&sim, "k", (3, 2, 3, 1)).await;
    let condition = &k["status"]["conditions"][0];
    assert_eq!(
        (condition["type"].clone(), condition["status"].clone(), condition["reason"].clone()),
        (json!("DisruptionAllowed"), json!("True"), json!("SufficientPods"))
    );
    let f = sim.get("policy/v1", "poddisruptionbudgets", Some("default"), "f");
    assert_eq!(f["status"]["conditions"][0]["reason"], "InsufficientPods");

    // An unready pod stops counting as healthy at once.
    let unready = name_of(&sim.pods_of("default", "a")[0]);
    sim.kubectl(&["annotate", "pod", &unready, "kube-sim.dev/unready=true"]).await.ok();
    wait_status(&sim, "a", (3, 2, 2, 0)).await;
    sim.kubectl(&["annotate", "pod", &unready, "kube-sim.dev/unready-"]).await.ok();
    wait_status(&sim, "a", (3, 2, 3, 1)).await;

    // Example I: an approved eviction whose delete fails keeps its disruptedPods entry (no
    // rollback), so the pod no longer counts as healthy while it is Ready.
    let victim = name_of(&sim.pods_of("default", "b")[0]);
    let answer = sim.evict("default", &victim, json!({"preconditions": {"uid": "not-the-uid"}}), "").await;
    assert_eq!(answer.code, 409, "{answer:?}");
    let message = answer.body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "Operation cannot be fulfilled on Pod \"{victim}\": the UID in the precondition (not-the-uid)"
        )),
        "{message}"
    );
    let b = wait_status(&sim, "b", (3, 2, 2, 0)).await;
    assert!(b["status"]["disruptedPods"][&victim].is_string(), "{}", b["status"]);
    assert!(sim.exists("v1", "pods", Some("default"), &victim));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_budgets_pending_pods_and_dry_run() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    let pending = bare_pod("stuck", "stuck").replace("spec:\n", "spec:\n  nodeSelector:\n    pool: none\n");
    let yaml = format!(
        "{}---\n{}---\n{}---\n{}---\n{}",
        deployment_yaml("web", 2),
        pdb_yaml("web-one", "web", "maxUnavailable: 1"),
        pending,
        pdb_yaml("stuck", "stuck", "minAvailable: 1"),
        deployment_yaml("api", 2) + "---\n" + &pdb_yaml("api", "api", "maxUnavailable: 1"),
    );
    sim.apply("all.yaml", &yaml).await;
    sim.wait_ready("default", "web", 2).await;
    sim.wait_ready("default", "api", 2).await;
    sim.wait_pdb("default", "web-one", 1).await;
    sim.wait_pdb("default", "stuck", 0).await;
    let api_pdb = sim.wait_pdb("default", "api", 1).await;

    // Two budgets over one pod: 500 with the upstream body, nothing deleted.
    sim.apply("second.yaml", &pdb_yaml("web-two", "web", "maxUnavailable: 1")).await;
    sim.wait_pdb("default", "web-two", 1).await;
    let web = name_of(&sim.pods_of("default", "web")[0]);
    let answer = sim.evict("default", &web, json!({}), "").await;
    assert_eq!(answer.code, 500);
    assert_eq!(
        answer.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", "code": 500})
    );
    assert!(sim.exists("v1", "pods", Some("default"), &web));

    // A Pending pod is evicted without consulting its (exhausted) budget.
    sim.wait_until("stuck is unschedulable", Duration::from_secs(10), |s| {
        let pod = s.get("v1", "pods", Some("default"), "stuck");
        pod["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable"))
    })
    .await;
    let answer = sim.evict("default", "stuck", json!({}), "").await;
    assert_eq!(answer.code, 201, "{answer:?}");
    assert!(!sim.exists("v1", "pods", Some("default"), "stuck"), "unscheduled pods go at once");

    // Dry run (query or body): 201, and neither the budget nor the pod changes.
    let api = name_of(&sim.pods_of("default", "api")[0]);
    let pod_rv = sim.get("v1", "pods", Some("default"), &api)["metadata"]["resourceVersion"].clone();
    for (options, query) in [(json!({}), "?dryRun=All"), (json!({"dryRun": ["All"]}), "")] {
        let answer = sim.evict("default", &api, options, query).await;
        assert_eq!(answer.code, 201, "{answer:?}");
    }
    // policy/v1beta1 bodies are accepted; the URL and body names must agree.
    let path = format!("/api/v1/namespaces/default/pods/{api}/eviction");
    let body = json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "other"}});
    let answer = sim.raw("POST", &path, Some(body)).await;
    assert_eq!(answer.code, 400, "{answer:?}");
    assert_eq!(answer.body["message"], "name in URL does not match name in Eviction object");
    let body = json!({"apiVersion": "policy/v2", "kind": "Eviction", "metadata": {"name": api}});
    let answer = sim.raw("POST", &path, Some(body)).await;
    assert_eq!(answer.code, 400, "{answer:?}");
    let body = json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": api},
        "deleteOptions": {"dryRun": ["All"]}});
    let answer = sim.raw("POST", &path, Some(body)).await;
    assert_eq!(answer.code, 201, "{answer:?}");
    let after = sim.get("policy/v1", "poddisruptionbudgets", Some("default"), "api");
    assert_eq!(after["metadata"]["resourceVersion"], api_pdb["metadata"]["resourceVersion"]);
    assert_eq!(sim.get("v1", "pods", Some("default"), &api)["metadata"]["resourceVersion"], pod_rv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unready_pods_always_allow_versus_if_healthy_budget() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply(
        "web.yaml",
        &format!("{}---\n{}", deployment_yaml("web", 2), pdb_yaml("web", "web", "minAvailable: 2")),
    )
    .await;
    sim.wait_ready("default", "web", 2).await;
    sim.wait_pdb("default", "web", 0).await;
    let sick = name_of(&sim.pods_of("default", "web")[0]);
    sim.kubectl(&["annotate", "pod", &sick, "kube-sim.dev/unready=true"]).await.ok();
    wait_status(&sim, "web", (2, 2, 1, 0)).await;

    let answer = sim.evict("default", &sick, json!({}), "").await;
    assert_eq!(answer.code, 429, "IfHealthyBudget (default) protects the unready pod: {answer:?}");
    assert_eq!(answer.body["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(answer.body["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        answer.body["details"]["causes"][0]["message"],
        "The disruption budget web needs 2 healthy pods and has 1 currently"
    );
    assert_eq!(answer.retry_after, None, "no Retry-After on an exhausted budget");

    sim.kubectl(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}"#,
    ])
    .await
    .ok();
    sim.wait_until("the edited PDB is observed", Duration::from_secs(10), |s| {
        let pdb = s.get("policy/v1", "poddisruptionbudgets", Some("default"), "web");
        pdb["metadata"]["generation"] == 2 && pdb["status"]["observedGeneration"] == 2
    })
    .await;
    let answer = sim.evict("default", &sick, json!({}), "").await;
    assert_eq!(answer.code, 201, "AlwaysAllow evicts an unready pod with zero budget: {answer:?}");
    let pdb = sim.get("policy/v1", "poddisruptionbudgets", Some("default"), "web");
    assert!(
        pdb["status"]["disruptedPods"].as_object().is_none_or(|m| m.is_empty()),
        "the budget is not consumed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unobserved_budget_answers_429_with_retry_after_until_the_controller_sees_it() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 2)).await;
    sim.wait_ready("default", "web", 2).await;
    let behaviour = sim.server.behaviour().expect("behaviour");
    behaviour.pause("disruption");
    sim.apply("pdb.yaml", &pdb_yaml("web", "web", "maxUnavailable: 1")).await;
    let pod = name_of(&sim.pods_of("default", "web")[0]);
    let answer = sim.evict("default", &pod, json!({}), "").await;
    assert_eq!(answer.code, 429, "{answer:?}");
    assert_eq!(answer.retry_after.as_deref(), Some("10"));
    assert_eq!(answer.body["details"]["retryAfterSeconds"], 10);
    assert_eq!(
        answer.body["details"]["causes"][0]["message"],
        "The disruption budget web is still being processed by the server."
    );
    behaviour.resume("disruption");
    sim.wait_pdb("default", "web", 1).await;

    // Just edited: generation 2 is ahead of observedGeneration 1 until the next sync.
    behaviour.pause("disruption");
    sim.kubectl(&["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"maxUnavailable":2}}"#])
        .await
        .ok();
    let answer = sim.evict("default", &pod, json!({}), "").await;
    assert_eq!((answer.code, answer.retry_after.as_deref()), (429, Some("10")), "{answer:?}");
    behaviour.resume("disruption");
    sim.wait_pdb("default", "web", 2).await;
    let answer = sim.evict("default", &pod, json!({}), "").await;
    assert_eq!(answer.code, 201, "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_evictions_against_a_budget_of_one_admit_exactly_one() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply(
        "web.yaml",
        &format!("{}---\n{}", deployment_yaml("web", 20), pdb_yaml("web", "web", "minAvailable: 19")),
    )
    .await;
    sim.wait_ready("default", "web", 20).await;
    sim.wait_pdb("default", "web", 1).await;
    // No replacement pod while the evictions race: one Ready in time would rightly reopen the
    // budget and admit a second eviction (the apiserver would too).
    sim.server.behaviour().expect("behaviour").pause("replicaset");
    let names: Vec<String> = sim.pods_of("default", "web").iter().map(name_of).collect();
    let answers =
        futures::future::join_all(names.iter().map(|n| sim.evict("default", n, json!({}), ""))).await;
    let codes: Vec<u16> = answers.iter().map(|a| a.code).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 429).count(), 19, "{codes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_bypasses_the_budget_and_a_rolling_update_completes_under_min_available_equal_replicas() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply(
        "web.yaml",
        &format!("{}---\n{}", deployment_yaml("web", 3), pdb_yaml("web", "web", "minAvailable: 3")),
    )
    .await;
    sim.wait_ready("default", "web", 3).await;
    sim.wait_pdb("default", "web", 0).await;

    let victim = name_of(&sim.pods_of("default", "web")[0]);
    let run = sim.kubectl(&["delete", "pod", &victim]).await.ok();
    assert!(run.stdout.contains(&format!("pod \"{victim}\" deleted")), "{}", run.stdout);
    assert!(!sim.exists("v1", "pods", Some("default"), &victim), "kubectl waits until the pod is gone");
    sim.wait_ready("default", "web", 3).await;

    sim.kubectl(&["set", "image", "deployment/web", "web=example/web:2.0"]).await.ok();
    let run = sim.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]).await.ok();
    assert!(run.stdout.contains("successfully rolled out"), "{}", run.stdout);
    sim.wait_ready("default", "web", 3).await;
    let pods = sim.pods_of("default", "web");
    assert!(pods.iter().all(|p| p["spec"]["containers"][0]["image"] == "example/web:2.0"), "{pods:?}");
    sim.wait_pdb("default", "web", 0).await;
}
