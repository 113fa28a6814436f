//! Table tests of field tracking. Every expected `managedFields` value below is what the real
//! apiserver (v1.35.4, the differential suite's control plane) answered to the same sequence of
//! requests (`kubectl` 1.35.4 and raw PATCH/PUT requests in namespaces `ssa-probe-*`), with
//! the times replaced by the ones these tests pass.

use serde_json::{Value, json};

use super::*;

const T1: &str = "2026-12-04T02:40:06Z";
const T2: &str = "2026-12-04T02:40:07Z";
const T3: &str = "2026-12-04T02:40:15Z";

/// A write of `kind` (group/version `api_version`) on the main resource by `manager` at `now`.
fn main_write<'a>(kind: &'a str, api_version: &'a str, manager: &'a str, now: &'a str) -> Write<'a> {
    let has_status = matches!(kind, "Deployment" | "Pod" | "ReplicaSet");
    Write {
        kind,
        crd_schema: None,
        api_version,
        subresource: "",
        reset: reset_fields("", "", has_status, ""),
        manager,
        now,
    }
}

fn with_entries(mut object: Value, entries: Option<Value>) -> Value {
    set_managed_fields(&mut object, entries);
    object
}

fn entries(object: &Value) -> Value {
    object["metadata"]["managedFields"].clone()
}

fn entry(manager: &str, operation: &str, api_version: &str, time: Option<&str>, fields: Value) -> Value {
    let mut entry = json!({"manager": manager, "operation": operation, "apiVersion": api_version,
        "fieldsType": "FieldsV1", "fieldsV1": fields});
    if let Some(time) = time {
        entry["time"] = json!(time);
    }
    entry
}

fn configmap(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

fn apply(write: &Write<'_>, live: Option<&Value>, config: &Value, force: bool) -> Result<Value, ApiError> {
    track_apply(write, live, config, force)
}

#[test]
fn appliers_conflict_share_and_force() {
    // Difference 1 of the differential suite: alpha, beta (409, then forced), gamma (same value:
    // shared), delta (changes nothing: its entry has no time).
    let created = apply(
        &main_write("ConfigMap", "v1", "alpha", T1),
        None,
        &configmap(json!({"owner": "alpha"})),
        false,
    )
    .expect("created");
    assert_eq!(
        entries(&created),
        json!([entry("alpha", "Apply", "v1", Some(T1), json!({"f:data": {"f:owner": {}}}))])
    );
    let beta = configmap(json!({"owner": "beta"}));
    let conflict =
        apply(&main_write("ConfigMap", "v1", "beta", T2), Some(&created), &beta, false).expect_err("409");
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");
    assert_eq!(conflict.message, "Apply failed with 1 conflict: conflict with \"alpha\": .data.owner");
    assert_eq!(
        conflict.details,
        Some(
            json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"alpha\"", "field": ".data.owner"}]})
        )
    );
    let forced =
        apply(&main_write("ConfigMap", "v1", "beta", T2), Some(&created), &beta, true).expect("forced");
    assert_eq!(forced["data"], json!({"owner": "beta"}));
    assert_eq!(
        entries(&forced),
        json!([entry("beta", "Apply", "v1", Some(T2), json!({"f:data": {"f:owner": {}}}))])
    );
    let gamma = configmap(json!({"owner": "beta", "extra": "gamma"}));
    let shared =
        apply(&main_write("ConfigMap", "v1", "gamma", T2), Some(&forced), &gamma, false).expect("shared");
    let both = json!({"f:data": {"f:extra": {}, "f:owner": {}}});
    assert_eq!(
        entries(&shared),
        json!([
            entry("beta", "Apply", "v1", Some(T2), json!({"f:data": {"f:owner": {}}})),
            entry("gamma", "Apply", "v1", Some(T2), both.clone())
        ])
    );
    let noop =
        apply(&main_write("ConfigMap", "v1", "delta", T3), Some(&shared), &gamma, false).expect("no-op");
    assert_eq!(noop["data"], shared["data"]);
    assert_eq!(
        entries(&noop),
        json!([
            entry("delta", "Apply", "v1", None, both.clone()),
            entry("beta", "Apply", "v1", Some(T2), json!({"f:data": {"f:owner": {}}})),
            entry("gamma", "Apply", "v1", Some(T2), both)
        ])
    );
    // Applying the same again changes nothing at all.
    let again =
        apply(&main_write("ConfigMap", "v1", "gamma", T3), Some(&noop), &gamma, false).expect("again");
    assert_eq!(again, noop);
}

/// The Deployment `kubectl create deployment web --image=nginx:1.27 --port=80` stores.
fn created_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns", "uid": "u",
        "labels": {"app": "web"}},
        "spec": {"progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "nginx:1.27",
                "imagePullPolicy": "IfNotPresent", "name": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}}},
        "status": {}})
}

fn kubectl_create_fields() -> Value {
    json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:progressDeadlineSeconds": {}, "f:replicas": {},
        "f:revisionHistoryLimit": {}, "f:selector": {}, "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {},
        "f:maxUnavailable": {}}, "f:type": {}}, "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}}, "f:dnsPolicy": {},
        "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}})
}

#[test]
fn a_create_owns_what_it_sets_and_what_defaulting_adds() {
    let created = created_deployment();
    let tracked = track_update(&main_write("Deployment", "apps/v1", "kubectl-create", T1), None, &created);
    assert_eq!(
        tracked,
        Some(json!([entry("kubectl-create", "Update", "apps/v1", Some(T1), kubectl_create_fields())]))
    );
}

#[test]
fn status_and_scale_writes() {
    let created = with_entries(
        created_deployment(),
        Some(json!([entry("kubectl-create", "Update", "apps/v1", Some(T1), kubectl_create_fields())])),
    );
    // The deployment controller's status write (with the revision annotation, as upstream's).
    let mut status = created.clone();
    status["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    status["status"] = json!({"observedGeneration": 1, "replicas": 1,
        "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "m",
            "lastTransitionTime": T2, "lastUpdateTime": T2}]});
    let write = Write {
        subresource: "status",
        reset: reset_fields("apps", "deployments", true, "status"),
        ..main_write("Deployment", "apps/v1", "kube-controller-manager", T2)
    };
    let after_status = with_entries(status.clone(), track_update(&write, Some(&created), &status));
    let mut controller = entry(
        "kube-controller-manager",
        "Update",
        "apps/v1",
        Some(T2),
        json!({
        "f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}},
        "f:status": {"f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {},
            "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
            "f:observedGeneration": {}, "f:replicas": {}}}),
    );
    controller["subresource"] = json!("status");
    let creator = entry("kubectl-create", "Update", "apps/v1", Some(T1), kubectl_create_fields());
    assert_eq!(entries(&after_status), json!([creator, controller]));

    // `kubectl scale --replicas=2`: tracked on the Scale, the replicas move to `kubectl`.
    let parent_entries = managed_fields_of(&after_status).cloned();
    let old_scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "uid": "u",
        "managedFields": scale_entries(parent_entries.as_ref(), ".spec.replicas")},
        "spec": {"replicas": 1}, "status": {"replicas": 1, "selector": "app=web"}});
    let mut new_scale = without_managed_fields(&old_scale);
    new_scale["spec"]["replicas"] = json!(2);
    let scale_write = Write {
        kind: "Scale",
        api_version: "autoscaling/v1",
        subresource: "scale",
        reset: Set::new(),
        ..main_write("Scale", "autoscaling/v1", "kubectl", T3)
    };
    let scale_tracked = track_update(&scale_write, Some(&old_scale), &new_scale);
    let parent =
        scale_to_parent(parent_entries.as_ref(), scale_tracked.as_ref(), ".spec.replicas", "apps/v1")
            .expect("entries");
    let mut creator_fields = kubectl_create_fields();
    creator_fields["f:spec"].as_object_mut().map(|spec| spec.remove("f:replicas"));
    assert_eq!(
        parent[0],
        json!({"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "subresource": "scale",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}})
    );
    assert_eq!(parent[1]["fieldsV1"], creator_fields);
    assert_eq!(parent[2]["manager"], "kube-controller-manager");
}

#[test]
fn client_side_writes_merge_per_manager() {
    // `kubectl apply` (client-side) twice, `kubectl label`, `kubectl annotate`, `kubectl patch`.
    let last = "kubectl.kubernetes.io/last-applied-configuration";
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa", "uid": "u",
        "labels": {"a": "1"}, "annotations": {last: "{}"}}, "data": {"k1": "v1", "k2": "v2"}});
    let csa = "kubectl-client-side-apply";
    let first =
        with_entries(first.clone(), track_update(&main_write("ConfigMap", "v1", csa, T1), None, &first));
    let csa_fields = |data: Value| {
        json!({"f:data": data, "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
            "f:labels": {".": {}, "f:a": {}}}})
    };
    assert_eq!(
        entries(&first),
        json!([entry(csa, "Update", "v1", Some(T1), csa_fields(json!({".": {}, "f:k1": {}, "f:k2": {}})))])
    );
    let mut second = without_managed_fields(&first);
    second["data"] = json!({"k1": "v1", "k3": "v3"});
    let second = with_entries(
        second.clone(),
        track_update(&main_write("ConfigMap", "v1", csa, T2), Some(&first), &second),
    );
    let csa_entry = |data: Value| entry(csa, "Update", "v1", Some(T2), csa_fields(data));
    assert_eq!(entries(&second), json!([csa_entry(json!({".": {}, "f:k1": {}, "f:k3": {}}))]));
    let mut labeled = second.clone();
    labeled["metadata"]["labels"]["b"] = json!("2");
    let labeled = with_entries(
        labeled.clone(),
        track_update(&main_write("ConfigMap", "v1", "kubectl-label", T2), Some(&second), &labeled),
    );
    let mut annotated = labeled.clone();
    annotated["metadata"]["annotations"]["note"] = json!("x");
    let annotated = with_entries(
        annotated.clone(),
        track_update(&main_write("ConfigMap", "v1", "kubectl-annotate", T2), Some(&labeled), &annotated),
    );
    let mut patched = annotated.clone();
    patched["data"]["k1"] = json!("patched");
    let patched = with_entries(
        patched.clone(),
        track_update(&main_write("ConfigMap", "v1", "kubectl-patch", T2), Some(&annotated), &patched),
    );
    assert_eq!(
        entries(&patched),
        json!([
            entry(
                "kubectl-annotate",
                "Update",
                "v1",
                Some(T2),
                json!({"f:metadata": {"f:annotations": {"f:note": {}}}})
            ),
            csa_entry(json!({".": {}, "f:k3": {}})),
            entry(
                "kubectl-label",
                "Update",
                "v1",
                Some(T2),
                json!({"f:metadata": {"f:labels": {"f:b": {}}}})
            ),
            entry("kubectl-patch", "Update", "v1", Some(T2), json!({"f:data": {"f:k1": {}}}))
        ])
    );
    // A PUT sending `managedFields: []` clears them, and later updates do not track again.
    let mut cleared = patched.clone();
    cleared["metadata"]["managedFields"] = json!([]);
    cleared["data"]["k9"] = json!("x");
    assert_eq!(
        track_update(&main_write("ConfigMap", "v1", "kubectl-edit", T3), Some(&patched), &cleared),
        None
    );
    let untracked = with_entries(cleared.clone(), None);
    let mut relabeled = untracked.clone();
    relabeled["metadata"]["labels"]["c"] = json!("3");
    assert_eq!(
        track_update(&main_write("ConfigMap", "v1", "kubectl-label", T3), Some(&untracked), &relabeled),
        None
    );
    // Sending none keeps the stored ones.
    let mut kept = without_managed_fields(&patched);
    kept["data"]["k1"] = json!("again");
    let tracked = track_update(&main_write("ConfigMap", "v1", "kubectl-patch", T3), Some(&patched), &kept)
        .expect("tracked");
    assert_eq!(tracked.as_array().map(Vec::len), Some(4));

    // Then an apply: what is there belongs to `before-first-apply`, which the applier
    // conflicts with (409 as the real apiserver's), and takes over when forced.
    let zeta = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa"}, "data": {"k3": "other"}});
    let conflict =
        apply(&main_write("ConfigMap", "v1", "zeta", T3), Some(&untracked), &zeta, false).expect_err("409");
    assert_eq!(
        conflict.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.k3"
    );
    let forced =
        apply(&main_write("ConfigMap", "v1", "zeta", T3), Some(&untracked), &zeta, true).expect("forced");
    assert_eq!(
        entries(&forced),
        json!([
            entry("zeta", "Apply", "v1", Some(T3), json!({"f:data": {"f:k3": {}}})),
            entry(
                "before-first-apply",
                "Update",
                "v1",
                Some(T3),
                json!({"f:data": {".": {}, "f:k1": {}, "f:k9": {}},
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}, "f:note": {}},
                    "f:labels": {".": {}, "f:a": {}, "f:b": {}}}})
            )
        ])
    );
}

#[test]
fn an_applier_omitting_its_field_removes_it() {
    // Difference 4: `spec.replicas: 0` applied, then omitted by the same manager.
    let config = |replicas: Option<i64>| {
        let mut spec = json!({"selector": {"matchLabels": {"app": "api"}}, "template": {"metadata": {"labels": {"app": "api"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]}}});
        if let Some(replicas) = replicas {
            spec["replicas"] = json!(replicas);
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}, "spec": spec})
    };
    let write = main_write("Deployment", "apps/v1", "alpha", T1);
    let created = apply(&write, None, &config(Some(0)), false).expect("created");
    let owned = |replicas: bool| {
        let mut spec = json!({"f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}});
        if replicas {
            spec["f:replicas"] = json!({});
        }
        json!([entry("alpha", "Apply", "apps/v1", Some(T1), json!({"f:spec": spec}))])
    };
    assert_eq!(entries(&created), owned(true));
    // kube-sim's pipeline defaults what the apply leaves out; here the object as stored.
    let mut stored = created.clone();
    stored["spec"]["strategy"] = json!({"type": "RollingUpdate"});
    let after = apply(&write, Some(&stored), &config(None), false).expect("applied");
    assert_eq!(after["spec"].get("replicas"), None);
    assert_eq!(after["spec"]["strategy"], json!({"type": "RollingUpdate"}), "never owned: kept");
    assert_eq!(entries(&after), owned(false));
}

#[test]
fn conflicts_with_several_managers_are_listed_by_manager() {
    // The web Deployment after `kubectl create` and `kubectl scale`, applied by `zeta`.
    let mut live = created_deployment();
    let mut creator_fields = kubectl_create_fields();
    creator_fields["f:spec"].as_object_mut().map(|spec| spec.remove("f:replicas"));
    let mut scale = entry("kubectl", "Update", "apps/v1", None, json!({"f:spec": {"f:replicas": {}}}));
    scale["subresource"] = json!("scale");
    set_managed_fields(
        &mut live,
        Some(json!([scale, entry("kubectl-create", "Update", "apps/v1", Some(T1), creator_fields)])),
    );
    live["spec"]["replicas"] = json!(2);
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "other"}},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}}}});
    let conflict = apply(&main_write("Deployment", "apps/v1", "zeta", T2), Some(&live), &config, false)
        .expect_err("409");
    assert_eq!(
        conflict.message,
        "Apply failed with 3 conflicts: conflicts with \"kubectl\" with subresource \"scale\" using apps/v1:\n- .spec.replicas\n\
         conflicts with \"kubectl-create\" using apps/v1:\n- .metadata.labels.app\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
    let causes = conflict.details.as_ref().and_then(|d| d["causes"].as_array()).map(Vec::len);
    assert_eq!(causes, Some(3));
}

#[test]
fn kubectl_takes_over_from_client_side_apply() {
    // `kubectl apply` then `kubectl apply --server-side` changing k1: the conflict with
    // `kubectl-client-side-apply` is allowed (the live value is the last-applied one), and the
    // annotation is rewritten.
    let last = "kubectl.kubernetes.io/last-applied-configuration";
    let annotation = "{\"apiVersion\":\"v1\",\"data\":{\"k1\":\"v1\",\"k2\":\"v2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"labels\":{\"a\":\"1\"},\"name\":\"mig\",\"namespace\":\"ns\"}}\n";
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mig", "namespace": "ns", "uid": "u",
        "labels": {"a": "1"}, "annotations": {last: annotation}}, "data": {"k1": "v1", "k2": "v2"}});
    let live = with_entries(
        object.clone(),
        track_update(&main_write("ConfigMap", "v1", "kubectl-client-side-apply", T1), None, &object),
    );
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mig", "namespace": "ns", "labels": {"a": "1"}},
        "data": {"k1": "v1new"}});
    let applied =
        apply(&main_write("ConfigMap", "v1", "kubectl", T2), Some(&live), &config, false).expect("allowed");
    assert_eq!(applied["data"], json!({"k1": "v1new", "k2": "v2"}));
    assert_eq!(
        applied["metadata"]["annotations"][last],
        "{\"apiVersion\":\"v1\",\"data\":{\"k1\":\"v1new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"mig\",\"namespace\":\"ns\"}}\n"
    );
    // Another manager gets the conflict.
    let other =
        apply(&main_write("ConfigMap", "v1", "other", T2), Some(&live), &config, false).expect_err("409");
    assert_eq!(other.code, 409);
}

#[test]
fn custom_resources_follow_their_schema() {
    // `PUT` by manager `upd` after `alpha` applied (the SsaWidget probe).
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "objs": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}}}},
        "status": {"type": "object"}}});
    let write = |manager| Write {
        kind: "SsaWidget",
        crd_schema: Some(&schema),
        api_version: "ssaprobe.example.com/v1",
        subresource: "",
        reset: reset_fields("ssaprobe.example.com", "ssawidgets", true, ""),
        manager,
        now: T1,
    };
    let config = json!({"apiVersion": "ssaprobe.example.com/v1", "kind": "SsaWidget", "metadata": {"name": "w1"},
        "spec": {"size": 3, "tags": ["a"], "ports": [{"name": "http", "port": 80}], "objs": {"one": {"x": "1"}}},
        "status": {"phase": "Ignored"}});
    let applied = apply(&write("alpha"), None, &config, false).expect("created");
    assert_eq!(
        entries(&applied)[0]["fieldsV1"],
        json!({"f:spec": {"f:objs": {"f:one": {".": {}, "f:x": {}}}, "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:size": {}, "f:tags": {}}})
    );
    let mut put = without_managed_fields(&applied);
    put["metadata"]["uid"] = json!("u");
    put["spec"]["size"] = json!(4);
    put["spec"]["tags"] = json!(["a", "c"]);
    put["spec"]["objs"]["two"] = json!({"x": "2"});
    put["spec"]["ports"] = json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]);
    let mut live = applied.clone();
    live["metadata"]["uid"] = json!("u");
    let tracked = track_update(&write("upd"), Some(&live), &put).expect("tracked");
    assert_eq!(
        tracked[0]["fieldsV1"],
        json!({"f:spec": {"f:objs": {"f:one": {".": {}, "f:x": {}}}, "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
    );
    assert_eq!(
        tracked[1],
        entry(
            "upd",
            "Update",
            "ssaprobe.example.com/v1",
            Some(T1),
            json!({"f:spec": {"f:objs": {"f:two": {".": {}, "f:x": {}}},
            "f:ports": {"k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:size": {}, "f:tags": {}}})
        )
    );
}

#[test]
fn managers_from_user_agents() {
    assert_eq!(manager_name(None, Some("kubectl/v1.35.4 (linux/amd64) kubernetes/abc")), "kubectl");
    assert_eq!(manager_name(Some(""), Some("kube-controller-manager/v1.35.4")), "kube-controller-manager");
    assert_eq!(manager_name(Some("alpha"), Some("kubectl/v1.35.4")), "alpha");
    assert_eq!(manager_name(None, None), "");
    assert_eq!(manager_name(None, Some("a\u{7}b/c")), "ab");
    assert_eq!(manager_name(None, Some(&"x".repeat(200))).len(), MAX_MANAGER_LENGTH);
}

#[test]
fn at_most_ten_updaters() {
    // `kubectl create cm cap2 --from-literal=k0=0`, then merge patches by managers m1..m11 a
    // second apart: the real apiserver merged kubectl-create, m1 and m2 into `ancient-changes`
    // (with m2's time).
    let time = |i: usize| format!("2026-12-04T03:03:{:02}Z", 45 + i);
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cap2", "uid": "u"}, "data": {"k0": "0"}});
    let mut live = with_entries(
        object.clone(),
        track_update(&main_write("ConfigMap", "v1", "kubectl-create", &time(0)), None, &object),
    );
    for i in 1..=11 {
        let mut new = live.clone();
        new["data"][format!("k{i}")] = json!(i.to_string());
        let name = format!("m{i}");
        let entries = track_update(&main_write("ConfigMap", "v1", &name, &time(i)), Some(&live), &new);
        live = with_entries(new, entries);
    }
    let list = entries(&live);
    let list = list.as_array().expect("entries");
    assert_eq!(list.len(), 10);
    assert_eq!(
        list[0],
        entry(
            "ancient-changes",
            "Update",
            "v1",
            Some(&time(2)),
            json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}})
        )
    );
    assert_eq!(list[9], entry("m11", "Update", "v1", Some(&time(11)), json!({"f:data": {"f:k11": {}}})));
}

#[test]
fn a_create_setting_nothing_is_not_tracked() {
    // `kubectl create cm cap` (no data): no entry, and so no tracking by later updates.
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cap", "uid": "u"}});
    assert_eq!(track_update(&main_write("ConfigMap", "v1", "kubectl-create", T1), None, &object), None);
    let mut patched = object.clone();
    patched["data"] = json!({"k1": "1"});
    assert_eq!(track_update(&main_write("ConfigMap", "v1", "m1", T2), Some(&object), &patched), None);
}
