//! What the Service registry does between decoding and validation (`pkg/registry/core/service/
//! storage`: `beginCreate`/`beginUpdate` and the strategy's `dropTypeDependentFields`) on a
//! single-stack IPv4 cluster with the real control plane's ranges: the service CIDR
//! `10.96.0.0/16` and node ports `30000-32767`. IP families and policy are inferred, cluster IPs,
//! node ports and health-check node ports allocated (at random, unique) or checked, and values
//! allocated before are kept when a client leaves them out. Messages are the apiserver's.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::error::FieldError;

/// The service CIDR of the real control plane kube-sim is measured against.
pub const SERVICE_CIDR: &str = "10.96.0.0/16";
const CIDR_BASE: u32 = (10 << 24) | (96 << 16);
const CIDR_SIZE: u32 = 1 << 16;
/// Dynamic allocations skip the lower band the allocator keeps for static IPs (`/16`: 256).
const LOWER_BAND: u32 = 256;
/// The first address: the `kubernetes` Service's, never handed out.
pub const KUBERNETES_SERVICE_IP: u32 = CIDR_BASE + 1;
/// The node-port range.
pub const NODE_PORT_MIN: i64 = 30000;
/// The node-port range's end (inclusive).
pub const NODE_PORT_MAX: i64 = 32767;

/// Values already taken by other Services (and in-flight creates).
#[derive(Clone, Debug, Default)]
pub struct Used {
    /// Cluster IPs (as integers).
    pub ips: HashSet<u32>,
    /// Node ports and health-check node ports.
    pub node_ports: HashSet<i64>,
}

impl Used {
    /// Adds what `service` holds.
    pub fn add_service(&mut self, service: &Value) {
        for ip in service["spec"]["clusterIPs"].as_array().into_iter().flatten() {
            if let Some(ip) = ip.as_str().and_then(parse_ipv4) {
                self.ips.insert(ip);
            }
        }
        if let Some(ip) = service["spec"]["clusterIP"].as_str().and_then(parse_ipv4) {
            self.ips.insert(ip);
        }
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(p) = port["nodePort"].as_i64().filter(|p| *p != 0) {
                self.node_ports.insert(p);
            }
        }
        if let Some(p) = service["spec"]["healthCheckNodePort"].as_i64().filter(|p| *p != 0) {
            self.node_ports.insert(p);
        }
    }
}

/// What [`prepare`] took that was not taken before (to reserve until the write lands).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocated {
    /// New cluster IPs.
    pub ips: Vec<u32>,
    /// New node ports.
    pub node_ports: Vec<i64>,
}

/// A dotted-quad IPv4 address as an integer.
pub fn parse_ipv4(text: &str) -> Option<u32> {
    text.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

fn format_ipv4(ip: u32) -> String {
    std::net::Ipv4Addr::from(ip).to_string()
}

fn text<'a>(spec: &'a Value, key: &str) -> &'a str {
    spec[key].as_str().unwrap_or_default()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect()
}

fn needs_cluster_ip(spec: &Value) -> bool {
    text(spec, "type") != "ExternalName"
}

fn needs_node_port(spec: &Value) -> bool {
    match text(spec, "type") {
        "NodePort" => true,
        "LoadBalancer" => spec["allocateLoadBalancerNodePorts"].as_bool() != Some(false),
        _ => false,
    }
}

fn needs_health_check_node_port(spec: &Value) -> bool {
    text(spec, "type") == "LoadBalancer" && text(spec, "externalTrafficPolicy") == "Local"
}

fn headless(spec: &Value) -> bool {
    text(spec, "clusterIP") == "None"
}

fn has_selector(spec: &Value) -> bool {
    spec["selector"].as_object().is_some_and(|s| !s.is_empty())
}

fn remove(spec: &mut Value, key: &str) {
    if let Some(m) = spec.as_object_mut() {
        m.remove(key);
    }
}

/// `patchAllocatedValues`: a client that leaves out what was allocated for it keeps it.
fn patch_allocated_values(spec: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(spec) {
        if text(spec, "clusterIP").is_empty() && !old["clusterIP"].is_null() {
            spec["clusterIP"] = old["clusterIP"].clone();
        }
        if strings(&spec["clusterIPs"]).is_empty() && !strings(&old["clusterIPs"]).is_empty() {
            spec["clusterIPs"] = old["clusterIPs"].clone();
        }
    }
    if needs_node_port(old) && needs_node_port(spec) {
        let ports_of = |s: &Value| -> HashSet<i64> {
            s["ports"].as_array().into_iter().flatten().filter_map(|p| p["nodePort"].as_i64()).collect()
        };
        let kept: HashSet<i64> = ports_of(old).intersection(&ports_of(spec)).copied().collect();
        let by_name: Vec<(String, i64)> = old["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| (text(p, "name").to_string(), p["nodePort"].as_i64().unwrap_or(0)))
            .collect();
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        for port in ports.into_iter().flatten().filter(|p| p.is_object()) {
            if port["nodePort"].as_i64().unwrap_or(0) == 0 {
                let name = text(port, "name").to_string();
                let old_port = by_name.iter().rev().find(|(n, _)| *n == name).map_or(0, |(_, p)| *p);
                if old_port != 0 && !kept.contains(&old_port) {
                    port["nodePort"] = json!(old_port);
                }
            }
        }
    }
    if needs_health_check_node_port(old)
        && needs_health_check_node_port(spec)
        && spec["healthCheckNodePort"].as_i64().unwrap_or(0) == 0
    {
        spec["healthCheckNodePort"] = old["healthCheckNodePort"].clone();
    }
}

/// `normalizeClusterIPs`: `clusterIPs` follows a `clusterIP` set alone.
fn normalize_cluster_ips(spec: &mut Value, old: Option<&Value>) {
    let ip = text(spec, "clusterIP").to_string();
    let ips = strings(&spec["clusterIPs"]);
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            spec["clusterIPs"] = json!([ip]);
        }
        return;
    };
    let old_ip = text(old, "clusterIP");
    let old_ips = strings(&old["clusterIPs"]);
    let mut ips = ips;
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        spec["clusterIPs"] = old["clusterIPs"].clone();
        ips = old_ips.clone();
    }
    if old_ip != ip {
        if !old_ip.is_empty() && ip.is_empty() {
            if ips == old_ips {
                remove(spec, "clusterIPs");
            }
        } else if ips == old_ips {
            spec["clusterIPs"] = json!([ip]);
        }
    }
}

/// `initIPFamilyFields` on a single-stack IPv4 cluster.
fn init_ip_families(spec: &mut Value, old: Option<&Value>) -> Result<(), Vec<FieldError>> {
    if !needs_cluster_ip(spec) {
        return Ok(());
    }
    if spec["ipFamilyPolicy"].is_null() {
        let policy = match old.map(|o| &o["ipFamilyPolicy"]).filter(|p| !p.is_null()) {
            Some(p) => p.clone(),
            None if headless(spec) && !has_selector(spec) => json!("RequireDualStack"),
            None => json!("SingleStack"),
        };
        spec["ipFamilyPolicy"] = policy;
    }
    let policy = text(spec, "ipFamilyPolicy").to_string();
    let ips = strings(&spec["clusterIPs"]);
    let rendered_ips = json!(ips).to_string();
    let mut errs = Vec::new();
    if !text(spec, "clusterIP").is_empty() && ips.first().map(String::as_str) != Some(text(spec, "clusterIP"))
    {
        errs.push(if ips.is_empty() {
            FieldError::required("spec.clusterIPs", "")
        } else {
            FieldError::invalid("spec.clusterIPs", &rendered_ips, "first value must match `clusterIP`")
        });
    }
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            continue;
        }
        if ip.parse::<std::net::IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                &format!("spec.clusterIPs[{i}]"),
                &json!(ip).to_string(),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if policy == "SingleStack" {
        if ips.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                "\"SingleStack\"",
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if strings(&spec["ipFamilies"]).len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                "\"SingleStack\"",
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    let mut families = strings(&spec["ipFamilies"]);
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        if i >= families.len() {
            if ip.contains(':') {
                errs.push(FieldError::invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    &rendered_ips,
                    "IPv6 is not configured on this cluster",
                ));
            } else {
                families.push("IPv4".into());
            }
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if headless(spec) && !has_selector(spec) {
        if families.is_empty() {
            families.push("IPv4".into());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" { "IPv6" } else { "IPv4" };
            families.push(other.into());
        }
        spec["ipFamilies"] = json!(families);
        return Ok(());
    }
    if policy == "RequireDualStack" {
        errs.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            "\"RequireDualStack\"",
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" {
            errs.push(FieldError::invalid(
                &format!("spec.ipFamilies[{i}]"),
                &json!(family).to_string(),
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if families.is_empty() {
        families.push("IPv4".into());
    }
    spec["ipFamilies"] = json!(families);
    Ok(())
}

/// A free address of the CIDR's upper band, starting at a random offset.
fn pick_ip(used: &Used, random: u32) -> Option<u32> {
    let span = CIDR_SIZE - LOWER_BAND - 1;
    (0..span)
        .map(|i| CIDR_BASE + LOWER_BAND + (random.wrapping_add(i) % span))
        .find(|ip| !used.ips.contains(ip) && *ip != KUBERNETES_SERVICE_IP)
}

/// A free node port, starting at a random offset.
fn pick_node_port(used: &Used, taken_here: &[i64], random: u32) -> Option<i64> {
    let span = NODE_PORT_MAX - NODE_PORT_MIN + 1;
    (0..span)
        .map(|i| NODE_PORT_MIN + (i64::from(random) + i) % span)
        .find(|p| !used.node_ports.contains(p) && !taken_here.contains(p))
}

/// Allocates or checks the cluster IP. `old_ips` are the service's own (an update keeps them).
fn allocate_cluster_ip(
    spec: &mut Value,
    old_ips: &[String],
    used: &Used,
    random: &mut dyn FnMut() -> u32,
    out: &mut Allocated,
) -> Result<(), Vec<FieldError>> {
    if !needs_cluster_ip(spec) || headless(spec) {
        return Ok(());
    }
    let ips = strings(&spec["clusterIPs"]);
    if let Some(first) = old_ips.first().filter(|ip| ip.as_str() != "None")
        && !ips.is_empty()
        && ips.first() != Some(first)
    {
        return Err(vec![FieldError::invalid(
            "spec.clusterIPs[0]",
            &json!(ips).to_string(),
            "may not change once set",
        )]);
    }
    if !ips.is_empty() && ips == old_ips {
        return Ok(());
    }
    let Some(requested) = ips.first() else {
        let ip = pick_ip(used, random()).ok_or_else(|| {
            vec![FieldError::invalid("spec.clusterIPs", "[]", "failed to allocate IP: range is full")]
        })?;
        spec["clusterIP"] = json!(format_ipv4(ip));
        spec["clusterIPs"] = json!([format_ipv4(ip)]);
        out.ips.push(ip);
        return Ok(());
    };
    let fail = |why: &str| {
        vec![FieldError::invalid(
            "spec.clusterIPs",
            &json!(ips).to_string(),
            &format!("failed to allocate IP {requested}: {why}"),
        )]
    };
    let ip =
        parse_ipv4(requested).ok_or_else(|| fail("the provided network does not match the current range"))?;
    // The network and broadcast addresses are outside what the allocator hands out.
    if ip <= CIDR_BASE || ip >= CIDR_BASE + CIDR_SIZE - 1 {
        return Err(fail("the provided network does not match the current range"));
    }
    if used.ips.contains(&ip) || ip == KUBERNETES_SERVICE_IP {
        return Err(fail("provided IP is already allocated"));
    }
    out.ips.push(ip);
    Ok(())
}

/// Allocates or checks node ports (and the health-check node port).
fn allocate_node_ports(
    spec: &mut Value,
    old: Option<&Value>,
    used: &Used,
    random: &mut dyn FnMut() -> u32,
    out: &mut Allocated,
) -> Result<(), Vec<FieldError>> {
    let own: HashSet<i64> = old.map(|o| used_by(o).node_ports).unwrap_or_default();
    let mut errs = Vec::new();
    let mut taken_here: Vec<(i64, String)> = Vec::new();
    if needs_node_port(spec) {
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        // Malformed ports are validation's to refuse.
        for (i, port) in ports.into_iter().flatten().enumerate().filter(|(_, p)| p.is_object()) {
            let protocol = text(port, "protocol").to_string();
            match port["nodePort"].as_i64().unwrap_or(0) {
                0 => {
                    let here: Vec<i64> = taken_here.iter().map(|(p, _)| *p).collect();
                    match pick_node_port(used, &here, random()) {
                        Some(p) => {
                            port["nodePort"] = json!(p);
                            taken_here.push((p, protocol));
                            out.node_ports.push(p);
                        }
                        None => errs.push(FieldError::invalid(
                            &format!("spec.ports[{i}].nodePort"),
                            "0",
                            "failed to allocate a nodePort: range is full",
                        )),
                    }
                }
                p => {
                    let field = format!("spec.ports[{i}].nodePort");
                    if !(NODE_PORT_MIN..=NODE_PORT_MAX).contains(&p) {
                        errs.push(FieldError::invalid(
                            &field,
                            &p.to_string(),
                            &format!(
                                "provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"
                            ),
                        ));
                        continue;
                    }
                    // One service may use a port once per protocol.
                    let reused = taken_here.iter().any(|(q, proto)| *q == p && *proto == protocol);
                    let elsewhere = taken_here.iter().any(|(q, _)| *q == p);
                    if reused || (!elsewhere && used.node_ports.contains(&p) && !own.contains(&p)) {
                        errs.push(FieldError::invalid(
                            &field,
                            &p.to_string(),
                            "provided port is already allocated",
                        ));
                        continue;
                    }
                    if !own.contains(&p) && !elsewhere {
                        out.node_ports.push(p);
                    }
                    taken_here.push((p, protocol));
                }
            }
        }
    }
    if needs_health_check_node_port(spec) && spec["healthCheckNodePort"].as_i64().unwrap_or(0) == 0 {
        let here: Vec<i64> = taken_here.iter().map(|(p, _)| *p).collect();
        if let Some(p) = pick_node_port(used, &here, random()) {
            spec["healthCheckNodePort"] = json!(p);
            out.node_ports.push(p);
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

/// What one Service holds.
fn used_by(service: &Value) -> Used {
    let mut used = Used::default();
    used.add_service(service);
    used
}

/// `dropTypeDependentFields`: what a type change leaves behind is cleared when the client did
/// not change it.
fn drop_type_dependent_fields(service: &mut Value, old: &Value) {
    let (old_spec, spec) = (&old["spec"], &mut service["spec"]);
    if needs_cluster_ip(old_spec) && !needs_cluster_ip(spec) {
        if spec["clusterIPs"] == old_spec["clusterIPs"] {
            remove(spec, "clusterIP");
            remove(spec, "clusterIPs");
        }
        for key in ["ipFamilies", "ipFamilyPolicy"] {
            if spec[key] == old_spec[key] {
                remove(spec, key);
            }
        }
    }
    let node_ports = |s: &Value| -> Vec<Value> {
        s["ports"].as_array().into_iter().flatten().map(|p| p["nodePort"].clone()).collect()
    };
    if needs_node_port(old_spec) && !needs_node_port(spec) && node_ports(spec) == node_ports(old_spec) {
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            remove(port, "nodePort");
        }
    }
    if needs_health_check_node_port(old_spec)
        && !needs_health_check_node_port(spec)
        && spec["healthCheckNodePort"] == old_spec["healthCheckNodePort"]
    {
        remove(spec, "healthCheckNodePort");
    }
    let was_lb = text(old_spec, "type") == "LoadBalancer";
    let is_lb = text(spec, "type") == "LoadBalancer";
    if was_lb && !is_lb {
        for key in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if spec[key] == old_spec[key] {
                remove(spec, key);
            }
        }
    }
    if crate::defaults::service::externally_accessible(old_spec)
        && !crate::defaults::service::externally_accessible(spec)
        && spec["externalTrafficPolicy"] == old_spec["externalTrafficPolicy"]
    {
        remove(spec, "externalTrafficPolicy");
    }
    if !is_lb && service["status"].is_object() {
        service["status"]["loadBalancer"] = json!({});
    }
}

/// Everything between decoding and validation for a Service (`old`: the stored one on update).
/// `used` holds what other Services took; `random` drives the picks. Returns what was newly
/// taken, or the 422 causes.
pub fn prepare(
    service: &mut Value,
    old: Option<&Value>,
    used: &Used,
    random: &mut dyn FnMut() -> u32,
) -> Result<Allocated, Vec<FieldError>> {
    if !service["spec"].is_object() {
        return Ok(Allocated::default());
    }
    let old_spec = old.map(|o| &o["spec"]);
    let spec = &mut service["spec"];
    if let Some(old_spec) = old_spec {
        patch_allocated_values(spec, old_spec);
    }
    normalize_cluster_ips(spec, old_spec);
    init_ip_families(spec, old_spec)?;
    let mut out = Allocated::default();
    let old_ips = old_spec.map(|o| strings(&o["clusterIPs"])).unwrap_or_default();
    allocate_cluster_ip(spec, &old_ips, used, random, &mut out)?;
    allocate_node_ports(spec, old, used, random, &mut out)?;
    if let Some(old) = old {
        drop_type_dependent_fields(service, old);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "service_ips_tests.rs"]
mod tests;
