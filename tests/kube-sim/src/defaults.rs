//! Decode-time defaulting for the built-in types the product reads (upstream `SetDefaults_*`;
//! larger kinds have a submodule each), and the few fields the strategies set on create and
//! update (`PrepareForCreate`, `PrepareForUpdate`), which, unlike defaults, no manager owns.

use base64::Engine as _;
use serde_json::{Value, json};

pub mod crd;
pub mod service;

fn default(obj: &mut Value, key: &str, value: Value) {
    if let Value::Object(m) = obj
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.to_string(), value);
    }
}

fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                let image = c["image"].as_str().unwrap_or_default().to_string();
                let tag = image.rsplit('/').next().unwrap_or_default();
                let latest = !tag.contains(':') || tag.ends_with(":latest");
                default(c, "imagePullPolicy", json!(if latest { "Always" } else { "IfNotPresent" }));
                default(c, "terminationMessagePath", json!("/dev/termination-log"));
                default(c, "terminationMessagePolicy", json!("File"));
                // A non-pointer struct upstream: always written, `{}` when empty.
                default(c, "resources", json!({}));
                for port in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                    default(port, "protocol", json!("TCP"));
                }
            }
        }
    }
}

/// What the strategy sets on a new object of `group`/`plural`: a namespace's `kubernetes`
/// finalizer.
pub fn prepare_for_create(group: &str, plural: &str, object: &mut Value) {
    if (group, plural) == ("", "namespaces") && object.is_object() {
        default(object, "spec", json!({}));
        default(&mut object["spec"], "finalizers", json!(["kubernetes"]));
    }
}

/// What the strategy keeps from the stored object on an update of `group`/`plural`: a
/// namespace's finalizers (changed only through `/finalize` upstream).
pub fn prepare_for_update(group: &str, plural: &str, object: &mut Value, current: &Value) {
    if (group, plural) != ("", "namespaces") || !object.is_object() {
        return;
    }
    match current.get("spec").and_then(|spec| spec.get("finalizers")) {
        Some(finalizers) => {
            default(object, "spec", json!({}));
            if let Value::Object(spec) = &mut object["spec"] {
                spec.insert("finalizers".into(), finalizers.clone());
            }
        }
        None => {
            if let Some(Value::Object(spec)) = object.get_mut("spec") {
                spec.remove("finalizers");
            }
        }
    }
}

/// What the default admission plugins add to a new Pod, as a real apiserver runs them:
/// ServiceAccount (the `default` account and its projected token volume, mounted in every
/// container), DefaultTolerationSeconds, Priority.
pub fn admit_new_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").filter(|s| s.is_object()) else { return };
    default(spec, "serviceAccountName", json!("default"));
    let account = spec["serviceAccountName"].clone();
    spec["serviceAccount"] = account;
    default(spec, "priority", json!(0));
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    default(spec, "tolerations", json!([]));
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        // Not a list: validation refuses it later.
        let Some(tolerations) = spec["tolerations"].as_array_mut() else { break };
        if !tolerations
            .iter()
            .any(|t| t["key"] == key && (t["effect"] == "NoExecute" || t["effect"].is_null()))
        {
            tolerations.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            );
        }
    }
    if spec["automountServiceAccountToken"] == json!(false) {
        return;
    }
    let volume = format!("kube-api-access-{}", crate::meta::random_suffix());
    default(spec, "volumes", json!([]));
    if let Some(volumes) = spec["volumes"].as_array_mut() {
        volumes.push(json!({"name": volume, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}));
    }
    for list in ["initContainers", "containers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            default(c, "volumeMounts", json!([]));
            if let Some(mounts) = c["volumeMounts"].as_array_mut() {
                mounts.push(json!({"name": volume, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}));
            }
        }
    }
}

/// A Pod's QoS class from its containers' requests and limits (`GetPodQOS`, simplified to
/// cpu and memory).
pub fn pod_qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| pod["spec"][l].as_array().into_iter().flatten())
        .collect();
    let set = |c: &Value, kind: &str| c["resources"][kind].as_object().is_some_and(|m| !m.is_empty());
    if !containers.iter().any(|c| set(c, "requests") || set(c, "limits")) {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"].iter().all(|r| {
            let limit = &c["resources"]["limits"][r];
            let request = &c["resources"]["requests"][r];
            !limit.is_null() && (request.is_null() || request == limit)
        })
    });
    if guaranteed { "Guaranteed" } else { "Burstable" }
}

/// Applies defaults to an incoming object of `group`/`plural` (create and update).
pub fn apply(group: &str, plural: &str, object: &mut Value) {
    match (group, plural) {
        ("", "pods") => {
            if let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) {
                pod_spec(spec);
                // `SetDefaults_Pod` (not pod templates).
                default(spec, "enableServiceLinks", json!(true));
            }
        }
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else { return };
            if plural != "daemonsets" {
                default(spec, "replicas", json!(1));
            }
            // ReplicaSets have no such field.
            if plural != "replicasets" {
                default(spec, "revisionHistoryLimit", json!(10));
            }
            if plural == "deployments" {
                default(spec, "progressDeadlineSeconds", json!(600));
                // `SetDefaults_Deployment`: also fills a partial strategy (`kubectl create
                // deployment` sends `strategy: {}`).
                default(spec, "strategy", json!({}));
                let strategy = &mut spec["strategy"];
                default(strategy, "type", json!("RollingUpdate"));
                if strategy["type"] == "RollingUpdate" {
                    default(strategy, "rollingUpdate", json!({}));
                    default(&mut strategy["rollingUpdate"], "maxUnavailable", json!("25%"));
                    default(&mut strategy["rollingUpdate"], "maxSurge", json!("25%"));
                }
            }
            if let Some(tspec) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
                pod_spec(tspec);
            }
        }
        ("autoscaling", "horizontalpodautoscalers") => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else { return };
            default(spec, "minReplicas", json!(1));
            // `DefaultCPUUtilization`: no metric means 80 % CPU.
            if spec["metrics"].as_array().is_none_or(Vec::is_empty) {
                spec["metrics"] = json!([{"type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]);
            }
        }
        ("", "namespaces") => {
            // A label naming it (set whatever the client sent).
            let name = object["metadata"]["name"].clone();
            if name.is_string() {
                default(&mut object["metadata"], "labels", json!({}));
                object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            }
        }
        ("", "secrets") => {
            // `stringData` is write-only: merged into `data` (base64), winning over it.
            if let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData"))
            {
                default(object, "data", json!({}));
                for (key, value) in strings {
                    let text = value.as_str().unwrap_or_default().as_bytes();
                    object["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
                }
            }
            default(object, "type", json!("Opaque"));
        }
        ("", "services") => service::service(object),
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd::crd(object),
        // Core Events (the storage form of both Event APIs): non-pointer fields always written.
        ("", "events") => {
            default(object, "source", json!({}));
            default(object, "reportingComponent", json!(""));
            default(object, "reportingInstance", json!(""));
        }
        _ => {}
    }
}
