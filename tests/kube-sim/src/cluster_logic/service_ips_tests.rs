//! Cases and messages measured on a real v1.35 control plane (service CIDR 10.96.0.0/16).

use serde_json::{Value, json};

use super::*;
use crate::defaults::service::service as defaults;

fn service(spec: Value) -> Value {
    let mut s = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec,
        "status": {"loadBalancer": {}}});
    defaults(&mut s);
    s
}

/// `prepare` with a fixed random source (offset 0: the first free address / port).
fn run(s: &mut Value, old: Option<&Value>, used: &Used) -> Result<Allocated, Vec<String>> {
    prepare(s, old, used, &mut || 0).map_err(|e| e.into_iter().map(|e| e.message).collect())
}

#[test]
fn a_cluster_ip_service_gets_an_address_of_the_upper_band_and_single_stack() {
    let mut s = service(json!({"selector": {"app": "web"}, "ports": [{"port": 443, "targetPort": 8443}]}));
    let allocated = run(&mut s, None, &Used::default());
    assert_eq!(
        allocated,
        Ok(Allocated { ips: vec![parse_ipv4("10.96.1.0").unwrap_or(0)], node_ports: vec![] })
    );
    let spec = &s["spec"];
    assert_eq!((&spec["clusterIP"], &spec["clusterIPs"]), (&json!("10.96.1.0"), &json!(["10.96.1.0"])));
    assert_eq!((&spec["ipFamilies"], &spec["ipFamilyPolicy"]), (&json!(["IPv4"]), &json!("SingleStack")));
    // Taken addresses are skipped; a PreferDualStack request stays single on this cluster.
    let mut used = Used::default();
    used.ips.insert(parse_ipv4("10.96.1.0").unwrap_or(0));
    let mut next = service(json!({"ipFamilyPolicy": "PreferDualStack", "ports": [{"port": 80}]}));
    assert!(run(&mut next, None, &used).is_ok());
    assert_eq!(next["spec"]["clusterIP"], "10.96.1.1");
    assert_eq!(
        (&next["spec"]["ipFamilies"], &next["spec"]["ipFamilyPolicy"]),
        (&json!(["IPv4"]), &json!("PreferDualStack"))
    );
    // A requested free address is taken as is.
    let mut fixed = service(json!({"clusterIP": "10.96.5.5", "ports": [{"port": 80}]}));
    assert!(run(&mut fixed, None, &used).is_ok());
    assert_eq!(fixed["spec"]["clusterIPs"], json!(["10.96.5.5"]));
}

#[test]
fn node_ports_headless_and_external_names() {
    let mut np = service(json!({"type": "NodePort", "ports": [{"port": 80}]}));
    assert_eq!(run(&mut np, None, &Used::default()).map(|a| a.node_ports), Ok(vec![30000]));
    assert_eq!(
        np["spec"]["ports"][0],
        json!({"protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30000})
    );
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    // One port number for two protocols is allowed; twice for one protocol is not.
    let mut both =
        service(json!({"type": "NodePort", "ports": [{"name": "a", "port": 80, "nodePort": 31001},
        {"name": "b", "port": 80, "protocol": "UDP", "nodePort": 31001}]}));
    assert!(run(&mut both, None, &Used::default()).is_ok());
    let mut twice =
        service(json!({"type": "NodePort", "ports": [{"name": "a", "port": 80, "nodePort": 31000},
        {"name": "b", "port": 81, "nodePort": 31000}]}));
    assert_eq!(
        run(&mut twice, None, &Used::default()),
        Err(vec![
            "spec.ports[1].nodePort: Invalid value: 31000: provided port is already allocated".to_string()
        ])
    );
    let mut local =
        service(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}));
    assert!(run(&mut local, None, &Used::default()).is_ok());
    assert_eq!(
        (&local["spec"]["ports"][0]["nodePort"], &local["spec"]["healthCheckNodePort"]),
        (&json!(30000), &json!(30001))
    );
    let mut headless = service(json!({"clusterIP": "None", "ports": [{"port": 80}]}));
    assert_eq!(run(&mut headless, None, &Used::default()), Ok(Allocated::default()));
    assert_eq!(
        (
            &headless["spec"]["clusterIPs"],
            &headless["spec"]["ipFamilies"],
            &headless["spec"]["ipFamilyPolicy"]
        ),
        (&json!(["None"]), &json!(["IPv4", "IPv6"]), &json!("RequireDualStack"))
    );
    let mut external = service(json!({"type": "ExternalName", "externalName": "example.com"}));
    assert_eq!(run(&mut external, None, &Used::default()), Ok(Allocated::default()));
    assert_eq!(
        external["spec"],
        json!({"type": "ExternalName", "sessionAffinity": "None", "externalName": "example.com"})
    );
}

#[test]
fn refused_requests_carry_the_registry_messages() {
    let mut used = Used::default();
    used.ips.insert(parse_ipv4("10.96.229.176").unwrap_or(0));
    used.node_ports.insert(30673);
    let cases: &[(Value, &str)] = &[
        (
            json!({"clusterIP": "10.0.0.5"}),
            "spec.clusterIPs: Invalid value: [\"10.0.0.5\"]: failed to allocate IP 10.0.0.5: the provided network does not match the current range",
        ),
        (
            json!({"clusterIP": "10.96.0.0"}),
            "spec.clusterIPs: Invalid value: [\"10.96.0.0\"]: failed to allocate IP 10.96.0.0: the provided network does not match the current range",
        ),
        (
            json!({"clusterIP": "10.96.255.255"}),
            "spec.clusterIPs: Invalid value: [\"10.96.255.255\"]: failed to allocate IP 10.96.255.255: the provided network does not match the current range",
        ),
        (
            json!({"clusterIP": "10.96.229.176"}),
            "spec.clusterIPs: Invalid value: [\"10.96.229.176\"]: failed to allocate IP 10.96.229.176: provided IP is already allocated",
        ),
        (
            json!({"clusterIP": "banana"}),
            "spec.clusterIPs[0]: Invalid value: \"banana\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ),
        (
            json!({"ipFamilyPolicy": "RequireDualStack"}),
            "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
        ),
        (
            json!({"ipFamilies": ["IPv6"]}),
            "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster",
        ),
        (
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
            "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767",
        ),
        (
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30673}]}),
            "spec.ports[0].nodePort: Invalid value: 30673: provided port is already allocated",
        ),
    ];
    for (spec, message) in cases {
        let mut spec = spec.clone();
        if spec.get("ports").is_none() {
            spec["ports"] = json!([{"port": 80}]);
        }
        let mut s = service(spec.clone());
        assert_eq!(run(&mut s, None, &used), Err(vec![message.to_string()]), "{spec}");
    }
}

#[test]
fn updates_keep_what_was_allocated_and_types_drop_what_they_no_longer_need() {
    let mut old = service(json!({"type": "NodePort", "ports": [{"port": 80}]}));
    assert!(run(&mut old, None, &Used::default()).is_ok());
    // A PUT of the original manifest (no clusterIP, no nodePort) keeps both.
    let mut put = service(json!({"type": "NodePort", "ports": [{"port": 80}]}));
    assert_eq!(run(&mut put, Some(&old), &Used::default()), Ok(Allocated::default()));
    assert_eq!(put["spec"], old["spec"]);
    // The cluster IP is immutable.
    let mut moved = old.clone();
    moved["spec"]["clusterIP"] = json!("10.96.7.7");
    assert_eq!(
        run(&mut moved, Some(&old), &Used::default()),
        Err(vec!["spec.clusterIPs[0]: Invalid value: [\"10.96.7.7\"]: may not change once set".to_string()])
    );
    // NodePort → ClusterIP: the node port and externalTrafficPolicy go, the address stays.
    let mut narrowed = old.clone();
    narrowed["spec"]["type"] = json!("ClusterIP");
    assert!(run(&mut narrowed, Some(&old), &Used::default()).is_ok());
    assert_eq!(
        narrowed["spec"],
        json!({"ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}], "clusterIP": "10.96.1.0",
            "clusterIPs": ["10.96.1.0"], "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"})
    );
    // → ExternalName: the address and families go too.
    let mut external = old.clone();
    external["spec"]["type"] = json!("ExternalName");
    external["spec"]["externalName"] = json!("example.com");
    assert!(run(&mut external, Some(&old), &Used::default()).is_ok());
    assert!(external["spec"].get("clusterIP").is_none() && external["spec"].get("ipFamilies").is_none());
}

#[test]
fn malformed_specs_do_not_panic_and_are_left_to_validation() {
    for spec in [
        json!({"type": "NodePort", "ports": [5, "x", null, {"port": 80}]}),
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": "nope"}),
        json!({"clusterIP": 7, "clusterIPs": [1, 2, 3], "ipFamilies": "IPv4"}),
    ] {
        let mut s = json!({"spec": spec});
        let old = s.clone();
        let _ = prepare(&mut s, None, &Used::default(), &mut || 7);
        let _ = prepare(&mut s.clone(), Some(&old), &Used::default(), &mut || 7);
    }
    let _ = prepare(&mut json!({"spec": "x"}), None, &Used::default(), &mut || 0);
}
