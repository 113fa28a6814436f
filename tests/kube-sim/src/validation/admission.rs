//! Validating/MutatingWebhookConfiguration (`pkg/apis/admissionregistration/validation`,
//! `apiserver/pkg/util/webhook/validation.go`). Absent fields are the ones v1 defaults
//! (failurePolicy, matchPolicy, timeoutSeconds, scope, service port) and are valid.

use serde_json::Value;

use super::common::{
    Errs, array_at, dns1035_label_errors, dns1123_subdomain_errors, duplicate, go_slice, invalid_each,
    port_num_errors, qualified_name_errors, quoted, str_at,
};
use crate::error::FieldError;
use crate::selector::LabelSelector;

const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const ALL_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// What an update keeps tolerating because the stored object already had it.
struct Options {
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
}

impl Options {
    fn for_write(old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Self {
                require_no_side_effects: true,
                require_recognized_review_version: true,
                require_unique_names: true,
            };
        };
        let hooks = array_at(old, "webhooks");
        let names: Vec<&str> = hooks.iter().map(|h| str_at(h, "name").unwrap_or_default()).collect();
        Self {
            require_no_side_effects: hooks
                .iter()
                .all(|h| str_at(h, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_recognized_review_version: hooks.iter().all(|h| {
                let versions = array_at(h, "admissionReviewVersions");
                versions.is_empty()
                    || versions.iter().any(|v| v.as_str().is_some_and(|v| REVIEW_VERSIONS.contains(&v)))
            }),
            require_unique_names: names.iter().enumerate().all(|(i, n)| !names[..i].contains(n)),
        }
    }
}

fn has_wildcard(items: &[Value]) -> bool {
    items.iter().any(|i| i == "*")
}

/// `validateResources` (subresources allowed).
fn resources(items: &[Value], path: &str, errs: &mut Errs) {
    if items.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let (mut with_wildcard_sub, mut sub_with_wildcard_res): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let (mut double, mut single, mut without_sub) = (false, false, false);
    for (i, item) in items.iter().enumerate() {
        let r = item.as_str().unwrap_or_default();
        if r.is_empty() {
            errs.push(FieldError::required(&format!("{path}[{i}]"), ""));
            continue;
        }
        double |= r == "*/*";
        single |= r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            without_sub = r != "*";
            continue;
        };
        if with_wildcard_sub.contains(&res) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                &quoted(r),
                &format!("if '{res}/*' is present, must not specify {r}"),
            ));
        }
        if sub_with_wildcard_res.contains(&sub) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                &quoted(r),
                &format!("if '*/{sub}' is present, must not specify {r}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.push(res);
        }
        if res == "*" {
            sub_with_wildcard_res.push(sub);
        }
    }
    if items.len() > 1 && double {
        errs.push(FieldError::invalid(
            path,
            &go_slice("string", items),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && without_sub {
        errs.push(FieldError::invalid(
            path,
            &go_slice("string", items),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateRuleWithOperations`.
fn rule(rule: &Value, path: &str, errs: &mut Errs) {
    let operations = array_at(rule, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && has_wildcard(operations) {
        errs.push(FieldError::invalid(
            &format!("{path}.operations"),
            &go_slice("admissionregistration.OperationType", operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        let op = op.as_str().unwrap_or_default();
        if !matches!(op, "*" | "CONNECT" | "CREATE" | "DELETE" | "UPDATE") {
            errs.push(FieldError::not_supported(
                &format!("{path}.operations[{i}]"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    for (field, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = array_at(rule, field);
        if items.is_empty() {
            errs.push(FieldError::required(&format!("{path}.{field}"), ""));
        }
        if items.len() > 1 && has_wildcard(items) {
            errs.push(FieldError::invalid(
                &format!("{path}.{field}"),
                &go_slice("string", items),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, version) in array_at(rule, "apiVersions").iter().enumerate() {
        if version.as_str().is_none_or(str::is_empty) {
            errs.push(FieldError::required(&format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    resources(array_at(rule, "resources"), &format!("{path}.resources"), errs);
    if let Some(scope) = str_at(rule, "scope")
        && !matches!(scope, "*" | "Cluster" | "Namespaced")
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

/// `ValidateWebhookURL` with https forced; a hand-rolled split of Go's `url.Parse` result.
fn url(url: &str, path: &str, errs: &mut Errs) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if url.contains("://") { rest.split('/').next().unwrap_or_default() } else { "" };
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            &quoted(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(path, "\"\"", &format!("host must be provided{FORM}")));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(path, &quoted(user), "user information is not permitted in the URL"));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(path, &quoted(fragment), "fragments are not permitted in the URL"));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(path, &quoted(query), "query parameters are not permitted in the URL"));
    }
}

/// `ValidateWebhookService`.
fn service(service: &Value, path: &str, errs: &mut Errs) {
    if str_at(service, "name").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), "service name is required"));
    }
    if str_at(service, "namespace").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(&format!("{path}.namespace"), "service namespace is required"));
    }
    if let Some(port) = service["port"].as_i64() {
        let msgs = port_num_errors(port);
        if !msgs.is_empty() {
            let detail = format!("port is not valid: {}", msgs.join(", "));
            errs.push(FieldError::invalid(&format!("{path}.port"), &port.to_string(), &detail));
        }
    }
    let Some(url_path) = str_at(service, "path").filter(|p| !p.is_empty() && *p != "/") else { return };
    let field = format!("{path}.path");
    if url_path == "//" {
        errs.push(FieldError::invalid(&field, &quoted(url_path), "segment[0] may not be empty"));
        return;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&field, &quoted(url_path), "must start with a '/'"));
    }
    let trimmed = url_path.get(1..).unwrap_or_default();
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &field,
                &quoted(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in dns1123_subdomain_errors(step) {
            errs.push(FieldError::invalid(&field, &quoted(url_path), &format!("segment[{i}]: {failure}")));
        }
    }
}

fn selector(value: &Value, path: &str, errs: &mut Errs) {
    if value.is_object()
        && let Err(e) = LabelSelector::from_api(value)
    {
        errs.push(FieldError::invalid(path, &value.to_string(), &e));
    }
}

/// `validateMatchConditions` without compiling the CEL expressions.
fn match_conditions(hook: &Value, path: &str, errs: &mut Errs) {
    let mut names: Vec<&str> = Vec::new();
    for (i, condition) in array_at(hook, "matchConditions").iter().enumerate() {
        let at = format!("{path}[{i}]");
        if str_at(condition, "expression").unwrap_or_default().trim().is_empty() {
            errs.push(FieldError::required(&format!("{at}.expression"), ""));
        }
        match str_at(condition, "name").unwrap_or_default() {
            "" => errs.push(FieldError::required(&format!("{at}.name"), "")),
            name => {
                invalid_each(errs, &format!("{at}.name"), &quoted(name), qualified_name_errors(name));
                if names.contains(&name) {
                    errs.push(duplicate(&format!("{at}.name"), &quoted(name)));
                } else {
                    names.push(name);
                }
            }
        }
    }
}

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn webhook(hook: &Value, path: &str, mutating: bool, opts: &Options, errs: &mut Errs) {
    let name_path = format!("{path}.name");
    match str_at(hook, "name").unwrap_or_default() {
        "" => errs.push(FieldError::required(&name_path, "")),
        name => {
            let msgs = dns1123_subdomain_errors(name);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(&name_path, &quoted(name), &msgs.join(",")));
            } else if name.split('.').count() < 3 {
                errs.push(FieldError::invalid(
                    &name_path,
                    &quoted(name),
                    "should be a domain with at least three segments separated by dots",
                ));
            }
        }
    }
    for (i, r) in array_at(hook, "rules").iter().enumerate() {
        rule(r, &format!("{path}.rules[{i}]"), errs);
    }
    for (field, allowed) in
        [("failurePolicy", &["Fail", "Ignore"]), ("matchPolicy", &["Equivalent", "Exact"])]
    {
        if let Some(v) = str_at(hook, field).filter(|v| !allowed.contains(v)) {
            errs.push(FieldError::not_supported(&format!("{path}.{field}"), v, allowed));
        }
    }
    let allowed = if opts.require_no_side_effects { NO_SIDE_EFFECTS } else { ALL_SIDE_EFFECTS };
    match str_at(hook, "sideEffects") {
        None => errs.push(FieldError::required(
            &format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(s) if !allowed.contains(&s) => {
            errs.push(FieldError::not_supported(&format!("{path}.sideEffects"), s, allowed))
        }
        Some(_) => {}
    }
    if let Some(t) = hook["timeoutSeconds"].as_i64().filter(|t| !(1..=30).contains(t)) {
        errs.push(FieldError::invalid(
            &format!("{path}.timeoutSeconds"),
            &t.to_string(),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    selector(&hook["namespaceSelector"], &format!("{path}.namespaceSelector"), errs);
    selector(&hook["objectSelector"], &format!("{path}.objectSelector"), errs);
    if mutating
        && let Some(p) = str_at(hook, "reinvocationPolicy").filter(|p| !matches!(*p, "IfNeeded" | "Never"))
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.reinvocationPolicy"),
            p,
            &["IfNeeded", "Never"],
        ));
    }
    let client = &hook["clientConfig"];
    match (str_at(client, "url"), client.get("service").filter(|s| s.is_object())) {
        (Some(u), None) => url(u, &format!("{path}.clientConfig.url"), errs),
        (None, Some(s)) => service(s, &format!("{path}.clientConfig.service"), errs),
        _ => errs.push(FieldError::required(
            &format!("{path}.clientConfig"),
            "exactly one of url or service is required",
        )),
    }
    match_conditions(hook, &format!("{path}.matchConditions"), errs);
}

/// `validateAdmissionReviewVersions`.
fn review_versions(hook: &Value, path: &str, opts: &Options, errs: &mut Errs) {
    let versions = array_at(hook, "admissionReviewVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(path, &format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if seen.contains(&v) {
            errs.push(FieldError::invalid(&format!("{path}[{i}]"), &quoted(v), "duplicate version"));
            continue;
        }
        seen.push(v);
        invalid_each(errs, &format!("{path}[{i}]"), &quoted(v), dns1035_label_errors(v));
        accepted |= REVIEW_VERSIONS.contains(&v);
    }
    if opts.require_recognized_review_version && !accepted {
        errs.push(FieldError::invalid(
            path,
            &go_slice("string", versions),
            &format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
}

/// Validates a whole configuration; `old` is the stored object on update.
pub(super) fn configuration(object: &Value, old: Option<&Value>, mutating: bool, errs: &mut Errs) {
    let opts = Options::for_write(old);
    let mut names: Vec<&str> = Vec::new();
    for (i, hook) in array_at(object, "webhooks").iter().enumerate() {
        let path = format!("webhooks[{i}]");
        webhook(hook, &path, mutating, &opts, errs);
        review_versions(hook, &format!("{path}.admissionReviewVersions"), &opts, errs);
        let name = str_at(hook, "name").unwrap_or_default();
        if opts.require_unique_names && !name.is_empty() {
            if names.contains(&name) {
                errs.push(duplicate(&format!("{path}.name"), &quoted(name)));
            } else {
                names.push(name);
            }
        }
    }
}
