//! Pod and container `securityContext` (`validatePodSpecSecurityContext`,
//! `ValidateSecurityContext`, seccomp and AppArmor profiles).

use serde_json::Value;

use super::common::{Errs, array_at, local_descending_path, quoted, range_error, str_at};
use crate::error::FieldError;

const MAX_ID: i64 = 2_147_483_647;

fn id_range(value: &Value, field: &str, errs: &mut Errs) {
    if let Some(id) = value.as_i64()
        && !(0..=MAX_ID).contains(&id)
    {
        errs.push(FieldError::invalid(field, &id.to_string(), &range_error(0, MAX_ID)));
    }
}

/// `validateSeccompProfileField`.
fn seccomp(profile: &Value, path: &str, errs: &mut Errs) {
    if !profile.is_object() {
        return;
    }
    let kind = str_at(profile, "type").unwrap_or_default();
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &format!("{path}.type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &format!("{path}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let local = &profile["localhostProfile"];
    if kind == "Localhost" {
        match local.as_str() {
            None => errs.push(FieldError::required(
                &format!("{path}.localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(p) => local_descending_path(p, &format!("{path}.localhostProfile"), errs),
        }
    } else if !local.is_null() {
        // Upstream prints the whole profile struct (with a pointer address) here.
        let value =
            format!("core.SeccompProfile{{Type:{}, LocalhostProfile:(*string)(0xc000000000)}}", quoted(kind));
        errs.push(FieldError::invalid(
            &format!("{path}.localhostProfile"),
            &value,
            "can only be set when seccomp type is Localhost",
        ));
    }
}

/// `ValidateAppArmorProfileField`.
fn app_armor(profile: &Value, path: &str, errs: &mut Errs) {
    if !profile.is_object() {
        return;
    }
    let local = &profile["localhostProfile"];
    let local_path = format!("{path}.localhostProfile");
    match str_at(profile, "type").unwrap_or_default() {
        "Localhost" => match local.as_str() {
            None | Some("") => {
                errs.push(FieldError::required(&local_path, "must be set when AppArmor type is Localhost"))
            }
            Some(p) if p.trim() != p => {
                errs.push(FieldError::invalid(&local_path, &quoted(p), "must not be padded with whitespace"))
            }
            Some(_) => {}
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(p) = local.as_str() {
                errs.push(FieldError::invalid(
                    &local_path,
                    &quoted(p),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &format!("{path}.type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &format!("{path}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
}

/// `validatePodSpecSecurityContext` (`path` is `<spec>.securityContext`).
pub(super) fn pod(sc: &Value, path: &str, errs: &mut Errs) {
    if !sc.is_object() {
        return;
    }
    id_range(&sc["fsGroup"], &format!("{path}.fsGroup"), errs);
    id_range(&sc["runAsUser"], &format!("{path}.runAsUser"), errs);
    id_range(&sc["runAsGroup"], &format!("{path}.runAsGroup"), errs);
    for (i, gid) in array_at(sc, "supplementalGroups").iter().enumerate() {
        id_range(gid, &format!("{path}.supplementalGroups[{i}]"), errs);
    }
    if let Some(policy) = str_at(sc, "fsGroupChangePolicy")
        && !matches!(policy, "Always" | "OnRootMismatch")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.fsGroupChangePolicy"),
            policy,
            &["Always", "OnRootMismatch"],
        ));
    }
    seccomp(&sc["seccompProfile"], &format!("{path}.seccompProfile"), errs);
    app_armor(&sc["appArmorProfile"], &format!("{path}.appArmorProfile"), errs);
}

/// `ValidateSecurityContext` of one container (`path` is `<container>.securityContext`).
pub(super) fn container(sc: &Value, path: &str, host_users: bool, errs: &mut Errs) {
    if !sc.is_object() {
        return;
    }
    id_range(&sc["runAsUser"], &format!("{path}.runAsUser"), errs);
    id_range(&sc["runAsGroup"], &format!("{path}.runAsGroup"), errs);
    if let Some(mount) = str_at(sc, "procMount") {
        let field = format!("{path}.procMount");
        match mount {
            "Default" => {}
            "Unmasked" if host_users => errs.push(FieldError::invalid(
                &field,
                &quoted(mount),
                "`hostUsers` must be false to use `Unmasked`",
            )),
            "Unmasked" => {}
            other => errs.push(FieldError::not_supported(&field, other, &["Default", "Unmasked"])),
        }
    }
    seccomp(&sc["seccompProfile"], &format!("{path}.seccompProfile"), errs);
    if sc["allowPrivilegeEscalation"].as_bool() == Some(false) {
        // Upstream prints the whole SecurityContext struct as the value.
        let value = "&core.SecurityContext{...}";
        if sc["privileged"].as_bool() == Some(true) {
            errs.push(FieldError::invalid(
                path,
                value,
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if array_at(&sc["capabilities"], "add").iter().any(|c| c == "CAP_SYS_ADMIN") {
            errs.push(FieldError::invalid(
                path,
                value,
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    app_armor(&sc["appArmorProfile"], &format!("{path}.appArmorProfile"), errs);
}

/// Whether the pod shares the host's user namespace (`hostUsers` defaults to true).
pub(super) fn host_users(spec: &Value) -> bool {
    spec["hostUsers"].as_bool().unwrap_or(true)
}

/// `validateHostUsers`: host namespaces are not allowed with `hostUsers: false`.
pub(super) fn host_namespaces(spec: &Value, path: &str, errs: &mut Errs) {
    if host_users(spec) {
        return;
    }
    for (field, label) in [("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")] {
        if spec[field].as_bool() == Some(true) {
            errs.push(FieldError::forbidden(
                &format!("{path}.{label}"),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
    }
}
