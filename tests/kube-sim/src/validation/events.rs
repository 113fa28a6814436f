//! Events, whichever API wrote them (`pkg/apis/core/validation/events.go`).

use serde_json::Value;

use super::common::{Errs, dns1123_subdomain_errors, invalid_each, present, qualified_name_errors, quoted};
use crate::error::FieldError;

/// `ValidateEventCreate`/`ValidateEventUpdate` on the stored (core) form: the legacy rules for
/// every Event, the strict ones for those written through `events.k8s.io/v1`. Field paths are
/// the core ones (`involvedObject`, `message`), as upstream validates its internal type.
pub(super) fn event(object: &Value, strict: bool, old: Option<&Value>, errs: &mut Errs) {
    let text = |key: &str| object[key].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let involved_namespace = object["involvedObject"]["namespace"].as_str().unwrap_or_default();
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            &quoted(involved_namespace),
            "does not match event.namespace",
        )
    };
    let limit = |key: &str, max: usize, errs: &mut Errs| {
        if text(key).len() > max {
            errs.push(FieldError::invalid(key, "\"\"", &format!("can have at most {max} characters")));
        }
    };
    if !present(object, "eventTime") {
        if involved_namespace.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                errs.push(mismatch());
            }
        } else if namespace != involved_namespace {
            errs.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        // The core API calls the field reportingComponent.
        let controller = if strict { "reportingController" } else { "reportingComponent" };
        let reporting = text("reportingComponent");
        if reporting.is_empty() {
            errs.push(FieldError::required(controller, ""));
        }
        invalid_each(errs, controller, &quoted(reporting), qualified_name_errors(reporting));
        if text("reportingInstance").is_empty() {
            errs.push(FieldError::required("reportingInstance", ""));
        }
        limit("reportingInstance", 128, errs);
        if text("action").is_empty() {
            errs.push(FieldError::required("action", ""));
        }
        limit("action", 128, errs);
        if text("reason").is_empty() {
            errs.push(FieldError::required("reason", ""));
        }
        limit("reason", 128, errs);
        limit("message", 1024, errs);
    }
    invalid_each(errs, "namespace", &quoted(namespace), dns1123_subdomain_errors(namespace));
    if !strict || old.is_some() {
        return;
    }
    let series = &object["series"];
    if series.is_object() {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            errs.push(FieldError::invalid("series.count", "\"\"", "should be at least 2"));
        }
        if !present(series, "lastObservedTime") {
            errs.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    if !present(object, "eventTime") {
        errs.push(FieldError::required("eventTime", ""));
    }
    let kind = text("type");
    if kind != "Normal" && kind != "Warning" {
        errs.push(FieldError::invalid("type", "\"\"", &format!("has invalid value: {kind}")));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if present(object, key) {
            errs.push(FieldError::invalid(key, "\"\"", "needs to be unset"));
        }
    }
    if object["count"].as_i64().unwrap_or(0) != 0 {
        errs.push(FieldError::invalid("count", "\"\"", "needs to be unset"));
    }
    if !text_at(&object["source"], "component").is_empty() || !text_at(&object["source"], "host").is_empty() {
        errs.push(FieldError::invalid("source", "\"\"", "needs to be unset"));
    }
}

fn text_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}
