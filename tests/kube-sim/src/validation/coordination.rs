//! coordination.k8s.io Leases (`pkg/apis/coordination/validation`).

use serde_json::Value;

use super::common::Errs;
use crate::error::FieldError;

/// `ValidateLeaseSpec` (coordination.k8s.io).
pub(super) fn lease(object: &Value, errs: &mut Errs) {
    let spec = &object["spec"];
    if let Some(seconds) = spec["leaseDurationSeconds"].as_i64().filter(|s| *s <= 0) {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            &seconds.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = spec["leaseTransitions"].as_i64().filter(|t| *t < 0) {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            &transitions.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}
