//! Decode-time defaulting for the built-in types the product reads (upstream `SetDefaults_*`).

use serde_json::{Value, json};

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
            }
        }
    }
}

/// Applies defaults to an incoming object of `group`/`plural` (create and update).
pub fn apply(group: &str, plural: &str, object: &mut Value) {
    match (group, plural) {
        ("", "pods") => {
            if let Some(spec) = object.get_mut("spec") {
                pod_spec(spec);
            }
        }
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else { return };
            if plural != "daemonsets" {
                default(spec, "replicas", json!(1));
            }
            default(spec, "revisionHistoryLimit", json!(10));
            if plural == "deployments" {
                default(spec, "progressDeadlineSeconds", json!(600));
                default(
                    spec,
                    "strategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
                );
            }
            if let Some(tspec) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
                pod_spec(tspec);
            }
        }
        ("", "namespaces") => {
            // The namespace strategy: the `kubernetes` finalizer, and a label naming it (set
            // whatever the client sent).
            default(object, "spec", json!({}));
            default(&mut object["spec"], "finalizers", json!(["kubernetes"]));
            let name = object["metadata"]["name"].clone();
            if name.is_string() {
                default(&mut object["metadata"], "labels", json!({}));
                object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            }
        }
        _ => {}
    }
}
