//! Namespace deletion as a real v1.35 control plane does it: the DELETE answers the namespace
//! `Terminating` (`spec.finalizers: [kubernetes]` kept), creates in it are refused with 403, the
//! namespace controller deletes the pods, then the rest (waiting for finalizers), reports on the
//! deletion conditions, removes `kubernetes` through `/finalize`, and the namespace goes.

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};
use serde_json::{Value, json};

fn condition<'a>(namespace: &'a Value, condition_type: &str) -> Option<&'a Value> {
    namespace["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == condition_type)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_namespace_terminates_through_the_namespace_controller() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.kubectl(&["create", "namespace", "doomed"]).await.ok();
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["example.com/hold"]}});
    assert_eq!(sim.raw("POST", "/api/v1/namespaces/doomed/configmaps", Some(held)).await.code, 201);
    sim.apply(
        "web.yaml",
        &deployment_yaml("web", 2).replace("  name: web\n", "  name: web\n  namespace: doomed\n"),
    )
    .await;
    sim.wait_ready("doomed", "web", 2).await;

    let deleted = sim.raw("DELETE", "/api/v1/namespaces/doomed", None).await;
    assert_eq!(deleted.code, 200);
    let ns = &deleted.body;
    assert_eq!(ns["kind"], "Namespace");
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Terminating"}));

    // NamespaceLifecycle: the exact answer of the real apiserver.
    let refused = sim
        .raw(
            "POST",
            "/api/v1/namespaces/doomed/configmaps",
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}})),
        )
        .await;
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "configmaps \"d\" is forbidden: unable to create new content in namespace doomed because it is being terminated",
            "reason": "Forbidden", "details": {"name": "d", "kind": "configmaps", "causes": [{"reason": "NamespaceTerminating",
                "message": "namespace doomed is being terminated", "field": "metadata.namespace"}]}, "code": 403})
    );

    // Pods go first (gracefully), then the rest; the held ConfigMap keeps the namespace.
    sim.wait_until("only the held ConfigMap is left", Duration::from_secs(20), |s| {
        let ns = s.get("v1", "namespaces", None, "doomed");
        s.list("v1", "pods", Some("doomed")).is_empty()
            && s.list("apps/v1", "deployments", Some("doomed")).is_empty()
            && condition(&ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let ns = sim.get("v1", "namespaces", None, "doomed");
    assert_eq!(
        condition(&ns, "NamespaceContentRemaining").map(|c| (c["reason"].clone(), c["message"].clone())),
        Some((
            json!("SomeResourcesRemain"),
            json!("Some resources are remaining: configmaps. has 1 resource instances")
        ))
    );
    assert_eq!(
        condition(&ns, "NamespaceFinalizersRemaining").map(|c| c["message"].clone()),
        Some(json!(
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        ))
    );
    assert_eq!(
        condition(&ns, "NamespaceDeletionDiscoveryFailure")
            .map(|c| (c["status"].clone(), c["reason"].clone())),
        Some((json!("False"), json!("ResourcesDiscovered")))
    );
    assert_eq!(ns["status"]["conditions"].as_array().map(Vec::len), Some(5));
    let c = sim.get("v1", "configmaps", Some("doomed"), "c");
    assert!(c["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    // Releasing the finalizer lets the controller finish: the namespace is gone.
    let rv = c["metadata"]["resourceVersion"].clone();
    let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": null}});
    let gvr = kube_sim::Gvr::new("", "v1", "configmaps");
    sim.cluster()
        .patch(
            &gvr,
            Some("doomed"),
            "c",
            None,
            kube_sim::patch::PatchType::Merge,
            patch.to_string().as_bytes(),
            &Default::default(),
        )
        .await
        .expect("finalizer removed");
    sim.wait_until("the namespace is gone", Duration::from_secs(20), |s| {
        !s.exists("v1", "namespaces", None, "doomed")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immortal_namespaces_finalize_and_a_pure_api_server() {
    let sim = Sim::start().await;
    let refused = sim.raw("DELETE", "/api/v1/namespaces/default", None).await;
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.body["message"],
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    assert!(sim.exists("v1", "namespaces", None, "default"));

    // `finalize` takes PUT only and is listed in discovery.
    assert_eq!(sim.raw("GET", "/api/v1/namespaces/default/finalize", None).await.code, 405);
    let discovery = sim.raw("GET", "/api/v1", None).await.body;
    let finalize =
        discovery["resources"].as_array().and_then(|r| r.iter().find(|r| r["name"] == "namespaces/finalize"));
    assert_eq!(finalize.map(|f| f["verbs"].clone()), Some(json!(["update"])));

    // Without a namespace controller the API layer stands in for it, after answering as upstream.
    sim.kubectl(&["create", "namespace", "team"]).await.ok();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert_eq!(sim.raw("POST", "/api/v1/namespaces/team/configmaps", Some(cm)).await.code, 201);
    let deleted = sim.raw("DELETE", "/api/v1/namespaces/team", None).await;
    assert_eq!((deleted.code, &deleted.body["status"]["phase"]), (200, &json!("Terminating")));
    assert!(!sim.exists("v1", "namespaces", None, "team"));
    assert!(sim.list("v1", "configmaps", Some("team")).is_empty());

    // A main update cannot change spec.finalizers; finalize can (and the namespace goes once
    // it is being deleted and nothing else holds it).
    let ns = sim.get("v1", "namespaces", None, "kube-public");
    let mut edited = ns.clone();
    edited["spec"]["finalizers"] = json!([]);
    let updated = sim.raw("PUT", "/api/v1/namespaces/kube-public", Some(edited)).await;
    assert_eq!((updated.code, &updated.body["spec"]["finalizers"]), (200, &json!(["kubernetes"])));
    let mut emptied = updated.body.clone();
    emptied["spec"]["finalizers"] = json!([]);
    let finalized = sim.raw("PUT", "/api/v1/namespaces/kube-public/finalize", Some(emptied)).await;
    assert_eq!(finalized.code, 200, "{}", finalized.body);
    assert!(finalized.body["spec"].get("finalizers").is_none_or(|f| f == &json!([])));
    assert!(sim.exists("v1", "namespaces", None, "kube-public"), "not being deleted: it stays");
}
