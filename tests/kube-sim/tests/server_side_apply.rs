//! Server-side apply and `metadata.managedFields` over HTTP and through kubectl, against the
//! answers the real apiserver (v1.35.4) gave to the same requests: the four differences the
//! differential suite measured (conflicts, the required field manager, the name check, the
//! removal of a field its applier stopped applying) and the entries kubectl's writes leave.

mod common;

use common::{RawAnswer, Sim};
use serde_json::{Value, json};

const CM: &str = "/api/v1/namespaces/default/configmaps";

async fn apply(sim: &Sim, path: &str, query: &str, yaml: &str) -> RawAnswer {
    sim.raw_text("PATCH", &format!("{path}?{query}"), "application/apply-patch+yaml", yaml).await
}

fn configmap(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n{data}")
}

/// The entries with their times replaced by whether they have one (`T` / absent).
fn entries(object: &Value) -> Value {
    let mut list = object["metadata"]["managedFields"].clone();
    for entry in list.as_array_mut().into_iter().flatten() {
        if let Value::Object(map) = entry
            && map.contains_key("time")
        {
            map.insert("time".into(), json!("T"));
        }
    }
    list
}

fn entry(manager: &str, operation: &str, api_version: &str, timed: bool, fields: Value) -> Value {
    let mut entry = json!({"manager": manager, "operation": operation, "apiVersion": api_version,
        "fieldsType": "FieldsV1", "fieldsV1": fields});
    if timed {
        entry["time"] = json!("T");
    }
    entry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appliers_conflict_unless_forced_and_share_equal_values() {
    let sim = Sim::start().await;
    let created = apply(&sim, &format!("{CM}/c"), "fieldManager=alpha", &configmap("  owner: alpha\n")).await;
    assert_eq!(created.code, 201);
    let again = apply(&sim, &format!("{CM}/c"), "fieldManager=alpha", &configmap("  owner: alpha\n")).await;
    assert_eq!(again.code, 200);
    assert_eq!(again.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
    let conflict = apply(&sim, &format!("{CM}/c"), "fieldManager=beta", &configmap("  owner: beta\n")).await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 1 conflict: conflict with \"alpha\": .data.owner", "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"alpha\"", "field": ".data.owner"}]},
            "code": 409})
    );
    let forced =
        apply(&sim, &format!("{CM}/c"), "fieldManager=beta&force=true", &configmap("  owner: beta\n")).await;
    assert_eq!(forced.code, 200);
    assert_eq!(forced.body["data"]["owner"], "beta");
    assert_eq!(
        entries(&forced.body),
        json!([entry("beta", "Apply", "v1", true, json!({"f:data": {"f:owner": {}}}))])
    );
    let shared =
        apply(&sim, &format!("{CM}/c"), "fieldManager=gamma", &configmap("  owner: beta\n  extra: gamma\n"))
            .await;
    assert_eq!(shared.code, 200);
    assert_eq!(
        entries(&shared.body),
        json!([
            entry("beta", "Apply", "v1", true, json!({"f:data": {"f:owner": {}}})),
            entry("gamma", "Apply", "v1", true, json!({"f:data": {"f:extra": {}, "f:owner": {}}}))
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_options_and_names_are_checked() {
    let sim = Sim::start().await;
    let unmanaged = apply(&sim, &format!("{CM}/c"), "", &configmap("  a: \"1\"\n")).await;
    assert_eq!(unmanaged.code, 422);
    assert_eq!(
        unmanaged.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            "reason": "Invalid", "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]},
            "code": 422})
    );
    assert!(!sim.exists("v1", "configmaps", Some("default"), "c"));
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n";
    let mismatch = apply(&sim, &format!("{CM}/c"), "fieldManager=alpha", other).await;
    assert_eq!(mismatch.code, 400);
    assert_eq!(mismatch.body["reason"], "BadRequest");
    assert_eq!(
        mismatch.body["message"],
        "the name of the object (other) does not match the name on the URL (c)"
    );
    let nameless = apply(
        &sim,
        &format!("{CM}/nn"),
        "fieldManager=a",
        "apiVersion: v1\nkind: ConfigMap\ndata: {a: \"1\"}\n",
    )
    .await;
    assert_eq!(
        nameless.body["message"],
        "the name of the object (nn based on URL) was undeterminable: name must be provided"
    );
    let elsewhere = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nn, namespace: other}\n";
    let namespace = apply(&sim, &format!("{CM}/nn"), "fieldManager=a", elsewhere).await;
    assert_eq!(
        namespace.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    assert!(!sim.exists("v1", "configmaps", Some("default"), "other"));

    // Only apply takes `force`; a long manager and a bad dryRun are reported together.
    sim.raw("POST", CM, Some(json!({"metadata": {"name": "c"}}))).await;
    let forced =
        sim.raw_text("PATCH", &format!("{CM}/c?force=true"), "application/merge-patch+json", "{}").await;
    assert_eq!(forced.code, 422);
    assert_eq!(
        forced.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    let long = "x".repeat(129);
    let both = apply(
        &sim,
        &format!("{CM}/c"),
        &format!("fieldManager={long}&dryRun=Bad"),
        &configmap("  a: \"1\"\n"),
    )
    .await;
    assert_eq!(
        both.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: [fieldManager: Too long: may not be more than 128 bytes, dryRun: Unsupported value: [\"Bad\"]: supported values: \"All\"]"
    );
    // A JSON patch renaming the object is refused the same way.
    let rename = sim
        .raw_text(
            "PATCH",
            &format!("{CM}/c"),
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/metadata/name","value":"zz"}]"#,
        )
        .await;
    assert_eq!(rename.body["message"], "the name of the object (zz) does not match the name on the URL (c)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applier_omitting_a_field_it_alone_owned_removes_it() {
    let sim = Sim::start().await;
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let body = |replicas: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n{replicas}  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: main\n        image: example/web:1.0\n"
        )
    };
    let created = apply(&sim, path, "fieldManager=alpha", &body("  replicas: 0\n")).await;
    assert_eq!(created.code, 201);
    assert_eq!(created.body["spec"]["replicas"], 0);
    assert_eq!(created.body["metadata"]["generation"], 1);
    let applied = apply(&sim, path, "fieldManager=alpha", &body("")).await;
    assert_eq!(applied.code, 200);
    // Removed, then defaulted again: a spec change.
    assert_eq!(applied.body["spec"]["replicas"], 1);
    assert_eq!(applied.body["metadata"]["generation"], 2);
    let fields = &applied.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(fields.get("f:replicas").is_none(), "{fields}");
    assert_eq!(fields["f:selector"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_writes_leave_upstreams_entries() {
    let sim = Sim::start().await;
    sim.kubectl(&["create", "deployment", "web", "--image=nginx:1.27", "--port=80"]).await.ok();
    let creator = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:progressDeadlineSeconds": {},
        "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {}, "f:strategy": {"f:rollingUpdate": {".": {},
        "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}}, "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}}, "f:dnsPolicy": {},
        "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}});
    let deployment = sim.get("apps/v1", "deployments", Some("default"), "web");
    assert_eq!(
        entries(&deployment),
        json!([entry("kubectl-create", "Update", "apps/v1", true, creator.clone())])
    );
    // `kubectl scale` goes through `/scale`: the replicas move to an untimed scale entry.
    sim.kubectl(&["scale", "deployment", "web", "--replicas=2"]).await.ok();
    let deployment = sim.get("apps/v1", "deployments", Some("default"), "web");
    let mut without_replicas = creator;
    without_replicas["f:spec"].as_object_mut().map(|spec| spec.remove("f:replicas"));
    let mut scale = entry("kubectl", "Update", "apps/v1", false, json!({"f:spec": {"f:replicas": {}}}));
    scale["subresource"] = json!("scale");
    assert_eq!(
        entries(&deployment),
        json!([scale, entry("kubectl-create", "Update", "apps/v1", true, without_replicas)])
    );

    // Client-side apply, label, annotate and patch: one entry per manager.
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  labels: {a: \"1\"}\ndata:\n  k1: v1\n  k2: v2\n";
    let file = sim.write("csa.yaml", manifest);
    let file = file.to_str().expect("utf-8");
    sim.kubectl(&["apply", "-f", file]).await.ok();
    sim.write("csa.yaml", &manifest.replace("k2: v2", "k3: v3"));
    sim.kubectl(&["apply", "-f", file]).await.ok();
    sim.kubectl(&["label", "configmap", "csa", "b=2"]).await.ok();
    sim.kubectl(&["annotate", "configmap", "csa", "note=x"]).await.ok();
    sim.kubectl(&["patch", "configmap", "csa", "-p", r#"{"data":{"k1":"patched"}}"#]).await.ok();
    let cm = sim.get("v1", "configmaps", Some("default"), "csa");
    let mut list = entries(&cm).as_array().cloned().unwrap_or_default();
    list.sort_by_key(|e| e["manager"].as_str().map(String::from));
    assert_eq!(
        Value::Array(list),
        json!([
            entry(
                "kubectl-annotate",
                "Update",
                "v1",
                true,
                json!({"f:metadata": {"f:annotations": {"f:note": {}}}})
            ),
            entry(
                "kubectl-client-side-apply",
                "Update",
                "v1",
                true,
                json!({"f:data": {".": {}, "f:k3": {}},
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                "f:labels": {".": {}, "f:a": {}}}})
            ),
            entry("kubectl-label", "Update", "v1", true, json!({"f:metadata": {"f:labels": {"f:b": {}}}})),
            entry("kubectl-patch", "Update", "v1", true, json!({"f:data": {"f:k1": {}}}))
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_moves_an_object_from_client_side_to_server_side_apply() {
    let sim = Sim::start().await;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\n  labels: {a: \"1\"}\ndata:\n  k1: v1\n  k2: v2\n";
    let file = sim.write("mig.yaml", manifest);
    let file = file.to_str().expect("utf-8");
    sim.kubectl(&["apply", "-f", file]).await.ok();
    sim.write("mig.yaml", &manifest.replace("k1: v1", "k1: v1new").replace("  k2: v2\n", ""));
    // No conflict with kubectl-client-side-apply; kubectl then rewrites the entries itself.
    sim.kubectl(&["apply", "--server-side", "-f", file]).await.ok();
    let cm = sim.get("v1", "configmaps", Some("default"), "mig");
    assert_eq!(cm["data"], json!({"k1": "v1new"}));
    assert_eq!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{\"apiVersion\":\"v1\",\"data\":{\"k1\":\"v1new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"mig\",\"namespace\":\"default\"}}\n"
    );
    assert_eq!(
        entries(&cm),
        json!([
            entry(
                "kubectl-last-applied",
                "Apply",
                "v1",
                false,
                json!({"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}})
            ),
            entry(
                "kubectl",
                "Apply",
                "v1",
                true,
                json!({"f:data": {"f:k1": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
            )
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_managed_fields_list_clears_them() {
    let sim = Sim::start().await;
    let created = sim
        .raw(
            "POST",
            &format!("{CM}?fieldManager=maker"),
            Some(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})),
        )
        .await;
    assert_eq!(
        entries(&created.body),
        json!([entry("maker", "Update", "v1", true, json!({"f:data": {".": {}, "f:a": {}}}))])
    );
    // Sent back as read: kept (and the PUT's changes added).
    let mut object = created.body.clone();
    object["data"]["b"] = json!("2");
    let kept = sim.raw("PUT", &format!("{CM}/c?fieldManager=putter"), Some(object)).await;
    assert_eq!(kept.body["metadata"]["managedFields"].as_array().map(Vec::len), Some(2));
    // `[]` clears them, and later updates do not start tracking again.
    let mut cleared = kept.body.clone();
    cleared["metadata"]["managedFields"] = json!([]);
    let cleared = sim.raw("PUT", &format!("{CM}/c?fieldManager=putter"), Some(cleared)).await;
    assert_eq!(cleared.code, 200);
    assert!(cleared.body["metadata"].get("managedFields").is_none());
    let patched = sim
        .raw_text(
            "PATCH",
            &format!("{CM}/c?fieldManager=p"),
            "application/merge-patch+json",
            r#"{"data":{"c":"3"}}"#,
        )
        .await;
    assert!(patched.body["metadata"].get("managedFields").is_none());
    // An apply then starts with what is there belonging to `before-first-apply`.
    let applied = apply(&sim, &format!("{CM}/c"), "fieldManager=z", &configmap("  z: \"1\"\n")).await;
    let managers: Vec<&str> = applied.body["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(managers, ["z", "before-first-apply"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_are_tracked_on_their_subresource() {
    let sim = Sim::start().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let created = sim.raw("POST", "/api/v1/namespaces/default/pods?fieldManager=maker", Some(pod)).await;
    assert_eq!(created.code, 201);
    let fields = &created.body["metadata"]["managedFields"][0]["fieldsV1"];
    // Defaults are the creator's; what admission adds (the service account) is nobody's.
    assert!(fields["f:spec"].get("f:enableServiceLinks").is_some(), "{fields}");
    assert!(fields["f:spec"].get("f:serviceAccountName").is_none(), "{fields}");
    let mut status = created.body.clone();
    status["status"]["phase"] = json!("Running");
    let updated =
        sim.raw("PUT", "/api/v1/namespaces/default/pods/p/status?fieldManager=kubelet", Some(status)).await;
    assert_eq!(updated.code, 200);
    let kubelet = updated.body["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == "kubelet")
        .cloned()
        .expect("an entry for the status write");
    assert_eq!(kubelet["subresource"], "status");
    assert_eq!(kubelet["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
}
