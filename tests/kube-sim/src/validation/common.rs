//! Shared rules and message builders of k8s.io/apimachinery `util/validation` and
//! `util/validation/field`, reproduced so 422 answers read like the real apiserver's.

use serde_json::Value;

use crate::error::FieldError;

/// The field errors gathered for one object.
pub(super) type Errs = Vec<FieldError>;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `validation.RegexError`: note the double space before each `or`, as upstream prints it.
pub(super) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `validation.MaxLenError`.
pub(super) fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Go's `%q` of a string (what `field.Invalid` prints for string values).
pub(super) fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Go's `%#v` of a string slice, e.g. `[]string{"a", "b"}` (or a named element type).
pub(super) fn go_slice(type_name: &str, items: &[Value]) -> String {
    let rendered: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::String(s) => quoted(s),
            other => other.to_string(),
        })
        .collect();
    format!("[]{type_name}{{{}}}", rendered.join(", "))
}

/// How `field.Invalid` prints a JSON scalar: numbers and booleans plain, strings quoted.
pub(super) fn rendered(value: &Value) -> String {
    match value {
        Value::String(s) => quoted(s),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            lower_alnum(first) && lower_alnum(last) && bytes.iter().all(|&b| lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `validation.IsDNS1123Label`.
pub(super) fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(s) {
        if matches_dns1123_subdomain(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `validation.IsDNS1123Subdomain`.
pub(super) fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !matches_dns1123_subdomain(s) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `validation.IsDNS1035Label`.
pub(super) fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    let bytes = s.as_bytes();
    let ok = matches_dns1123_label(s) && bytes.first().is_some_and(u8::is_ascii_lowercase);
    if !ok {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

fn matches_qualified_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `validation.IsQualifiedName` (label keys, annotation keys, finalizers, ...).
pub(super) fn qualified_name_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(dns1123_subdomain_errors(prefix).into_iter().map(|e| format!("prefix part {e}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !matches_qualified_part(name) {
        errs.push(format!("name part {}", regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !matches_qualified_part(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `validation.IsConfigMapKey` (ConfigMap and Secret keys, key selectors).
pub(super) fn config_map_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    let charset = !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !charset {
        errs.push(regex_error(CONFIG_KEY_ERR, CONFIG_KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    match value {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        v if v.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

/// `validation.IsValidPortName` (IANA_SVC_NAME).
pub(super) fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `validation.InclusiveRangeError`.
pub(super) fn range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `validation.IsValidPortNum`.
pub(super) fn port_num_errors(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) { Vec::new() } else { vec![range_error(1, 65535)] }
}

/// `path.IsValidPathSegmentName` (RBAC object and roleRef names).
pub(super) fn path_segment_errors(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    ["/", "%"].iter().filter(|c| name.contains(*c)).map(|c| format!("may not contain '{c}'")).collect()
}

/// `validation.IsRelaxedEnvVarName` (RelaxedEnvironmentVariableValidation is on in 1.33).
pub(super) fn relaxed_env_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='".to_string());
    }
    errs
}

/// One `field.Invalid` per message, all on the same field and value.
pub(super) fn invalid_each(errs: &mut Errs, field: &str, value: &str, messages: Vec<String>) {
    errs.extend(messages.iter().map(|m| FieldError::invalid(field, value, m)));
}

/// `field.NotFound`.
pub(super) fn not_found(field: &str, value: &str) -> FieldError {
    FieldError {
        cause: "FieldValueNotFound",
        field: field.to_string(),
        message: format!("{field}: Not found: {}", quoted(value)),
    }
}

/// `field.Duplicate`; `value` is already rendered.
pub(super) fn duplicate(field: &str, value: &str) -> FieldError {
    FieldError {
        cause: "FieldValueDuplicate",
        field: field.to_string(),
        message: format!("{field}: Duplicate value: {value}"),
    }
}

/// `field.TooLong` with a byte limit.
pub(super) fn too_long(field: &str, max: usize) -> FieldError {
    FieldError {
        cause: "FieldValueTooLong",
        field: field.to_string(),
        message: format!("{field}: Too long: must have at most {max} bytes"),
    }
}

/// `fldPath.Key(k)`: `data[tls.crt]`.
pub(super) fn key_path(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

/// The string at `value[key]`, `None` when absent or not a string.
pub(super) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The array at `value[key]`, empty when absent.
pub(super) fn array_at<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// True when `value[key]` is present and not null.
pub(super) fn present(value: &Value, key: &str) -> bool {
    value.get(key).is_some_and(|v| !v.is_null())
}

/// `ValidateNonnegativeField` for an optional integer.
pub(super) fn non_negative(value: &Value, field: &str, errs: &mut Errs) {
    if let Some(n) = value.as_i64()
        && n < 0
    {
        errs.push(FieldError::invalid(field, &n.to_string(), "must be greater than or equal to 0"));
    }
}

/// `ValidateLabels` (metav1 validation): keys and values, both reported on the map's path.
pub(super) fn labels(map: &Value, path: &str, errs: &mut Errs) {
    for (key, value) in map.as_object().into_iter().flatten() {
        invalid_each(errs, path, &quoted(key), qualified_name_errors(key));
        let value = value.as_str().unwrap_or_default();
        invalid_each(errs, path, &quoted(value), label_value_errors(value));
    }
}

/// `ValidateLabelSelector` (metav1 validation, invalid label values refused): field errors per
/// `matchLabels` entry and `matchExpressions` requirement.
pub(super) fn label_selector(selector: &Value, path: &str, errs: &mut Errs) {
    labels(&selector["matchLabels"], &format!("{path}.matchLabels"), errs);
    for (i, requirement) in array_at(selector, "matchExpressions").iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = array_at(requirement, "values");
        match requirement["operator"].as_str().unwrap_or_default() {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                &format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                &format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                &format!("{at}.operator"),
                &quoted(other),
                "not a valid selector operator",
            )),
        }
        let key = requirement["key"].as_str().unwrap_or_default();
        invalid_each(errs, &format!("{at}.key"), &quoted(key), qualified_name_errors(key));
        for (j, value) in values.iter().enumerate() {
            let value = value.as_str().unwrap_or_default();
            invalid_each(errs, &format!("{at}.values[{j}]"), &quoted(value), label_value_errors(value));
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitive), total size ≤ 256 KiB.
pub(super) fn annotations(map: &Value, path: &str, errs: &mut Errs) {
    let Some(map) = map.as_object() else { return };
    let mut size = 0;
    for (key, value) in map {
        invalid_each(errs, path, &quoted(key), qualified_name_errors(&key.to_lowercase()));
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > 256 * 1024 {
        errs.push(too_long(path, 256 * 1024));
    }
}

/// `ValidateLocalDescendingPath`: relative, without `..` elements.
pub(super) fn local_descending_path(value: &str, field: &str, errs: &mut Errs) {
    if value.starts_with('/') {
        errs.push(FieldError::invalid(field, &quoted(value), "must be a relative path"));
    }
    if value.split('/').any(|part| part == "..") {
        errs.push(FieldError::invalid(field, &quoted(value), "must not contain '..'"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_errors_keep_the_upstream_double_space() {
        assert_eq!(
            regex_error("m", "f", &["a", "b"]),
            "m (e.g. 'a',  or 'b', regex used for validation is 'f')"
        );
    }

    #[test]
    fn name_rules_match_apimachinery() {
        assert_eq!(dns1123_label_errors("a.b"), vec!["must not contain dots".to_string()]);
        assert!(dns1123_label_errors("123-abc").is_empty());
        assert_eq!(dns1035_label_errors("123-abc").len(), 1);
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
        assert_eq!(path_segment_errors(".."), vec!["may not be '..'".to_string()]);
        assert!(path_segment_errors("system:controller:x").is_empty());
        assert_eq!(
            port_name_errors("-B--"),
            vec![
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
                "must contain at least one letter (a-z)".to_string(),
                "must not contain consecutive hyphens".to_string(),
                "must not begin or end with a hyphen".to_string(),
            ]
        );
        assert_eq!(qualified_name_errors("/x"), vec!["prefix part must be non-empty".to_string()]);
        assert_eq!(config_map_key_errors("..a"), vec!["must not start with '..'".to_string()]);
        assert!(relaxed_env_name_errors("1.my-VAR_x").is_empty());
        assert_eq!(relaxed_env_name_errors("a\tb").len(), 1);
    }
}
