//! `SetDefaults_Service` (`pkg/apis/core/v1/defaults.go`): what a Service gets before anything
//! looks at it. Allocation (cluster IPs, node ports, IP families) is the registry's, in
//! [`crate::cluster_logic::service_ips`].

use serde_json::{Value, json};

/// True when `key` is absent, null or `""` (Go's zero value for these string fields).
fn unset(obj: &Value, key: &str) -> bool {
    obj.get(key).is_none_or(|v| v.is_null() || v.as_str() == Some(""))
}

/// `ExternallyAccessible`: LoadBalancer, NodePort, or ClusterIP with external IPs.
pub fn externally_accessible(spec: &Value) -> bool {
    match spec["type"].as_str().unwrap_or_default() {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => spec["externalIPs"].as_array().is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}

/// Defaults a Service in place (create and update: every decode runs them).
pub fn service(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else { return };
    if unset(spec, "sessionAffinity") {
        spec["sessionAffinity"] = json!("None");
    }
    match spec["sessionAffinity"].as_str() {
        Some("None") => {
            if let Some(m) = spec.as_object_mut() {
                m.remove("sessionAffinityConfig");
            }
        }
        Some("ClientIP") if spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null() => {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
        _ => {}
    }
    if unset(spec, "type") {
        spec["type"] = json!("ClusterIP");
    }
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if !port.is_object() {
            continue;
        }
        if unset(port, "protocol") {
            port["protocol"] = json!("TCP");
        }
        let target = &port["targetPort"];
        if target.is_null() || target.as_i64() == Some(0) || target.as_str() == Some("") {
            port["targetPort"] = port.get("port").cloned().unwrap_or(json!(0));
        }
    }
    if externally_accessible(spec) && unset(spec, "externalTrafficPolicy") {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    let service_type = spec["type"].as_str().unwrap_or_default().to_string();
    if spec["internalTrafficPolicy"].is_null()
        && matches!(service_type.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP")
    {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if service_type == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"].is_null() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_get_the_v1_defaults() {
        // Sent and answered by a real v1.35 apiserver (allocated fields aside).
        let mut web = json!({"spec": {"selector": {"app": "web"},
            "ports": [{"name": "a", "port": 443, "targetPort": 8443}, {"name": "b", "port": 80, "protocol": "UDP"}]}});
        service(&mut web);
        assert_eq!(
            web["spec"],
            json!({"selector": {"app": "web"}, "type": "ClusterIP", "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
                "ports": [{"name": "a", "protocol": "TCP", "port": 443, "targetPort": 8443},
                    {"name": "b", "protocol": "UDP", "port": 80, "targetPort": 80}]})
        );
        let mut lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": "http"}]}});
        service(&mut lb);
        assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(lb["spec"]["ports"][0]["targetPort"], "http");
        let mut external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        service(&mut external);
        assert_eq!(
            external["spec"],
            json!({"type": "ExternalName", "sessionAffinity": "None", "externalName": "example.com"})
        );
        let mut sticky =
            json!({"spec": {"sessionAffinity": "ClientIP", "ports": [{"port": 70000, "targetPort": 0}]}});
        service(&mut sticky);
        assert_eq!(sticky["spec"]["sessionAffinityConfig"], json!({"clientIP": {"timeoutSeconds": 10800}}));
        assert_eq!(sticky["spec"]["ports"][0]["targetPort"], 70000, "validated afterwards, as upstream");
    }
}
