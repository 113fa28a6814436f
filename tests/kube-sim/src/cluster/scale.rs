//! The `/scale` subresource: an `autoscaling/v1 Scale` view of a scalable object.

use serde_json::{Value, json};

use crate::meta::{get_path, label_selector_string, set_path};
use crate::resources::ScalePaths;

/// Builds the Scale of `object`.
pub(crate) fn to_scale(paths: &ScalePaths, object: &Value) -> Value {
    let meta = &object["metadata"];
    let mut scale_meta = serde_json::Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.into(), v.clone());
        }
    }
    let spec_replicas = get_path(object, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0);
    let status_replicas = get_path(object, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if let Some(path) = &paths.label_selector {
        match get_path(object, path) {
            Some(Value::String(s)) => status["selector"] = json!(s),
            Some(sel @ Value::Object(_)) => status["selector"] = json!(label_selector_string(sel)),
            _ => {}
        }
    }
    // `ScaleSpec.replicas` is `omitempty`: a Scale of zero replicas has `spec: {}`.
    let spec = if spec_replicas == 0 { json!({}) } else { json!({"replicas": spec_replicas}) };
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta, "spec": spec, "status": status})
}

/// `object` with the desired replicas of `scale` written into it.
pub(crate) fn apply_scale(paths: &ScalePaths, object: &Value, scale: &Value) -> Value {
    let mut out = object.clone();
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    set_path(&mut out, &paths.spec_replicas, json!(replicas));
    out
}
