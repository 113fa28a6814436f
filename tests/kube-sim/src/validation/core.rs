//! Core kinds: ConfigMap, Secret and Service (`pkg/apis/core/validation`). Namespace and
//! ServiceAccount have nothing beyond their metadata rules (see [`super::meta`]).

use serde_json::{Map, Value};

use super::common::{
    Errs, array_at, config_map_key_errors, dns1123_label_errors, dns1123_subdomain_errors, duplicate,
    invalid_each, key_path, labels, port_name_errors, port_num_errors, present, qualified_name_errors,
    quoted, str_at, too_long,
};
use crate::error::{ApiError, FieldError};
use crate::resources::ResourceInfo;

/// `core.MaxSecretSize`, also the ConfigMap limit.
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// Go's `base64.StdEncoding.Decode`: `Ok(decoded length)` or the offset of the first bad
/// byte (`CorruptInputError`), so the 400 names the same position the apiserver does.
fn go_base64(src: &[u8]) -> Result<usize, usize> {
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    let mut decoded = 0;
    while si < src.len() {
        let mut j = 0;
        let mut dlen = 4;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(decoded);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(si - 1);
            }
            if j == 2 {
                while si < src.len() && newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            dlen = j;
            break;
        }
        decoded += dlen - 1;
    }
    Ok(decoded)
}

/// Decodes the base64 values of `map` as the JSON decoder would; a bad value is a 400.
fn decoded_size(info: &ResourceInfo, map: &Value) -> Result<usize, ApiError> {
    let mut size = 0;
    for value in map.as_object().into_iter().flat_map(Map::values) {
        let text = value.as_str().unwrap_or_default();
        size += go_base64(text.as_bytes()).map_err(|at| {
            ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: illegal base64 data at input byte {at}",
                kind = info.kind,
                version = info.version
            ))
        })?;
    }
    Ok(size)
}

fn immutable_data(object: &Value, old: Option<&Value>, fields: &[&str], errs: &mut Errs) {
    let Some(old) = old else { return };
    if old["immutable"].as_bool() != Some(true) {
        return;
    }
    if object["immutable"].as_bool() != Some(true) {
        errs.push(FieldError::forbidden("immutable", "field is immutable when `immutable` is set"));
    }
    for field in fields {
        if object[field] != old[field] {
            errs.push(FieldError::forbidden(field, "field is immutable when `immutable` is set"));
        }
    }
}

/// `ValidateConfigMap` / `ValidateConfigMapUpdate`.
pub(super) fn config_map(
    info: &ResourceInfo,
    object: &Value,
    old: Option<&Value>,
    errs: &mut Errs,
) -> Result<(), ApiError> {
    let binary_size = decoded_size(info, &object["binaryData"])?;
    immutable_data(object, old, &["data", "binaryData"], errs);
    let binary = object["binaryData"].as_object();
    let mut size = binary_size;
    for (key, value) in object["data"].as_object().into_iter().flatten() {
        let path = key_path("data", key);
        invalid_each(errs, &path, &quoted(key), config_map_key_errors(key));
        if binary.is_some_and(|b| b.contains_key(key)) {
            errs.push(FieldError::invalid(&path, &quoted(key), "duplicate of key present in binaryData"));
        }
        size += value.as_str().map_or(0, str::len);
    }
    for key in binary.into_iter().flat_map(Map::keys) {
        invalid_each(errs, &key_path("binaryData", key), &quoted(key), config_map_key_errors(key));
    }
    if size > MAX_DATA_SIZE {
        errs.push(too_long("", MAX_DATA_SIZE));
    }
    Ok(())
}

/// `ValidateSecret` / `ValidateSecretUpdate`. kube-sim keeps `stringData` as sent (the
/// apiserver merges it into `data` while decoding), so both count as the secret's keys.
pub(super) fn secret(
    info: &ResourceInfo,
    object: &Value,
    old: Option<&Value>,
    errs: &mut Errs,
) -> Result<(), ApiError> {
    let mut size = decoded_size(info, &object["data"])?;
    let secret_type =
        |o: &Value| o["type"].as_str().filter(|t| !t.is_empty()).unwrap_or("Opaque").to_string();
    if let Some(old) = old {
        let (new_type, old_type) = (secret_type(object), secret_type(old));
        if new_type != old_type {
            errs.push(FieldError::invalid("type", &quoted(&new_type), "field is immutable"));
        }
    }
    immutable_data(object, old, &["data"], errs);
    let mut keys: Vec<&str> = Vec::new();
    for field in ["data", "stringData"] {
        for (key, value) in object[field].as_object().into_iter().flatten() {
            if field == "stringData" {
                size += value.as_str().map_or(0, str::len);
            }
            if !keys.contains(&key.as_str()) {
                keys.push(key);
                invalid_each(errs, &key_path("data", key), &quoted(key), config_map_key_errors(key));
            }
        }
    }
    if size > MAX_DATA_SIZE {
        errs.push(too_long("data", MAX_DATA_SIZE));
    }
    let has = |k: &str| keys.contains(&k);
    let required = |errs: &mut Errs, k: &str| errs.push(FieldError::required(&key_path("data", k), ""));
    match secret_type(object).as_str() {
        "kubernetes.io/service-account-token"
            if str_at(&object["metadata"]["annotations"], "kubernetes.io/service-account.name")
                .is_none_or(str::is_empty) =>
        {
            errs.push(FieldError::required("metadata.annotations[kubernetes.io/service-account.name]", ""));
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => required(errs, ".dockercfg"),
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => required(errs, ".dockerconfigjson"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            required(errs, "username");
            required(errs, "password");
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => required(errs, "ssh-privatekey"),
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    required(errs, k);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `intstr.IntOrString` as `ValidatePortNumOrName` checks it.
pub(super) fn port_num_or_name(value: &Value, field: &str, errs: &mut Errs) {
    match value {
        Value::Number(n) => {
            let port = n.as_i64().unwrap_or(0);
            invalid_each(errs, field, &port.to_string(), port_num_errors(port));
        }
        Value::String(s) => invalid_each(errs, field, &quoted(s), port_name_errors(s)),
        _ => {}
    }
}

pub(super) fn protocol(port: &Value, field: &str, errs: &mut Errs) {
    // An empty protocol defaults to TCP.
    if let Some(p) = str_at(port, "protocol")
        && !matches!(p, "" | "SCTP" | "TCP" | "UDP")
    {
        errs.push(FieldError::not_supported(field, p, &["SCTP", "TCP", "UDP"]));
    }
}

fn service_port(port: &Value, path: &str, require_name: bool, names: &mut Vec<String>, errs: &mut Errs) {
    let name = str_at(port, "name").unwrap_or_default();
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    } else if !name.is_empty() {
        invalid_each(errs, &format!("{path}.name"), &quoted(name), dns1123_label_errors(name));
        if names.iter().any(|n| n == name) {
            errs.push(duplicate(&format!("{path}.name"), &quoted(name)));
        } else {
            names.push(name.to_string());
        }
    }
    let number = port["port"].as_i64().unwrap_or(0);
    invalid_each(errs, &format!("{path}.port"), &number.to_string(), port_num_errors(number));
    protocol(port, &format!("{path}.protocol"), errs);
    // An unset (0 or "") targetPort defaults to the port.
    let target = &port["targetPort"];
    if !(target.as_i64() == Some(0) || target.as_str() == Some("")) {
        port_num_or_name(target, &format!("{path}.targetPort"), errs);
    }
    if let Some(app) = str_at(port, "appProtocol") {
        invalid_each(errs, &format!("{path}.appProtocol"), &quoted(app), qualified_name_errors(app));
    }
}

/// `ValidateService` (+ the update rules kube-sim models: none beyond create's).
pub(super) fn service(object: &Value, errs: &mut Errs) {
    let spec = &object["spec"];
    let service_type = str_at(spec, "type").unwrap_or("ClusterIP");
    let cluster_ip = str_at(spec, "clusterIP")
        .filter(|ip| !ip.is_empty())
        .or_else(|| array_at(spec, "clusterIPs").first().and_then(Value::as_str));
    let headless = cluster_ip == Some("None");
    let ports = array_at(spec, "ports");
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    match service_type {
        "LoadBalancer" | "NodePort" if headless => errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            "\"None\"",
            &format!("may not be set to 'None' for {service_type} services"),
        )),
        "ExternalName" => {
            if cluster_ip.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !array_at(spec, "ipFamilies").is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if present(spec, "ipFamilyPolicy") {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            let cname = str_at(spec, "externalName").unwrap_or_default();
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                invalid_each(errs, "spec.externalName", &quoted(cname), dns1123_subdomain_errors(cname));
            }
        }
        _ => {}
    }
    let mut names = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        service_port(port, &format!("spec.ports[{i}]"), ports.len() > 1, &mut names, errs);
    }
    if spec["selector"].is_object() {
        labels(&spec["selector"], "spec.selector", errs);
    }
    match str_at(spec, "sessionAffinity").unwrap_or("None") {
        "ClientIP" => {
            if let Some(t) = spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].as_i64()
                && !(1..=86400).contains(&t)
            {
                errs.push(FieldError::invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    &t.to_string(),
                    "must be greater than 0 and less than 86400",
                ));
            }
        }
        "None" => {
            if present(spec, "sessionAffinityConfig") {
                errs.push(FieldError::forbidden(
                    "spec.sessionAffinityConfig",
                    "must not be set when session affinity is None",
                ));
            }
        }
        "" => errs.push(FieldError::required("spec.sessionAffinity", "")),
        other => errs.push(FieldError::not_supported("spec.sessionAffinity", other, &["ClientIP", "None"])),
    }
    if let Some(policy) = str_at(spec, "ipFamilyPolicy")
        && !matches!(policy, "PreferDualStack" | "RequireDualStack" | "SingleStack")
    {
        errs.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            policy,
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    for (i, family) in array_at(spec, "ipFamilies").iter().enumerate() {
        let family = family.as_str().unwrap_or_default();
        if !matches!(family, "IPv4" | "IPv6") {
            errs.push(FieldError::not_supported(&format!("spec.ipFamilies[{i}]"), family, &["IPv4", "IPv6"]));
        }
    }
    let known_type = matches!(service_type, "ClusterIP" | "ExternalName" | "LoadBalancer" | "NodePort");
    if service_type.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !known_type {
        errs.push(FieldError::not_supported(
            "spec.type",
            service_type,
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        ));
    }
    if service_type == "ClusterIP" {
        for (i, port) in ports.iter().enumerate() {
            if port["nodePort"].as_i64().unwrap_or(0) != 0 {
                errs.push(FieldError::forbidden(
                    &format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let protocol_of =
        |p: &Value| str_at(p, "protocol").filter(|p| !p.is_empty()).unwrap_or("TCP").to_string();
    let mut node_ports: Vec<(String, i64)> = Vec::new();
    let mut seen_ports: Vec<(String, i64)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node_port = port["nodePort"].as_i64().unwrap_or(0);
        if node_port != 0 {
            let key = (protocol_of(port), node_port);
            if node_ports.contains(&key) {
                errs.push(duplicate(&format!("spec.ports[{i}].nodePort"), &node_port.to_string()));
            }
            node_ports.push(key);
        }
        let key = (protocol_of(port), port["port"].as_i64().unwrap_or(0));
        if seen_ports.contains(&key) {
            // `field.Duplicate(portPath, core.ServicePort{Protocol, Port})` printed with %#v.
            let rendered = format!(
                "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                quoted(&key.0),
                key.1
            );
            errs.push(duplicate(&format!("spec.ports[{i}]"), &rendered));
        }
        seen_ports.push(key);
    }
    let load_balancer = service_type == "LoadBalancer";
    if !array_at(spec, "loadBalancerSourceRanges").is_empty() && !load_balancer {
        errs.push(FieldError::forbidden(
            "spec.LoadBalancerSourceRanges",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if present(spec, "allocateLoadBalancerNodePorts") && !load_balancer {
        errs.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    let externally_accessible = load_balancer
        || service_type == "NodePort"
        || (service_type == "ClusterIP" && !array_at(spec, "externalIPs").is_empty());
    match str_at(spec, "externalTrafficPolicy").filter(|p| !p.is_empty()) {
        Some(p) if !externally_accessible => errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            &quoted(p),
            "may only be set for externally-accessible services",
        )),
        Some(p) if !matches!(p, "Cluster" | "Local") => {
            errs.push(FieldError::not_supported("spec.externalTrafficPolicy", p, &["Cluster", "Local"]));
        }
        _ => {}
    }
    if let Some(p) = str_at(spec, "internalTrafficPolicy")
        && !matches!(p, "Cluster" | "Local")
    {
        errs.push(FieldError::not_supported("spec.internalTrafficPolicy", p, &["Cluster", "Local"]));
    }
}

#[cfg(test)]
mod tests {
    use super::go_base64;

    #[test]
    fn base64_errors_name_the_byte_go_names() {
        assert_eq!(go_base64(b"aGVsbG8="), Ok(5));
        assert_eq!(go_base64(b"aGVsbG8"), Err(4));
        assert_eq!(go_base64(b"hello world"), Err(5));
        assert_eq!(go_base64(b"YQ=="), Ok(1));
        assert_eq!(go_base64(b"YQ==YQ=="), Err(4));
        assert_eq!(go_base64(b"YW\nJj"), Ok(3));
        assert_eq!(go_base64(b""), Ok(0));
    }
}
