//! Label key/value validation with the messages of k8s.io/apimachinery/pkg/util/validation.

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// upstream `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{fmt}')", examples.join("or "))
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, the shared shape of names and label values.
fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    lower_alnum(first) && lower_alnum(last) && bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
}

fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len_error(253));
    }
    if !s.split('.').all(is_dns1123_label) {
        errors.push(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errors
}

/// upstream `validation.IsQualifiedName`: an optional DNS-subdomain prefix, `/`, and a name.
pub(super) fn qualified_name_errors(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors
                    .extend(dns1123_subdomain_errors(prefix).into_iter().map(|e| format!("prefix part {e}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errors
}

/// upstream `validation.IsValidLabelValue`.
pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errors.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errors
}

/// A `field.Invalid` error rendered the way `field.Error.Error()` does.
pub(super) fn invalid(path: &str, value: &str, errors: &[String]) -> String {
    format!("{path}: Invalid value: {value:?}: {}", errors.join("; "))
}

pub(super) fn validate_key(key: &str) -> Result<(), String> {
    let errors = qualified_name_errors(key);
    if errors.is_empty() { Ok(()) } else { Err(invalid("key", key, &errors)) }
}
