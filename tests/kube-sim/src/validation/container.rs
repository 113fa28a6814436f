//! One container (`validateContainerCommon` and what `validateContainers` adds): name,
//! image, ports, env, volume mounts, pull policy, resources, probes, lifecycle, security.

use serde_json::Value;

use super::common::{
    Errs, array_at, config_map_key_errors, dns1123_label_errors, dns1123_subdomain_errors, duplicate,
    invalid_each, local_descending_path, non_negative, not_found, port_name_errors, port_num_errors, present,
    qualified_name_errors, quoted, regex_error, relaxed_env_name_errors, str_at,
};
use super::core::{port_num_or_name, protocol};
use super::resources;
use super::security;
use crate::error::FieldError;

/// What the container list it belongs to allows.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Regular,
    Init,
}

/// Checks shared by regular and init containers. `volumes` are the pod's valid volumes.
pub(super) fn common(c: &Value, path: &str, volumes: &[String], host_users: bool, errs: &mut Errs) {
    match str_at(c, "name").unwrap_or_default() {
        "" => errs.push(FieldError::required(&format!("{path}.name"), "")),
        n => invalid_each(errs, &format!("{path}.name"), &quoted(n), dns1123_label_errors(n)),
    }
    if str_at(c, "image").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(&format!("{path}.image"), ""));
    }
    if let Some(policy) = str_at(c, "terminationMessagePolicy")
        && !matches!(policy, "File" | "FallbackToLogsOnError")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.terminationMessagePolicy"),
            policy,
            &["File", "FallbackToLogsOnError"],
        ));
    }
    ports(c, &format!("{path}.ports"), errs);
    env(c, &format!("{path}.env"), errs);
    env_from(c, &format!("{path}.envFrom"), errs);
    volume_mounts(c, &format!("{path}.volumeMounts"), volumes, errs);
    if let Some(policy) = str_at(c, "imagePullPolicy")
        && !matches!(policy, "Always" | "IfNotPresent" | "Never")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.imagePullPolicy"),
            policy,
            &["Always", "IfNotPresent", "Never"],
        ));
    }
    resources::requirements(&c["resources"], &format!("{path}.resources"), errs);
    security::container(&c["securityContext"], &format!("{path}.securityContext"), host_users, errs);
}

/// Probes, lifecycle and `restartPolicy`, which depend on the container list.
pub(super) fn probes_and_lifecycle(c: &Value, path: &str, kind: Kind, grace: i64, errs: &mut Errs) {
    let restart_always = str_at(c, "restartPolicy") == Some("Always");
    if kind == Kind::Init && !restart_always {
        if let Some(p) = str_at(c, "restartPolicy") {
            errs.push(FieldError::not_supported(&format!("{path}.restartPolicy"), p, &["Always"]));
        }
        for field in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
            if present(c, field) {
                errs.push(FieldError::forbidden(
                    &format!("{path}.{field}"),
                    "may not be set for init containers without restartPolicy=Always",
                ));
            }
        }
        return;
    }
    if let Some(lifecycle) = c.get("lifecycle").filter(|l| l.is_object()) {
        for hook in ["postStart", "preStop"] {
            if let Some(handler) = lifecycle.get(hook).filter(|h| h.is_object()) {
                handlers(
                    handler,
                    &format!("{path}.lifecycle.{hook}"),
                    &["exec", "httpGet", "tcpSocket", "sleep"],
                    grace,
                    errs,
                );
            }
        }
    }
    for (field, must_succeed_once) in
        [("livenessProbe", true), ("readinessProbe", false), ("startupProbe", true)]
    {
        if let Some(p) = c.get(field).filter(|p| p.is_object()) {
            probe(p, &format!("{path}.{field}"), field, must_succeed_once, grace, errs);
        }
    }
    if kind == Kind::Regular && present(c, "restartPolicy") {
        errs.push(FieldError::forbidden(
            &format!("{path}.restartPolicy"),
            "may not be set for non-init containers",
        ));
    }
}

/// `validateContainerPorts`. An empty protocol defaults to TCP.
fn ports(c: &Value, path: &str, errs: &mut Errs) {
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in array_at(c, "ports").iter().enumerate() {
        let at = format!("{path}[{i}]");
        if let Some(name) = str_at(port, "name").filter(|n| !n.is_empty()) {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                invalid_each(errs, &format!("{at}.name"), &quoted(name), msgs);
            } else if names.contains(&name) {
                errs.push(duplicate(&format!("{at}.name"), &quoted(name)));
            } else {
                names.push(name);
            }
        }
        match port["containerPort"].as_i64().unwrap_or(0) {
            0 => errs.push(FieldError::required(&format!("{at}.containerPort"), "")),
            n => invalid_each(errs, &format!("{at}.containerPort"), &n.to_string(), port_num_errors(n)),
        }
        let host = port["hostPort"].as_i64().unwrap_or(0);
        if host != 0 {
            invalid_each(errs, &format!("{at}.hostPort"), &host.to_string(), port_num_errors(host));
        }
        protocol(port, &format!("{at}.protocol"), errs);
    }
}

const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn key_selector(selector: &Value, path: &str, errs: &mut Errs) {
    let name = str_at(selector, "name").unwrap_or_default();
    invalid_each(errs, &format!("{path}.name"), &quoted(name), dns1123_subdomain_errors(name));
    match str_at(selector, "key").unwrap_or_default() {
        "" => errs.push(FieldError::required(&format!("{path}.key"), "")),
        key => invalid_each(errs, &format!("{path}.key"), &quoted(key), config_map_key_errors(key)),
    }
}

/// `ValidateEnv` with `validateEnvVarValueFrom`.
fn env(c: &Value, path: &str, errs: &mut Errs) {
    for (i, var) in array_at(c, "env").iter().enumerate() {
        let at = format!("{path}[{i}]");
        match str_at(var, "name").unwrap_or_default() {
            "" => errs.push(FieldError::required(&format!("{at}.name"), "")),
            n => invalid_each(errs, &format!("{at}.name"), &quoted(n), relaxed_env_name_errors(n)),
        }
        let Some(from) = var.get("valueFrom").filter(|v| v.is_object()) else { continue };
        let from_path = format!("{at}.valueFrom");
        let mut sources = 0;
        if let Some(field_ref) = from.get("fieldRef").filter(|f| f.is_object()) {
            sources += 1;
            let fp = str_at(field_ref, "fieldPath").unwrap_or_default();
            let field_path = format!("{from_path}.fieldRef.fieldPath");
            let subscripted = ["metadata.labels[", "metadata.annotations["].iter().any(|p| fp.starts_with(p));
            if fp.is_empty() {
                errs.push(FieldError::required(&field_path, ""));
            } else if !subscripted && !ENV_FIELD_PATHS.contains(&fp) {
                errs.push(FieldError::not_supported(&field_path, fp, ENV_FIELD_PATHS));
            }
        }
        if let Some(resource_ref) = from.get("resourceFieldRef").filter(|f| f.is_object()) {
            sources += 1;
            if str_at(resource_ref, "resource").unwrap_or_default().is_empty() {
                errs.push(FieldError::required(&format!("{from_path}.resourceFieldRef.resource"), ""));
            }
        }
        for (field, path_name) in [("configMapKeyRef", "configMapKeyRef"), ("secretKeyRef", "secretKeyRef")] {
            if let Some(selector) = from.get(field).filter(|s| s.is_object()) {
                sources += 1;
                key_selector(selector, &format!("{from_path}.{path_name}"), errs);
            }
        }
        let value_set = str_at(var, "value").is_some_and(|v| !v.is_empty());
        if sources == 0 {
            errs.push(FieldError::invalid(
                &from_path,
                "\"\"",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if value_set {
            errs.push(FieldError::invalid(
                &from_path,
                "\"\"",
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                &from_path,
                "\"\"",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `ValidateEnvFrom`.
fn env_from(c: &Value, path: &str, errs: &mut Errs) {
    for (i, source) in array_at(c, "envFrom").iter().enumerate() {
        let at = format!("{path}[{i}]");
        if let Some(prefix) = str_at(source, "prefix").filter(|p| !p.is_empty()) {
            invalid_each(errs, &format!("{at}.prefix"), &quoted(prefix), relaxed_env_name_errors(prefix));
        }
        let mut sources = 0;
        for field in ["configMapRef", "secretRef"] {
            if let Some(reference) = source.get(field).filter(|r| r.is_object()) {
                sources += 1;
                match str_at(reference, "name").unwrap_or_default() {
                    "" => errs.push(FieldError::required(&format!("{at}.{field}.name"), "")),
                    name => {
                        // A prefix name may end in '-'.
                        let masked = name.strip_suffix('-').map_or(name.to_string(), |n| format!("{n}a"));
                        invalid_each(
                            errs,
                            &format!("{at}.{field}.name"),
                            &quoted(name),
                            dns1123_subdomain_errors(&masked),
                        );
                    }
                }
            }
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                path,
                "\"\"",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                path,
                "\"\"",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `ValidateVolumeMounts` (upstream reports subPath and propagation errors on the list path).
fn volume_mounts(c: &Value, path: &str, volumes: &[String], errs: &mut Errs) {
    let mut mount_points: Vec<&str> = Vec::new();
    let privileged = c["securityContext"]["privileged"].as_bool() == Some(true);
    for (i, mount) in array_at(c, "volumeMounts").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = str_at(mount, "name").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        }
        if !volumes.iter().any(|v| v == name) {
            errs.push(not_found(&format!("{at}.name"), name));
        }
        let mount_path = str_at(mount, "mountPath").unwrap_or_default();
        if mount_path.is_empty() {
            errs.push(FieldError::required(&format!("{at}.mountPath"), ""));
        }
        if mount_points.contains(&mount_path) {
            errs.push(FieldError::invalid(&format!("{at}.mountPath"), &quoted(mount_path), "must be unique"));
        }
        mount_points.push(mount_path);
        let sub_path = str_at(mount, "subPath").unwrap_or_default();
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &format!("{path}.subPath"), errs);
        }
        if let Some(expr) = str_at(mount, "subPathExpr").filter(|e| !e.is_empty()) {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &format!("{at}.subPathExpr"),
                    &quoted(expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(expr, &format!("{path}.subPathExpr"), errs);
        }
        if let Some(propagation) = str_at(mount, "mountPropagation") {
            let field = format!("{path}.mountPropagation");
            if !matches!(propagation, "Bidirectional" | "HostToContainer" | "None") {
                errs.push(FieldError::not_supported(
                    &field,
                    propagation,
                    &["Bidirectional", "HostToContainer", "None"],
                ));
            } else if propagation == "Bidirectional" && !privileged {
                errs.push(FieldError::forbidden(
                    &field,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
    }
}

fn http_get(action: &Value, path: &str, errs: &mut Errs) {
    let port = if action["port"].is_null() { &Value::from(0) } else { &action["port"] };
    port_num_or_name(port, &format!("{path}.port"), errs);
    // An empty scheme defaults to HTTP and an empty path to "/".
    if let Some(scheme) = str_at(action, "scheme").filter(|s| !s.is_empty())
        && !matches!(scheme, "HTTP" | "HTTPS")
    {
        errs.push(FieldError::not_supported(&format!("{path}.scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    for header in array_at(action, "httpHeaders") {
        let name = str_at(header, "name").unwrap_or_default();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            let msg = regex_error(
                "a valid HTTP header must consist of alphanumeric characters or '-'",
                "[-A-Za-z0-9]+",
                &["X-Header-Name"],
            );
            errs.push(FieldError::invalid(&format!("{path}.httpHeaders"), &quoted(name), &msg));
        }
    }
}

/// `validateHandler`: exactly one of the allowed handler kinds.
fn handlers(handler: &Value, path: &str, allowed: &[&str], grace: i64, errs: &mut Errs) {
    let mut count = 0;
    for kind in allowed {
        let Some(action) = handler.get(*kind).filter(|a| !a.is_null()) else { continue };
        let at = format!("{path}.{kind}");
        if count > 0 {
            errs.push(FieldError::forbidden(&at, "may not specify more than 1 handler type"));
            continue;
        }
        count += 1;
        match *kind {
            "exec" if array_at(action, "command").is_empty() => {
                errs.push(FieldError::required(&format!("{at}.command"), ""))
            }
            "httpGet" => http_get(action, &at, errs),
            "tcpSocket" => {
                let port = if action["port"].is_null() { &Value::from(0) } else { &action["port"] };
                port_num_or_name(port, &format!("{at}.port"), errs);
            }
            "grpc" => {
                let port = action["port"].as_i64().unwrap_or(0);
                invalid_each(errs, &format!("{at}.port"), &port.to_string(), port_num_errors(port));
            }
            "sleep" => {
                let seconds = action["seconds"].as_i64().unwrap_or(0);
                if seconds < 0 || seconds > grace {
                    let msg =
                        format!("must be non-negative and less than terminationGracePeriodSeconds ({grace})");
                    errs.push(FieldError::invalid(&at, &seconds.to_string(), &msg));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
}

/// `validateProbe` plus the liveness/startup/readiness specifics. Zero or absent numbers
/// take their defaults (successThreshold 1, periodSeconds 10, ...).
fn probe(p: &Value, path: &str, field: &str, must_succeed_once: bool, grace: i64, errs: &mut Errs) {
    handlers(p, path, &["exec", "httpGet", "tcpSocket", "grpc"], grace, errs);
    for number in
        ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"]
    {
        non_negative(&p[number], &format!("{path}.{number}"), errs);
    }
    if let Some(t) = p["terminationGracePeriodSeconds"].as_i64() {
        if field == "readinessProbe" {
            errs.push(FieldError::invalid(
                &format!("{path}.terminationGracePeriodSeconds"),
                &t.to_string(),
                "must not be set for readinessProbes",
            ));
        } else if t <= 0 {
            errs.push(FieldError::invalid(
                &format!("{path}.terminationGracePeriodSeconds"),
                &t.to_string(),
                "must be greater than 0",
            ));
        }
    }
    let success = p["successThreshold"].as_i64().filter(|s| *s != 0).unwrap_or(1);
    if must_succeed_once && success != 1 {
        errs.push(FieldError::invalid(
            &format!("{path}.successThreshold"),
            &success.to_string(),
            "must be 1",
        ));
    }
}

/// `ValidateQualifiedName` on a value (readiness gates, topology keys).
pub(super) fn qualified(value: &str, field: &str, errs: &mut Errs) {
    invalid_each(errs, field, &quoted(value), qualified_name_errors(value));
}
