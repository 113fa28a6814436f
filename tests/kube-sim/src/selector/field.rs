//! Field selectors: upstream `fields.ParseSelector` plus the apiserver's per-resource list of
//! supported field labels.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
struct FieldRequirement {
    /// The field label as written (`spec.nodeName`).
    field: String,
    /// JSON pointer to the value in the object.
    pointer: &'static str,
    /// `!=` rather than `=`/`==`.
    negated: bool,
    value: String,
}

impl FieldRequirement {
    fn matches(&self, object: &Value) -> bool {
        // Missing fields compare as the zero value, as upstream's field sets are built from
        // typed structs: "" for strings, "false" for booleans.
        let actual = match object.pointer(self.pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) if is_boolean_field(self.pointer) => "false".to_string(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        (actual == self.value) != self.negated
    }
}

fn is_boolean_field(pointer: &str) -> bool {
    matches!(pointer, "/spec/unschedulable" | "/spec/hostNetwork")
}

/// The JSON pointer behind a supported field label of resource `plural`, or `None` when the
/// apiserver would reject the label.
fn field_pointer(plural: &str, field: &str) -> Option<&'static str> {
    let common = match field {
        "metadata.name" => Some("/metadata/name"),
        "metadata.namespace" => Some("/metadata/namespace"),
        _ => None,
    };
    if common.is_some() {
        return common;
    }
    match (plural, field) {
        ("pods", "spec.nodeName") => Some("/spec/nodeName"),
        ("pods", "spec.restartPolicy") => Some("/spec/restartPolicy"),
        ("pods", "spec.schedulerName") => Some("/spec/schedulerName"),
        ("pods", "spec.serviceAccountName") => Some("/spec/serviceAccountName"),
        ("pods", "spec.hostNetwork") => Some("/spec/hostNetwork"),
        ("pods", "status.phase") => Some("/status/phase"),
        ("pods", "status.podIP") => Some("/status/podIP"),
        ("pods", "status.nominatedNodeName") => Some("/status/nominatedNodeName"),
        ("nodes", "spec.unschedulable") => Some("/spec/unschedulable"),
        ("namespaces", "status.phase") => Some("/status/phase"),
        ("secrets", "type") => Some("/type"),
        ("replicasets" | "replicationcontrollers", "status.replicas") => Some("/status/replicas"),
        ("events", "involvedObject.kind") => Some("/involvedObject/kind"),
        ("events", "involvedObject.namespace") => Some("/involvedObject/namespace"),
        ("events", "involvedObject.name") => Some("/involvedObject/name"),
        ("events", "involvedObject.uid") => Some("/involvedObject/uid"),
        ("events", "involvedObject.apiVersion") => Some("/involvedObject/apiVersion"),
        ("events", "involvedObject.resourceVersion") => Some("/involvedObject/resourceVersion"),
        ("events", "involvedObject.fieldPath") => Some("/involvedObject/fieldPath"),
        ("events", "reason") => Some("/reason"),
        ("events", "reportingComponent") => Some("/reportingComponent"),
        ("events", "source") => Some("/source/component"),
        ("events", "type") => Some("/type"),
        _ => None,
    }
}

/// A parsed field selector.
///
/// The default value has no requirement and matches every object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector {
    /// Sorted by their text, as upstream sorts the terms.
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses the `fieldSelector` query syntax for resource `plural` (group-less name, e.g. `pods`).
    ///
    /// Errors carry upstream's messages (`field label not supported: <f>`,
    /// `invalid selector: …`).
    pub fn parse(plural: &str, s: &str) -> Result<Self, String> {
        let mut terms = split_terms(s);
        terms.sort();
        let mut requirements = Vec::new();
        for term in terms.iter().filter(|t| !t.is_empty()) {
            let Some((field, negated, raw_value)) = split_term(term) else {
                return Err(format!("invalid selector: '{s}'; can't understand '{term}'"));
            };
            let value = unescape_value(raw_value)?;
            let pointer = field_pointer(plural, field).ok_or_else(|| unsupported(plural, field))?;
            requirements.push(FieldRequirement { field: field.to_string(), pointer, negated, value });
        }
        Ok(Self { requirements })
    }

    /// True when it has no requirement.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches against an object.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| r.matches(object))
    }

    /// The value an `f=v` (or `f==v`) term requires for `field`, if any; lets callers use an
    /// index (e.g. pods by `spec.nodeName`).
    pub fn required_value(&self, field: &str) -> Option<&str> {
        self.requirements.iter().find(|r| r.field == field && !r.negated).map(|r| r.value.as_str())
    }
}

/// Splits on commas that are not escaped with a backslash.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// The first operator in the term wins; at one position `!=` and `==` are tried before `=`.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(value) = rest.strip_prefix("!=") {
            return Some((&term[..i], true, value));
        }
        if let Some(value) = rest.strip_prefix("==") {
            return Some((&term[..i], false, value));
        }
        if let Some(value) = rest.strip_prefix('=') {
            return Some((&term[..i], false, value));
        }
    }
    None
}

/// upstream `fields.UnescapeValue`: `\\`, `\,` and `\=` are the only escapes, and `,`/`=` must
/// be escaped.
fn unescape_value(s: &str) -> Result<String, String> {
    let mut value = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => value.push(c),
                _ => {
                    return Err(format!("invalid field selector: invalid escape sequence: \\{c}"));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v, i.e. as its number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            _ => value.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(value)
}

/// Upstream's error for a field label the resource does not support: the kinds with their own
/// field-label conversion say so, the others (`DefaultMetaV1FieldSelectorConversion`) name the
/// two labels every kind has.
fn unsupported(plural: &str, field: &str) -> String {
    const OWN_CONVERSION: [&str; 10] = [
        "pods",
        "nodes",
        "replicationcontrollers",
        "events",
        "namespaces",
        "secrets",
        "services",
        "jobs",
        "certificatesigningrequests",
        "resourceslices",
    ];
    if OWN_CONVERSION.contains(&plural) {
        format!("field label not supported: {field}")
    } else {
        format!("\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")
    }
}
