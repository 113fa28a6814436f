//! CustomResourceDefinitions as a real v1.35 apiserver handles them: v1 defaults on create, the
//! zero status in the create answer, then `acceptedNames`, `NamesAccepted` and `Established`
//! written by the apiextensions controllers (so `kubectl wait --for condition=established`
//! returns), resources served only while the names are accepted, and name conflicts within a
//! group.

mod common;

use common::Sim;
use futures::StreamExt;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn widgets() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.life-probe.example.com"},
        "spec": {"group": "life-probe.example.com", "names": {"plural": "widgets", "kind": "Widget",
            "shortNames": ["wd"], "categories": ["all"]}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

fn without_times(mut status: Value) -> Value {
    for c in status["conditions"].as_array_mut().into_iter().flatten() {
        c.as_object_mut().map(|m| m.remove("lastTransitionTime"));
    }
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_is_defaulted_then_accepted_and_established() {
    let sim = Sim::start().await;
    let gvr = kube_sim::Gvr::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    let mut events = sim
        .cluster()
        .watch(
            &gvr,
            None,
            &kube_sim::WatchOptions {
                resource_version: Some(sim.cluster().resource_version().to_string()),
                ..Default::default()
            },
        )
        .expect("watch");
    let created = sim.raw("POST", CRDS, Some(widgets())).await;
    assert_eq!(created.code, 201, "{}", created.body);
    // The real apiserver's answer: defaulted names and conversion, the strategy's zero status.
    assert_eq!(
        created.body["spec"]["names"],
        json!({"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
            "listKind": "WidgetList", "categories": ["all"]})
    );
    assert_eq!(created.body["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(
        created.body["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    let stored = sim.raw("GET", &format!("{CRDS}/widgets.life-probe.example.com"), None).await;
    assert_eq!(
        without_times(stored.body["status"].clone()),
        json!({"conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
            "acceptedNames": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
                "listKind": "WidgetList", "categories": ["all"]},
            "storedVersions": ["v1"]})
    );
    assert_eq!(stored.body["metadata"]["generation"], 1, "status writes keep the generation");
    // As on the real apiserver: ADDED, then the naming controller's write, then the
    // establishing controller's.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = events.next().await.expect("an event");
        let established = event.object["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Established"))
            .map(|c| {
                format!("{}/{}", c["status"].as_str().unwrap_or(""), c["reason"].as_str().unwrap_or(""))
            });
        seen.push((event.event_type.as_str().to_string(), established));
    }
    assert_eq!(
        seen,
        vec![
            ("ADDED".to_string(), None),
            ("MODIFIED".to_string(), Some("False/Installing".to_string())),
            ("MODIFIED".to_string(), Some("True/InitialNamesAccepted".to_string())),
        ]
    );

    let run = sim
        .kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "crd/widgets.life-probe.example.com",
            "--timeout=10s",
        ])
        .await
        .ok();
    assert_eq!(
        run.stdout.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.life-probe.example.com condition met"
    );
    let widget =
        json!({"apiVersion": "life-probe.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}});
    let path = "/apis/life-probe.example.com/v1/namespaces/default/widgets";
    assert_eq!(sim.raw("POST", path, Some(widget)).await.code, 201);
    let listed = sim.kubectl(&["get", "wd", "-o", "name"]).await.ok();
    assert_eq!(listed.stdout.trim(), "widget.life-probe.example.com/w1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_whose_names_are_taken_is_not_served_until_they_are_free() {
    let sim = Sim::start().await;
    assert_eq!(sim.raw("POST", CRDS, Some(widgets())).await.code, 201);
    let gadgets = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.life-probe.example.com"},
        "spec": {"group": "life-probe.example.com", "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["wd"]},
            "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    assert_eq!(sim.raw("POST", CRDS, Some(gadgets)).await.code, 201);
    let status =
        sim.raw("GET", &format!("{CRDS}/gadgets.life-probe.example.com"), None).await.body["status"].clone();
    assert_eq!(
        without_times(status)["conditions"],
        json!([{"type": "NamesAccepted", "status": "False", "reason": "ShortNamesConflict", "message": "\"wd\" is already in use"},
            {"type": "Established", "status": "False", "reason": "NotAccepted", "message": "not all names are accepted"}])
    );
    let path = "/apis/life-probe.example.com/v1/namespaces/default/gadgets";
    assert_eq!(sim.raw("GET", path, None).await.code, 404);

    // Deleting the holder frees the short name: the other CRD is accepted and served.
    assert_eq!(sim.raw("DELETE", &format!("{CRDS}/widgets.life-probe.example.com"), None).await.code, 200);
    let status =
        sim.raw("GET", &format!("{CRDS}/gadgets.life-probe.example.com"), None).await.body["status"].clone();
    assert_eq!(status["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(status["conditions"][1]["status"], "True");
    assert_eq!(sim.raw("GET", path, None).await.code, 200);
}
