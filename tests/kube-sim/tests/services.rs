//! Services as a real v1.35 apiserver answers them: v1 defaults, a cluster IP from
//! 10.96.0.0/16 (unique, also under concurrent creates), node ports, `status.loadBalancer: {}`,
//! validation of the defaulted `targetPort`, allocated values kept across updates.

mod common;

use std::collections::HashSet;

use common::Sim;
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";

fn in_service_cidr(ip: &Value) -> bool {
    ip.as_str().and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok()).is_some_and(|ip| {
        let [a, b, _, _] = ip.octets();
        (a, b) == (10, 96)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_service_is_defaulted_and_gets_a_cluster_ip() {
    let sim = Sim::start().await;
    let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 443, "targetPort": 8443}]}});
    let created = sim.raw("POST", SERVICES, Some(body)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut spec = created.body["spec"].clone();
    let ip = spec["clusterIP"].clone();
    assert!(in_service_cidr(&ip), "{ip}");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    // The rest is what the real apiserver answered for the same body.
    for key in ["clusterIP", "clusterIPs"] {
        spec.as_object_mut().map(|m| m.remove(key));
    }
    assert_eq!(
        spec,
        json!({"ports": [{"protocol": "TCP", "port": 443, "targetPort": 8443}], "selector": {"app": "web"},
            "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster"})
    );
    assert_eq!(created.body["status"], json!({"loadBalancer": {}}));

    // Re-applying the manifest without the allocated fields keeps them.
    let rv = created.body["metadata"]["resourceVersion"].clone();
    let put = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "resourceVersion": rv},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 443, "targetPort": 8443}]}});
    let updated = sim.raw("PUT", &format!("{SERVICES}/web"), Some(put)).await;
    assert_eq!((updated.code, &updated.body["spec"]["clusterIP"]), (200, &ip));
    let moved = sim
        .raw(
            "PUT",
            &format!("{SERVICES}/web"),
            Some(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web"}, "spec": {"clusterIP": "10.96.7.7", "ports": [{"port": 443}]}})),
        )
        .await;
    assert_eq!(moved.code, 422);
    assert_eq!(
        moved.body["message"],
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.7.7\"]: may not change once set"
    );

    let run = sim.kubectl(&["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"]).await.ok();
    assert_eq!(run.stdout, ip.as_str().unwrap_or_default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_defaulted_target_port_is_validated_too() {
    let sim = Sim::start().await;
    let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"},
        "spec": {"ports": [{"port": 70000}]}});
    let refused = sim.raw("POST", SERVICES, Some(body)).await;
    assert_eq!(refused.code, 422);
    let invalid = "Invalid value: 70000: must be between 1 and 65535, inclusive";
    assert_eq!(
        refused.body["message"],
        format!(
            "Service \"bad\" is invalid: [spec.ports[0].port: {invalid}, spec.ports[0].targetPort: {invalid}]"
        )
    );
    assert_eq!(
        refused.body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": invalid, "field": "spec.ports[0].port"},
            {"reason": "FieldValueInvalid", "message": invalid, "field": "spec.ports[0].targetPort"}])
    );
    let out_of_range = sim
        .raw(
            "POST",
            SERVICES,
            Some(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x1"},
            "spec": {"clusterIP": "10.0.0.5", "ports": [{"port": 80}]}})),
        )
        .await;
    assert_eq!(
        (out_of_range.code, out_of_range.body["message"].as_str().unwrap_or_default()),
        (
            422,
            "Service \"x1\" is invalid: spec.clusterIPs: Invalid value: [\"10.0.0.5\"]: failed to allocate IP 10.0.0.5: the provided network does not match the current range"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_get_distinct_addresses_and_node_ports() {
    let sim = Sim::start().await;
    let creates = (0..40).map(|i| {
        let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("s{i}")},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        sim.raw("POST", SERVICES, Some(body))
    });
    let answers = futures::future::join_all(creates).await;
    let mut ips = HashSet::new();
    let mut ports = HashSet::new();
    for answer in &answers {
        assert_eq!(answer.code, 201, "{}", answer.body);
        assert!(ips.insert(answer.body["spec"]["clusterIP"].to_string()));
        let port = answer.body["spec"]["ports"][0]["nodePort"].as_i64().unwrap_or_default();
        assert!((30000..=32767).contains(&port), "{port}");
        assert!(ports.insert(port));
        assert_eq!(answer.body["spec"]["externalTrafficPolicy"], "Cluster");
    }
    // A taken address is refused, a dry run allocates without keeping anything.
    let taken = answers[0].body["spec"]["clusterIP"].clone();
    let clash = sim
        .raw(
            "POST",
            SERVICES,
            Some(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash"},
            "spec": {"clusterIP": taken, "ports": [{"port": 80}]}})),
        )
        .await;
    assert_eq!(clash.code, 422);
    assert!(clash.body["message"].as_str().is_some_and(|m| m.ends_with("provided IP is already allocated")));
    let dry = sim
        .raw(
            "POST",
            &format!("{SERVICES}?dryRun=All"),
            Some(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "dry"}, "spec": {"ports": [{"port": 80}]}})),
        )
        .await;
    assert_eq!(dry.code, 201);
    assert!(in_service_cidr(&dry.body["spec"]["clusterIP"]));
    assert!(!sim.exists("v1", "services", Some("default"), "dry"));
}
