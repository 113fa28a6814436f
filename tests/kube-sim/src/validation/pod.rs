//! `ValidatePodSpec` (Pods and pod templates): volumes, containers, policies, scheduling
//! fields, service account. Fields the apiserver defaults may be absent here.

use serde_json::Value;

use super::common::{
    Errs, array_at, dns1123_label_errors, dns1123_subdomain_errors, duplicate, invalid_each, labels,
    local_descending_path, present, quoted, range_error, str_at,
};
use super::container::{self, Kind};
use super::security;
use crate::error::FieldError;

/// `validateVolumeSource`'s order of the volume sources.
const SOURCE_ORDER: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

fn file_mode(value: &Value, field: &str, errs: &mut Errs) {
    if let Some(mode) = value.as_i64()
        && !(0..=0o777).contains(&mode)
    {
        errs.push(FieldError::invalid(field, &mode.to_string(), FILE_MODE_MSG));
    }
}

fn key_to_paths(items: &[Value], path: &str, errs: &mut Errs) {
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if str_at(item, "key").unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{at}.key"), ""));
        }
        let item_path = str_at(item, "path").unwrap_or_default();
        if item_path.is_empty() {
            errs.push(FieldError::required(&format!("{at}.path"), ""));
        }
        local_descending_path(item_path, &format!("{at}.path"), errs);
        if item_path.starts_with("..") && !item_path.starts_with("../") {
            errs.push(FieldError::invalid(
                &format!("{at}.path"),
                &quoted(item_path),
                "must not start with '..'",
            ));
        }
        file_mode(&item["mode"], &format!("{at}.mode"), errs);
    }
}

/// The checks of the sources kube-sim knows; any other source is accepted as is.
fn volume_source(kind: &str, source: &Value, path: &str, errs: &mut Errs) {
    let required = |errs: &mut Errs, field: &str| {
        if str_at(source, field).unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{path}.{field}"), ""));
        }
    };
    match kind {
        "secret" => {
            required(errs, "secretName");
            file_mode(&source["defaultMode"], &format!("{path}.defaultMode"), errs);
            key_to_paths(array_at(source, "items"), &format!("{path}.items"), errs);
        }
        "configMap" => {
            required(errs, "name");
            file_mode(&source["defaultMode"], &format!("{path}.defaultMode"), errs);
            key_to_paths(array_at(source, "items"), &format!("{path}.items"), errs);
        }
        "persistentVolumeClaim" => required(errs, "claimName"),
        "hostPath" => required(errs, "path"),
        "csi" => required(errs, "driver"),
        "projected" | "downwardAPI" => {
            file_mode(&source["defaultMode"], &format!("{path}.defaultMode"), errs)
        }
        _ => {}
    }
}

/// `ValidateVolumes`: returns the names of the volumes without errors (mounts may only
/// reference those, as upstream).
fn volumes(spec: &Value, path: &str, errs: &mut Errs) -> Vec<String> {
    let mut valid = Vec::new();
    let mut all_names: Vec<String> = Vec::new();
    for (i, volume) in array_at(spec, "volumes").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let mut own = Errs::new();
        let mut sources = 0;
        let mut kinds: Vec<(&String, &Value)> =
            volume.as_object().into_iter().flatten().filter(|(k, v)| *k != "name" && !v.is_null()).collect();
        // Upstream checks the sources in this order; the second one found is the error.
        kinds.sort_by_key(|(k, _)| SOURCE_ORDER.iter().position(|o| o == k).unwrap_or(SOURCE_ORDER.len()));
        for (kind, source) in kinds {
            if sources > 0 {
                own.push(FieldError::forbidden(
                    &format!("{at}.{kind}"),
                    "may not specify more than 1 volume type",
                ));
                continue;
            }
            sources += 1;
            volume_source(kind, source, &format!("{at}.{kind}"), &mut own);
        }
        if sources == 0 {
            own.push(FieldError::required(&at, "must specify a volume type"));
        }
        let name = str_at(volume, "name").unwrap_or_default();
        if name.is_empty() {
            own.push(FieldError::required(&format!("{at}.name"), ""));
        } else {
            invalid_each(&mut own, &format!("{at}.name"), &quoted(name), dns1123_label_errors(name));
        }
        if all_names.iter().any(|n| n == name) {
            own.push(duplicate(&format!("{at}.name"), &quoted(name)));
        }
        if own.is_empty() {
            all_names.push(name.to_string());
            valid.push(name.to_string());
        }
        errs.extend(own);
    }
    valid
}

/// `ValidateTolerations`.
fn tolerations(spec: &Value, path: &str, errs: &mut Errs) {
    for (i, t) in array_at(spec, "tolerations").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let key = str_at(t, "key").unwrap_or_default();
        let operator = str_at(t, "operator").unwrap_or_default();
        let effect = str_at(t, "effect").unwrap_or_default();
        let value = str_at(t, "value").unwrap_or_default();
        if !key.is_empty() {
            container::qualified(key, &format!("{at}.key"), errs);
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &format!("{at}.operator"),
                &quoted(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if present(t, "tolerationSeconds") && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &format!("{at}.effect"),
                &quoted(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "" | "Equal" => {
                let msgs = super::common::label_value_errors(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        &format!("{at}.operator"),
                        &quoted(value),
                        &msgs.join(";"),
                    ));
                }
            }
            "Exists" if !value.is_empty() => errs.push(FieldError::invalid(
                &format!("{at}.operator"),
                &quoted(value),
                "value must be empty when `operator` is 'Exists'",
            )),
            "Exists" => {}
            other => {
                errs.push(FieldError::not_supported(&format!("{at}.operator"), other, &["Equal", "Exists"]))
            }
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            errs.push(FieldError::not_supported(
                &format!("{at}.effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

/// `validateTopologySpreadConstraints` (the scalar rules).
fn topology_spread(spec: &Value, path: &str, errs: &mut Errs) {
    for (i, c) in array_at(spec, "topologySpreadConstraints").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let skew = c["maxSkew"].as_i64().unwrap_or(0);
        if skew <= 0 {
            errs.push(FieldError::invalid(
                &format!("{at}.maxSkew"),
                &skew.to_string(),
                "must be greater than zero",
            ));
        }
        if str_at(c, "topologyKey").unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{at}.topologyKey"), "can not be empty"));
        }
        let action = str_at(c, "whenUnsatisfiable").unwrap_or_default();
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            errs.push(FieldError::not_supported(
                &format!("{at}.whenUnsatisfiable"),
                action,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
    }
}

/// `ValidatePodSpec`; `path` is `spec` (Pod) or `spec.template.spec` (workloads).
pub(super) fn pod_spec(spec: &Value, path: &str, errs: &mut Errs) {
    let grace = spec["terminationGracePeriodSeconds"].as_i64().unwrap_or(30);
    let host_users = security::host_users(spec);
    let volumes = volumes(spec, &format!("{path}.volumes"), errs);
    let containers = array_at(spec, "containers");
    let mut names: Vec<&str> = Vec::new();
    if containers.is_empty() {
        errs.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    for (i, c) in containers.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        container::common(c, &at, &volumes, host_users, errs);
        let name = str_at(c, "name").unwrap_or_default();
        if names.contains(&name) {
            errs.push(duplicate(&format!("{at}.name"), &quoted(name)));
        } else {
            names.push(name);
        }
        container::probes_and_lifecycle(c, &at, Kind::Regular, grace, errs);
    }
    host_port_conflicts(containers, &format!("{path}.containers"), errs);
    for (i, c) in array_at(spec, "initContainers").iter().enumerate() {
        let at = format!("{path}.initContainers[{i}]");
        container::common(c, &at, &volumes, host_users, errs);
        container::probes_and_lifecycle(c, &at, Kind::Init, grace, errs);
        let name = str_at(c, "name").unwrap_or_default();
        if names.contains(&name) {
            errs.push(duplicate(&format!("{at}.name"), &quoted(name)));
        } else if !name.is_empty() {
            names.push(name);
        }
    }
    if let Some(policy) = str_at(spec, "restartPolicy")
        && !matches!(policy, "Always" | "OnFailure" | "Never")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.restartPolicy"),
            policy,
            &["Always", "OnFailure", "Never"],
        ));
    }
    if let Some(policy) = str_at(spec, "dnsPolicy")
        && !matches!(policy, "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.dnsPolicy"),
            policy,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        ));
    }
    if str_at(spec, "dnsPolicy") == Some("None") && !present(spec, "dnsConfig") {
        errs.push(FieldError::required(
            &format!("{path}.dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    labels(&spec["nodeSelector"], &format!("{path}.nodeSelector"), errs);
    security::pod(&spec["securityContext"], &format!("{path}.securityContext"), errs);
    topology_spread(spec, &format!("{path}.topologySpreadConstraints"), errs);
    security::host_namespaces(spec, path, errs);
    for (field, subdomain) in
        [("serviceAccountName", true), ("nodeName", true), ("hostname", false), ("subdomain", false)]
    {
        if let Some(v) = str_at(spec, field).filter(|v| !v.is_empty()) {
            let msgs = if subdomain { dns1123_subdomain_errors(v) } else { dns1123_label_errors(v) };
            invalid_each(errs, &format!("{path}.{field}"), &quoted(v), msgs);
        }
    }
    if let Some(deadline) = spec["activeDeadlineSeconds"].as_i64()
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        errs.push(FieldError::invalid(
            &format!("{path}.activeDeadlineSeconds"),
            &deadline.to_string(),
            &range_error(1, i64::from(i32::MAX)),
        ));
    }
    tolerations(spec, &format!("{path}.tolerations"), errs);
    if let Some(class) = str_at(spec, "priorityClassName").filter(|v| !v.is_empty()) {
        invalid_each(
            errs,
            &format!("{path}.priorityClassName"),
            &quoted(class),
            dns1123_subdomain_errors(class),
        );
    }
}

/// `AccumulateUniqueHostPorts`: `<protocol>/<hostIP>/<port>` once across containers.
fn host_port_conflicts(containers: &[Value], path: &str, errs: &mut Errs) {
    let mut seen: Vec<String> = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in array_at(c, "ports").iter().enumerate() {
            let host_port = port["hostPort"].as_i64().unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let protocol = str_at(port, "protocol").filter(|p| !p.is_empty()).unwrap_or("TCP");
            let key = format!("{protocol}/{}/{host_port}", str_at(port, "hostIP").unwrap_or_default());
            if seen.contains(&key) {
                errs.push(duplicate(&format!("{path}[{ci}].ports[{pi}].hostPort"), &quoted(&key)));
            } else {
                seen.push(key);
            }
        }
    }
}
