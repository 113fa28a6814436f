//! Watch semantics: in-process streams (resume, selector transitions, 410, bookmarks,
//! timeouts, initial events) and a kube-rs reflector that stays consistent across a 410.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Sim, eventually};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent as KubeWatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube_sim::{Cluster, ClusterConfig, Gvr, WatchEventType, WatchOptions, WatchStream};
use serde_json::json;

fn cm_gvr() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}

async fn create_cm(cluster: &Cluster, name: &str, app: &str) -> u64 {
    let obj =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}});
    let created = cluster.create(&cm_gvr(), Some("default"), obj, &Default::default()).await.expect("create");
    created["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("rv")
}

async fn relabel(cluster: &Cluster, name: &str, app: &str) {
    let patch = json!({"metadata": {"labels": {"app": app}}}).to_string();
    cluster
        .patch(
            &cm_gvr(),
            Some("default"),
            name,
            None,
            kube_sim::patch::PatchType::Merge,
            patch.as_bytes(),
            &Default::default(),
        )
        .await
        .expect("patch");
}

async fn next(stream: &mut WatchStream) -> (WatchEventType, String) {
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("event in time")
        .expect("stream open");
    (ev.event_type, ev.object["metadata"]["name"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn initial_events_then_live_changes_and_exclusive_resume() {
    let cluster = Cluster::default();
    create_cm(&cluster, "a", "web").await;
    let rv_b = create_cm(&cluster, "b", "web").await;
    let mut stream = cluster.watch(&cm_gvr(), Some("default"), &WatchOptions::default()).expect("watch");
    assert_eq!(next(&mut stream).await, (WatchEventType::Added, "a".into()));
    assert_eq!(next(&mut stream).await, (WatchEventType::Added, "b".into()));
    create_cm(&cluster, "c", "web").await;
    assert_eq!(next(&mut stream).await, (WatchEventType::Added, "c".into()));

    let opts = WatchOptions { resource_version: Some(rv_b.to_string()), ..WatchOptions::default() };
    let mut resumed = cluster.watch(&cm_gvr(), Some("default"), &opts).expect("watch");
    assert_eq!(next(&mut resumed).await, (WatchEventType::Added, "c".into()), "resume is exclusive of rv_b");
}

#[tokio::test]
async fn selector_transitions_become_added_and_deleted() {
    let cluster = Cluster::default();
    create_cm(&cluster, "a", "web").await;
    let opts = WatchOptions { label_selector: Some("app=web".into()), ..WatchOptions::default() };
    let mut stream = cluster.watch(&cm_gvr(), Some("default"), &opts).expect("watch");
    assert_eq!(next(&mut stream).await, (WatchEventType::Added, "a".into()));
    relabel(&cluster, "a", "db").await;
    let ev =
        tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("in time").expect("event");
    assert_eq!(ev.event_type, WatchEventType::Deleted);
    assert_eq!(ev.object["metadata"]["labels"]["app"], "web", "DELETED carries the previous state");
    assert_eq!(ev.object["metadata"]["resourceVersion"], json!(cluster.resource_version().to_string()));
    create_cm(&cluster, "other", "db").await;
    relabel(&cluster, "a", "web").await;
    assert_eq!(
        next(&mut stream).await,
        (WatchEventType::Added, "a".into()),
        "never-matching objects are skipped"
    );
}

#[tokio::test]
async fn compacted_version_gets_expired_error_event() {
    let cluster = Cluster::default();
    let rv = create_cm(&cluster, "a", "web").await;
    let opts = WatchOptions { resource_version: Some(rv.to_string()), ..WatchOptions::default() };
    let mut live = cluster.watch(&cm_gvr(), Some("default"), &opts).expect("watch");
    cluster.compact_history();
    for stream in [&mut live, &mut cluster.watch(&cm_gvr(), Some("default"), &opts).expect("watch")] {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("in time")
            .expect("event");
        assert_eq!(ev.event_type, WatchEventType::Error);
        assert_eq!(ev.object["code"], 410);
        assert_eq!(ev.object["reason"], "Expired");
        assert!(stream.next().await.is_none(), "the stream closes after the ERROR event");
    }
}

#[tokio::test]
async fn bookmarks_only_when_allowed_and_timeouts_close() {
    let config = ClusterConfig { bookmark_interval: Duration::from_millis(100), ..ClusterConfig::default() };
    let cluster = Cluster::new(config);
    let rv = cluster.resource_version().to_string();
    let with =
        WatchOptions { resource_version: Some(rv.clone()), allow_bookmarks: true, ..WatchOptions::default() };
    let mut stream = cluster.watch(&cm_gvr(), Some("default"), &with).expect("watch");
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("in time")
        .expect("bookmark");
    assert_eq!(ev.event_type, WatchEventType::Bookmark);
    assert_eq!(ev.object["kind"], "ConfigMap");
    assert_eq!(ev.object["metadata"]["resourceVersion"], json!(rv));

    let without = WatchOptions {
        resource_version: Some(rv),
        timeout: Some(Duration::from_millis(400)),
        ..WatchOptions::default()
    };
    let mut quiet = cluster.watch(&cm_gvr(), Some("default"), &without).expect("watch");
    let end =
        tokio::time::timeout(Duration::from_secs(5), quiet.next()).await.expect("closes at the timeout");
    assert!(end.is_none(), "no bookmark without allowWatchBookmarks, then a clean close");
}

#[tokio::test]
async fn send_initial_events_ends_with_marked_bookmark() {
    let cluster = Cluster::default();
    create_cm(&cluster, "a", "web").await;
    let opts = WatchOptions { send_initial_events: true, allow_bookmarks: true, ..WatchOptions::default() };
    let mut stream = cluster.watch(&cm_gvr(), Some("default"), &opts).expect("watch");
    assert_eq!(next(&mut stream).await, (WatchEventType::Added, "a".into()));
    let ev = stream.next().await.expect("bookmark");
    assert_eq!(ev.event_type, WatchEventType::Bookmark);
    assert_eq!(ev.object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_watch_over_http() {
    let sim = Sim::start().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let rv = sim.cluster().resource_version().to_string();
    let mut stream = api.watch(&WatchParams::default().timeout(30), &rv).await.expect("watch").boxed();
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "w"}})).expect("cm");
    api.create(&PostParams::default(), &cm).await.expect("create");
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("in time")
        .expect("event")
        .expect("ok");
    match ev {
        KubeWatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("w")),
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_stays_consistent_across_forced_410() {
    let sim = Sim::start().await;
    let cluster = sim.cluster().clone();
    for name in ["a", "b", "c"] {
        create_cm(&cluster, name, "web").await;
    }
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream =
        reflector(writer, watcher(api, watcher::Config::default())).default_backoff().applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let names = move || -> BTreeSet<String> {
        reader.state().iter().filter_map(|c| c.metadata.name.clone()).collect()
    };
    let expected = |list: &[&str]| -> BTreeSet<String> { list.iter().map(|s| s.to_string()).collect() };
    assert!(
        eventually(Duration::from_secs(10), || names() == expected(&["a", "b", "c"])).await,
        "{:?}",
        names()
    );

    let lists_before = cluster.request_log().counters().get("list configmaps").copied().unwrap_or(0);
    // Changes that happen while the watch is being expired must still reach the cache.
    cluster.compact_history();
    create_cm(&cluster, "d", "web").await;
    cluster.delete(&cm_gvr(), Some("default"), "a", &Default::default()).await.expect("delete");
    assert!(
        eventually(Duration::from_secs(10), || names() == expected(&["b", "c", "d"])).await,
        "{:?}",
        names()
    );
    let lists_after = cluster.request_log().counters().get("list configmaps").copied().unwrap_or(0);
    assert!(lists_after > lists_before, "the 410 made the reflector relist");
    create_cm(&cluster, "e", "web").await;
    assert!(
        eventually(Duration::from_secs(10), || names() == expected(&["b", "c", "d", "e"])).await,
        "{:?}",
        names()
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_streaming_list_reflector() {
    let sim = Sim::start().await;
    let cluster = sim.cluster().clone();
    create_cm(&cluster, "a", "web").await;
    create_cm(&cluster, "b", "db").await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let config = watcher::Config::default().streaming_lists().labels("app=web");
    let stream = reflector(writer, watcher(api, config)).default_backoff().applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let names = move || -> BTreeSet<String> {
        reader.state().iter().filter_map(|c| c.metadata.name.clone()).collect()
    };
    assert!(
        eventually(Duration::from_secs(10), || names() == BTreeSet::from(["a".to_string()])).await,
        "{:?}",
        names()
    );
    relabel(&cluster, "b", "web").await;
    relabel(&cluster, "a", "db").await;
    assert!(
        eventually(Duration::from_secs(10), || names() == BTreeSet::from(["b".to_string()])).await,
        "{:?}",
        names()
    );
    let watches =
        cluster.request_log().records().into_iter().filter(|r| r.verb == "watch").collect::<Vec<_>>();
    assert!(
        watches.iter().any(|r| r.query.contains("sendInitialEvents=true")),
        "streaming list used: {watches:?}"
    );
    assert!(!cluster.request_log().counters().contains_key("list configmaps"), "no list request");
    task.abort();
}
