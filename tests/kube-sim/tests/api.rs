//! API semantics through a kube-rs client: concurrency, dry run, patches, finalizers,
//! validation, selectors, paging, subresources, events mapping, request log.

mod common;

use common::{Sim, deployment_yaml, node_yaml, pod_yaml};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_sim::Gvr;
use serde_json::{Value, json};

fn status_of(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}})).expect("configmap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_resource_version_update_conflicts() {
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    let api: Api<Deployment> = Api::namespaced(sim.client().await, "default");
    let stale = api.get("web").await.expect("get");
    let mut fresh = stale.clone();
    fresh.spec.as_mut().expect("spec").replicas = Some(3);
    api.replace("web", &PostParams::default(), &fresh).await.expect("first update");
    let mut late = stale;
    late.spec.as_mut().expect("spec").replicas = Some(4);
    let status =
        status_of(api.replace("web", &PostParams::default(), &late).await.expect_err("stale update"));
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(api.get("web").await.expect("get").spec.and_then(|s| s.replicas), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_update_without_resource_version_is_invalid() {
    let sim = Sim::start().await;
    sim.seed("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: p\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: web\n").await;
    let api: Api<PodDisruptionBudget> = Api::namespaced(sim.client().await, "default");
    let mut pdb = api.get("p").await.expect("get");
    pdb.metadata.resource_version = None;
    let status = status_of(api.replace("p", &PostParams::default(), &pdb).await.expect_err("422"));
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("metadata.resourceVersion: Invalid value: 0: must be specified for an update"),
        "{}",
        status.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_with_resource_version_fails_like_upstream() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mut cm = configmap("c");
    cm.metadata.resource_version = Some("12".into());
    let status = status_of(api.create(&PostParams::default(), &cm).await.expect_err("500"));
    assert_eq!(status.code, 500);
    assert_eq!(status.message, "resourceVersion should not be set on objects to be created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_create_stores_nothing() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let rv_before = sim.cluster().resource_version();
    let pp = PostParams { dry_run: true, ..PostParams::default() };
    let answered = api.create(&pp, &configmap("dry")).await.expect("dry-run create");
    assert_eq!(answered.metadata.name.as_deref(), Some("dry"));
    assert!(answered.metadata.uid.is_some(), "dry run answers the fully formed object");
    assert!(!sim.exists("v1", "configmaps", Some("default"), "dry"));
    assert_eq!(sim.cluster().resource_version(), rv_before);
    // An invalid object is still rejected in dry-run mode.
    let bad = configmap("Not_Valid");
    let status = status_of(api.create(&pp, &bad).await.expect_err("invalid"));
    assert_eq!(status.code, 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_test_failure_is_unprocessable() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    api.create(&PostParams::default(), &configmap("c")).await.expect("create");
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/a", "value": "2"}, {"op": "replace", "path": "/data/a", "value": "3"}]))
            .expect("patch");
    let status =
        status_of(api.patch("c", &PatchParams::default(), &Patch::Json::<()>(patch)).await.expect_err("422"));
    assert_eq!(status.code, 422);
    assert_eq!(api.get("c").await.expect("get").data.and_then(|d| d.get("a").cloned()).as_deref(), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_keeps_object_terminating_until_removed() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mut cm = configmap("held");
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.expect("create");
    api.delete("held", &DeleteParams::default()).await.expect("delete accepted");
    let terminating = api.get("held").await.expect("still there");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let patch = json!({"metadata": {"finalizers": null}});
    api.patch("held", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("remove finalizer");
    let status = status_of(api.get("held").await.expect_err("gone"));
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_bumps_on_spec_not_status_or_labels() {
    let sim = Sim::start().await;
    sim.seed(&deployment_yaml("web", 2)).await;
    let api: Api<Deployment> = Api::namespaced(sim.client().await, "default");
    let label = json!({"metadata": {"labels": {"x": "y"}}});
    let d = api.patch("web", &PatchParams::default(), &Patch::Merge(&label)).await.expect("label");
    assert_eq!(d.metadata.generation, Some(1));
    let status = json!({"status": {"replicas": 2, "observedGeneration": 1}});
    let d = api.patch_status("web", &PatchParams::default(), &Patch::Merge(&status)).await.expect("status");
    assert_eq!(d.metadata.generation, Some(1));
    assert_eq!(d.status.and_then(|s| s.replicas), Some(2));
    let spec = json!({"spec": {"replicas": 5}, "status": {"replicas": 9}});
    let d = api.patch("web", &PatchParams::default(), &Patch::Merge(&spec)).await.expect("spec");
    assert_eq!(d.metadata.generation, Some(2));
    assert_eq!(d.status.and_then(|s| s.replicas), Some(2), "main resource ignores status");
    let scale = api.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(scale.status.and_then(|s| s.selector).as_deref(), Some("app=web"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_deployment_is_rejected_with_upstream_fields() {
    let sim = Sim::start().await;
    let api: Api<Deployment> = Api::namespaced(sim.client().await, "default");
    let bad: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "other"}},
        "spec": {"containers": [{"name": "c"}]}}}}))
    .expect("deployment");
    let status = status_of(api.create(&PostParams::default(), &bad).await.expect_err("422"));
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert!(status.message.starts_with("Deployment.apps \"web\" is invalid: "), "{}", status.message);
    assert!(
        status.message.contains("spec.template.spec.containers[0].image: Required value"),
        "{}",
        status.message
    );
    assert!(status.message.contains("`selector` does not match template `labels`"), "{}", status.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_field_selectors_and_paging() {
    let sim = Sim::start().await;
    let mut docs = vec![node_yaml("node-1")];
    for i in 0..7 {
        let node = if i % 2 == 0 { "node-1" } else { "node-2" };
        docs.push(pod_yaml(&format!("p{i}"), if i < 4 { "web" } else { "db" }, node));
    }
    sim.seed(&docs.join("---\n")).await;
    let api: Api<Pod> = Api::namespaced(sim.client().await, "default");
    let web = api.list(&ListParams::default().labels("app=web")).await.expect("list");
    assert_eq!(web.items.len(), 4);
    let on_node1 = api.list(&ListParams::default().fields("spec.nodeName=node-1")).await.expect("list");
    assert_eq!(on_node1.items.len(), 4);
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    loop {
        let page = api.list(&params).await.expect("page");
        names.extend(page.items.iter().filter_map(|p| p.metadata.name.clone()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
    let status = status_of(api.list(&ListParams::default().fields("spec.bogus=x")).await.expect_err("400"));
    assert_eq!(status.code, 400);
    let nodes: Api<Node> = Api::all(sim.client().await);
    assert_eq!(
        nodes
            .list(&ListParams::default().fields("spec.unschedulable=false"))
            .await
            .expect("nodes")
            .items
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_served_through_both_apis() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let v1: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "default");
    let event: k8s_openapi::api::events::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "web.1"}, "eventTime": "2026-11-29T10:00:00.000000Z", "action": "Scaled",
        "reason": "ScaledUp", "note": "scaled to 3", "type": "Normal", "reportingController": "eviction-autoscaler",
        "reportingInstance": "x", "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"}}))
    .expect("event");
    v1.create(&PostParams::default(), &event).await.expect("create events.k8s.io/v1 event");
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, "default");
    let stored = core.get("web.1").await.expect("core view");
    assert_eq!(stored.message.as_deref(), Some("scaled to 3"));
    assert_eq!(stored.involved_object.name.as_deref(), Some("web"));
    assert_eq!(stored.reporting_component.as_deref(), Some("eviction-autoscaler"));
    let listed = core.list(&ListParams::default().fields("involvedObject.name=web")).await.expect("list");
    assert_eq!(listed.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_log_counts_and_shows_no_write() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mark = sim.mark();
    api.list(&ListParams::default()).await.expect("list");
    let _ = api.get("missing").await;
    let records = sim.requests_since(mark);
    assert!(records.iter().all(|r| !r.is_write()));
    assert_eq!(records.iter().filter(|r| r.verb == "list" && r.resource == "configmaps").count(), 1);
    let miss = records.iter().find(|r| r.verb == "get").expect("get logged");
    assert_eq!((miss.code, miss.name.as_str(), miss.namespace.as_str()), (404, "missing", "default"));
    api.create(&PostParams::default(), &configmap("c")).await.expect("create");
    assert_eq!(sim.cluster().request_log().counters().get("create configmaps"), Some(&1));
    // The same log over HTTP.
    let run = sim.kubectl(&["get", "--raw", "/debug/requests"]).await.ok();
    let log: Value = serde_json::from_str(&run.stdout).expect("json");
    assert!(
        log["requests"]
            .as_array()
            .expect("requests")
            .iter()
            .any(|r| r["verb"] == "create" && r["resource"] == "configmaps")
    );
    assert_eq!(log["counters"]["create configmaps"], 1);
    let last = log["last_seq"].as_u64().expect("last_seq");
    let run = sim.kubectl(&["get", "--raw", &format!("/debug/requests?since={last}")]).await.ok();
    let later: Value = serde_json::from_str(&run.stdout).expect("json");
    let paths: Vec<&str> =
        later["requests"].as_array().expect("requests").iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(paths, ["/version"], "only the dispatcher's request of this kubectl run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_api_matches_http_semantics() {
    let sim = Sim::start().await;
    let cluster = sim.cluster();
    let gvr = Gvr::new("", "v1", "configmaps");
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}, "data": {"k": "v"}});
    let created = cluster.create(&gvr, Some("default"), obj, &Default::default()).await.expect("create");
    let name = created["metadata"]["name"].as_str().expect("generated name").to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let err = cluster
        .create(&gvr, Some("nowhere"), json!({"metadata": {"name": "x"}}), &Default::default())
        .await
        .expect_err("404");
    assert_eq!((err.code, err.message.as_str()), (404, "namespaces \"nowhere\" not found"));
    let mut stale = (*created).clone();
    stale["data"]["k"] = json!("w");
    cluster
        .update(&gvr, Some("default"), &name, None, stale.clone(), &Default::default())
        .await
        .expect("update");
    let err = cluster
        .update(&gvr, Some("default"), &name, None, stale, &Default::default())
        .await
        .expect_err("409");
    assert_eq!(err.reason, "Conflict");
    let outcome = cluster.delete(&gvr, Some("default"), &name, &Default::default()).await.expect("delete");
    assert!(matches!(outcome, kube_sim::DeleteOutcome::Deleted(_)));
}

#[tokio::test]
async fn part_two_seams_graceful_pods_and_deletion_finalizers() {
    let config = kube_sim::ClusterConfig {
        graceful_pod_deletion: true,
        deletion_finalizers: true,
        ..Default::default()
    };
    let cluster = kube_sim::Cluster::new(config);
    let objects = kube_sim::seed::parse_manifests(&format!(
        "{}---\n{}",
        pod_yaml("p", "web", "node-1"),
        deployment_yaml("web", 1)
    ))
    .expect("yaml");
    kube_sim::seed::apply(&cluster, objects).await.expect("seed");
    let pods = Gvr::new("", "v1", "pods");
    let outcome = cluster.delete(&pods, Some("default"), "p", &Default::default()).await.expect("delete");
    assert!(matches!(outcome, kube_sim::DeleteOutcome::Terminating(_)));
    assert_eq!(outcome.object()["metadata"]["deletionGracePeriodSeconds"], 30);
    let now = kube_sim::DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
    let outcome = cluster.delete(&pods, Some("default"), "p", &now).await.expect("kubelet delete");
    assert!(matches!(outcome, kube_sim::DeleteOutcome::Deleted(_)));

    let deployments = Gvr::new("apps", "v1", "deployments");
    let fg = kube_sim::DeleteOptions { propagation_policy: Some("Foreground".into()), ..Default::default() };
    let outcome = cluster.delete(&deployments, Some("default"), "web", &fg).await.expect("delete");
    assert_eq!(outcome.object()["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(cluster.get(&deployments, Some("default"), "web").is_ok(), "waits for the garbage collector");
}

#[tokio::test]
async fn admission_hook_sees_writes_before_persistence() {
    use futures::future::BoxFuture;
    struct DenyReplicasOverTen;
    impl kube_sim::AdmissionHook for DenyReplicasOverTen {
        fn mutate<'a>(
            &'a self,
            request: &'a kube_sim::AdmissionRequest,
        ) -> BoxFuture<'a, Result<Option<Value>, kube_sim::ApiError>> {
            Box::pin(async move {
                let mut object = request.object.clone().unwrap_or_default();
                object["metadata"]["labels"]["mutated"] = json!("yes");
                Ok(Some(object))
            })
        }
        fn validate<'a>(
            &'a self,
            request: &'a kube_sim::AdmissionRequest,
        ) -> BoxFuture<'a, Result<(), kube_sim::ApiError>> {
            Box::pin(async move {
                let object = request.object.as_ref();
                assert!(
                    object.is_none_or(|o| o["metadata"]["uid"].is_string()),
                    "validating admission sees the formed object"
                );
                match object.and_then(|o| o["spec"]["replicas"].as_i64()) {
                    Some(r) if r > 10 => Err(kube_sim::ApiError::forbidden(
                        "apps",
                        "deployments",
                        &request.name,
                        "too many replicas",
                    )),
                    _ => Ok(()),
                }
            })
        }
    }
    let cluster = kube_sim::Cluster::default();
    cluster.set_admission_hook(Some(std::sync::Arc::new(DenyReplicasOverTen)));
    let gvr = Gvr::new("apps", "v1", "deployments");
    let object = serde_json::to_value(deployment_json("web", 3)).expect("json");
    let created =
        cluster.create(&gvr, Some("default"), object.clone(), &Default::default()).await.expect("create");
    assert_eq!(created["metadata"]["labels"]["mutated"], "yes");
    let mut big = object;
    big["metadata"]["name"] = json!("big");
    big["spec"]["replicas"] = json!(20);
    let err = cluster.create(&gvr, Some("default"), big, &Default::default()).await.expect_err("denied");
    assert_eq!(err.code, 403);
    assert!(cluster.get(&gvr, Some("default"), "big").is_err());
}

fn deployment_json(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_subresource_is_served_and_discovered() {
    use futures::future::BoxFuture;
    struct Echo;
    impl kube_sim::SubresourceHandler for Echo {
        fn handle<'a>(
            &'a self,
            _cluster: &'a kube_sim::Cluster,
            request: kube_sim::SubresourceRequest,
        ) -> BoxFuture<'a, Result<(u16, Value), kube_sim::ApiError>> {
            Box::pin(async move {
                Ok((
                    201,
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "message": format!("{} {}/{} dryRun={}", request.method, request.namespace, request.name, request.dry_run)}),
                ))
            })
        }
    }
    let sim = Sim::start().await;
    let client = sim.client().await;
    let get = |path: &str| http::Request::get(path).body(Vec::new()).expect("request");
    let before: Value =
        serde_json::from_str(&client.request_text(get("/api/v1")).await.expect("/api/v1")).expect("json");
    assert!(!before["resources"].as_array().expect("resources").iter().any(|r| r["name"] == "pods/eviction"));
    let sub = kube_sim::ExtraSubresource {
        name: "eviction".into(),
        group: "policy".into(),
        version: "v1".into(),
        kind: "Eviction".into(),
        verbs: vec!["create".into()],
    };
    sim.cluster().register_subresource("", "pods", sub, std::sync::Arc::new(Echo));
    let after: Value =
        serde_json::from_str(&client.request_text(get("/api/v1")).await.expect("/api/v1")).expect("json");
    let entry = after["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .cloned()
        .expect("listed");
    assert_eq!(
        (entry["group"].as_str(), entry["version"].as_str(), entry["kind"].as_str()),
        (Some("policy"), Some("v1"), Some("Eviction"))
    );
    let post = http::Request::post("/api/v1/namespaces/default/pods/p/eviction?dryRun=All")
        .header("content-type", "application/json")
        .body(br#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}"#.to_vec())
        .expect("request");
    let answer: Value =
        serde_json::from_str(&client.request_text(post).await.expect("eviction")).expect("json");
    assert_eq!(answer["message"], "POST default/p dryRun=true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_discovery_content_type_and_protobuf_bodies() {
    use http_body_util::BodyExt;
    let sim = Sim::start().await;
    let client = sim.client().await;
    let request = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .body(Vec::new())
        .expect("request");
    let resp = client.send(request.map(kube::client::Body::from)).await.expect("send");
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(resp.headers()["cache-control"], "no-cache, private");
    // `kubectl create namespace team-b`'s protobuf body, answered in JSON.
    let body = b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1e\n\x16\n\x06team-b\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00\"\x00".to_vec();
    let request = http::Request::post("/api/v1/namespaces")
        .header("accept", "application/vnd.kubernetes.protobuf,application/json")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body(body)
        .expect("request");
    let resp = client.send(request.map(kube::client::Body::from)).await.expect("send");
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let ns: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(ns["metadata"]["name"], "team-b");
    assert!(sim.exists("v1", "namespaces", None, "team-b"));
}
