//! A CustomResourceDefinition's status as the apiextensions-apiserver keeps it: the strategy's
//! create/update rules (`storedVersions`), the naming controller (`acceptedNames`,
//! `NamesAccepted`, conflicts with the other CRDs of the group) and the establishing controller
//! (`Established`). A CRD's resources are served while its names are accepted.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::common::format_time;

/// The strategy's `PrepareForCreate`: a fresh status (Go's zero `acceptedNames` and `null`
/// conditions, as the real apiserver answers the create) with the storage version stored.
pub fn create_status(crd: &Value) -> Value {
    let mut status =
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []});
    add_storage_version(crd, &mut status);
    status
}

/// The strategy's `PrepareForUpdate`: the stored status, plus the new storage version.
pub fn update_status(crd: &Value, stored_status: &Value) -> Value {
    let mut status = if stored_status.is_object() { stored_status.clone() } else { json!({}) };
    add_storage_version(crd, &mut status);
    status
}

fn add_storage_version(crd: &Value, status: &mut Value) {
    let storage = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str());
    let Some(storage) = storage else { return };
    if !status["storedVersions"].is_array() {
        status["storedVersions"] = json!([]);
    }
    if let Some(stored) = status["storedVersions"].as_array_mut()
        && !stored.iter().any(|v| v == storage)
    {
        stored.push(json!(storage));
    }
}

/// `CustomResourceDefinitionNames` compared as `equality.Semantic` does (absent = empty).
fn names_equal(a: &Value, b: &Value) -> bool {
    ["plural", "singular", "kind", "listKind"].iter().all(|f| text(a, f) == text(b, f))
        && ["shortNames", "categories"].iter().all(|f| list(a, f) == list(b, f))
}

fn text<'a>(names: &'a Value, field: &str) -> &'a str {
    names[field].as_str().unwrap_or_default()
}

fn list(names: &Value, field: &str) -> Vec<String> {
    names[field].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect()
}

/// The condition of `type`, if any.
pub fn condition<'a>(crd: &'a Value, condition_type: &str) -> Option<&'a Value> {
    crd["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == condition_type)
}

/// `IsCRDConditionTrue`.
pub fn condition_true(crd: &Value, condition_type: &str) -> bool {
    condition(crd, condition_type).is_some_and(|c| c["status"] == "True")
}

/// The CRD's resources are served: names accepted or established (upstream's handler).
pub fn is_served(crd: &Value) -> bool {
    condition_true(crd, "NamesAccepted") || condition_true(crd, "Established")
}

/// `SetCRDCondition`: replaces or appends `new`; the transition time moves only when the status
/// changes.
fn set_condition(status: &mut Value, new: Value, now: Timestamp) {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else { return };
    let mut new = new;
    new["lastTransitionTime"] = json!(format_time(now));
    match conditions.iter_mut().find(|c| c["type"] == new["type"]) {
        Some(old) => {
            if old["status"] == new["status"] && !old["lastTransitionTime"].is_null() {
                new["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = new;
        }
        None => conditions.push(new),
    }
}

fn cond(condition_type: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": condition_type, "status": status, "reason": reason, "message": message})
}

/// `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// The naming controller's sync of `crd`: the new status when it changes. `group_crds` are the
/// CRDs of its group (itself included), whose accepted names are taken.
pub fn naming(crd: &Value, group_crds: &[Value], now: Timestamp) -> Option<Value> {
    let requested = &crd["spec"]["names"];
    let status = &crd["status"];
    let accepted = &status["acceptedNames"];
    if names_equal(requested, accepted) {
        return None;
    }
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let mut resources: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for other in group_crds.iter().filter(|c| c["spec"]["group"].as_str().unwrap_or_default() == group) {
        let names = &other["status"]["acceptedNames"];
        resources.extend([text(names, "plural").to_string(), text(names, "singular").to_string()]);
        resources.extend(list(names, "shortNames"));
        kinds.extend([text(names, "kind").to_string(), text(names, "listKind").to_string()]);
    }
    let mut new_names = if accepted.is_object() { accepted.clone() } else { json!({}) };
    let mut problem: Option<(&str, String)> = None;
    for (field, reason, used) in
        [("plural", "PluralConflict", &resources), ("singular", "SingularConflict", &resources)]
    {
        match fresh(text(requested, field), text(accepted, field), used) {
            Ok(()) => new_names[field] = requested[field].clone(),
            Err(e) => problem = Some((reason, e)),
        }
    }
    if list(requested, "shortNames") != list(accepted, "shortNames") {
        let existing = list(accepted, "shortNames");
        let errs: Vec<String> = list(requested, "shortNames")
            .iter()
            .filter(|s| !existing.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        match errs.len() {
            0 => new_names["shortNames"] = requested["shortNames"].clone(),
            1 => problem = Some(("ShortNamesConflict", errs.concat())),
            _ => problem = Some(("ShortNamesConflict", format!("[{}]", errs.join(", ")))),
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(text(requested, field), text(accepted, field), &kinds) {
            Ok(()) => new_names[field] = requested[field].clone(),
            Err(e) => problem = Some((reason, e)),
        }
    }
    new_names["categories"] = requested["categories"].clone();
    // Go's omitempty: empty optional names are not written.
    if let Some(m) = new_names.as_object_mut() {
        m.retain(|k, v| {
            matches!(k.as_str(), "plural" | "kind")
                || !(v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty))
        });
        for required in ["plural", "kind"] {
            m.entry(required).or_insert_with(|| json!(""));
        }
    }
    let names_accepted = match &problem {
        None => cond("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => cond("NamesAccepted", "False", reason, message),
    };
    let mut established = match condition(crd, "Established") {
        Some(old) => old.clone(),
        None => cond("Established", "False", "NotAccepted", "not all names are accepted"),
    };
    if established["status"] != "True" && problem.is_none() {
        established = cond("Established", "False", "Installing", "the initial names have been accepted");
    }
    let same_condition = condition(crd, "NamesAccepted").is_some_and(|c| {
        c["status"] == names_accepted["status"]
            && c["reason"] == names_accepted["reason"]
            && c["message"] == names_accepted["message"]
    });
    if names_equal(&new_names, accepted) && same_condition {
        return None;
    }
    let mut status = if status.is_object() { status.clone() } else { json!({}) };
    status["acceptedNames"] = new_names;
    set_condition(&mut status, names_accepted, now);
    set_condition(&mut status, established, now);
    Some(status)
}

/// The establishing controller's sync: `Established=True` once the names are accepted.
pub fn establishing(crd: &Value, now: Timestamp) -> Option<Value> {
    if !condition_true(crd, "NamesAccepted") || condition_true(crd, "Established") {
        return None;
    }
    let mut status = crd["status"].clone();
    set_condition(
        &mut status,
        cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        now,
    );
    Some(status)
}

/// The names a served CRD is served under: the accepted ones, the spec's where none are yet
/// (a CRD seeded without status).
pub fn served_names(crd: &Value) -> Map<String, Value> {
    let accepted = &crd["status"]["acceptedNames"];
    let names = if text(accepted, "kind").is_empty() { &crd["spec"]["names"] } else { accepted };
    names.as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
#[path = "crd_status_tests.rs"]
mod tests;
