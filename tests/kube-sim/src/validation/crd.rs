//! CustomResourceDefinition basics (`apiextensions-apiserver/.../validation/validation.go`):
//! group, scope, versions, names; the schema only as far as "present, object at the root".
//! The name rule (`<plural>.<group>`) lives in [`super::meta`].

use serde_json::Value;

use super::common::{Errs, array_at, dns1035_label_errors, dns1123_subdomain_errors, quoted, str_at};
use crate::error::FieldError;

/// `%#v`-like rendering of `spec.versions` (upstream prints the whole internal structs).
fn versions_value(versions: &[Value]) -> String {
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, ...}}",
                quoted(str_at(v, "name").unwrap_or_default()),
                v["served"].as_bool().unwrap_or(false),
                v["storage"].as_bool().unwrap_or(false)
            )
        })
        .collect();
    format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", items.join(", "))
}

fn dns1035(value: &str, field: &str, prefix: &str, errs: &mut Errs) {
    let msgs = dns1035_label_errors(&value.to_lowercase());
    if !value.is_empty() && !msgs.is_empty() {
        errs.push(FieldError::invalid(field, &quoted(value), &format!("{prefix}{}", msgs.join(","))));
    }
}

/// `ValidateCustomResourceDefinitionNames` plus the spec's required names (`singular` and
/// `listKind` are defaulted from `kind`, so only `plural` and `kind` can be missing).
fn names(names: &Value, errs: &mut Errs) {
    let get = |f: &str| str_at(names, f).unwrap_or_default();
    for field in ["plural", "kind"] {
        if get(field).is_empty() {
            errs.push(FieldError::required(&format!("spec.names.{field}"), ""));
        }
    }
    dns1035(get("plural"), "spec.names.plural", "", errs);
    dns1035(get("singular"), "spec.names.singular", "", errs);
    let mixed = "may have mixed case, but should otherwise match: ";
    dns1035(get("kind"), "spec.names.kind", mixed, errs);
    dns1035(get("listKind"), "spec.names.listKind", mixed, errs);
    for (field, list) in [("shortNames", "shortNames"), ("categories", "categories")] {
        for (i, item) in array_at(names, field).iter().enumerate() {
            dns1035(item.as_str().unwrap_or_default(), &format!("spec.names.{list}[{i}]"), "", errs);
        }
    }
    if !get("kind").is_empty() && get("kind") == get("listKind") {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            &quoted(get("listKind")),
            "kind and listKind may not be the same",
        ));
    }
}

/// Validates a CRD for create or (with `old`) update.
pub(super) fn crd(object: &Value, old: Option<&Value>, errs: &mut Errs) {
    let spec = &object["spec"];
    let group = str_at(spec, "group").unwrap_or_default();
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let msgs = dns1123_subdomain_errors(group);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid("spec.group", &quoted(group), &msgs.join(",")));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                &quoted(group),
                "should be a domain with at least one dot",
            ));
        }
    }
    match str_at(spec, "scope").unwrap_or_default() {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported("spec.scope", other, &["Cluster", "Namespaced"])),
    }
    let versions = array_at(spec, "versions");
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    let mut storage = 0;
    for (i, version) in versions.iter().enumerate() {
        let name = str_at(version, "name").unwrap_or_default();
        if version["storage"].as_bool() == Some(true) {
            storage += 1;
        }
        if seen.contains(&name) {
            unique = false;
        }
        seen.push(name);
        let msgs = dns1035_label_errors(name);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &format!("spec.versions[{i}].name"),
                &quoted(name),
                &msgs.join(","),
            ));
        }
        let schema_path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let schema = &version["schema"]["openAPIV3Schema"];
        if !schema.is_object() {
            errs.push(FieldError::required(&schema_path, "schemas are required"));
        } else {
            match str_at(schema, "type").unwrap_or_default() {
                "" => errs.push(FieldError::required(
                    &format!("{schema_path}.type"),
                    "must not be empty at the root",
                )),
                "object" => {}
                other => errs.push(FieldError::invalid(
                    &format!("{schema_path}.type"),
                    &quoted(other),
                    "must be object at the root",
                )),
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            &versions_value(versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            &versions_value(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    names(&spec["names"], errs);
    if let Some(old) = old {
        // Group and plural name the CRD; scope and kind are fixed once it is established.
        let established = crate::cluster_logic::crd_status::condition_true(old, "Established");
        let fixed: &[(&[&str], &str)] = if established {
            &[
                (&["scope"], "spec.scope"),
                (&["names", "kind"], "spec.names.kind"),
                (&["group"], "spec.group"),
                (&["names", "plural"], "spec.names.plural"),
            ]
        } else {
            &[(&["group"], "spec.group"), (&["names", "plural"], "spec.names.plural")]
        };
        for (field, path) in fixed {
            let at = |o: &Value| field.iter().fold(o["spec"].clone(), |v, f| v[*f].clone());
            if at(object) != at(old) {
                errs.push(FieldError::invalid(
                    path,
                    &super::common::rendered(&at(object)),
                    "field is immutable",
                ));
            }
        }
    }
}
