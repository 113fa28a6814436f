//! Which namespaces and Deployments the controller acts on.
//!
//! A namespace is enabled by its `eviction-autoscaler.azure.com/enable` annotation when that
//! is present and valid, else by membership of `actionedNamespaces`, else by
//! `enabledByDefault`. Deployments opt out with `pdb-create: "false"` / `surge: "false"`.
//! Booleans parse like Go's `strconv.ParseBool`, so values the Go project accepted still
//! work. An invalid value is treated as unset and returned, so the caller can emit an Event.

use std::collections::BTreeMap;
use std::fmt;

use crate::keys;

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` / `0 f F FALSE false False`, nothing else
/// (no trimming, no other casings).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// An annotation whose value is not a boolean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidAnnotation {
    /// The annotation key.
    pub key: String,
    /// Its value as found.
    pub value: String,
}

impl fmt::Display for InvalidAnnotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "annotation {} has invalid value {:?} (expected \"true\" or \"false\"); ignored",
            self.key, self.value
        )
    }
}

/// A yes/no decision, plus the invalid annotation that was ignored to reach it, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enablement {
    /// The decision.
    pub enabled: bool,
    /// Set when the governing annotation was present but not a boolean (treated as unset).
    pub invalid_annotation: Option<InvalidAnnotation>,
}

/// Reads a boolean annotation: `Ok(None)` when absent, `Err` when present but invalid.
pub fn bool_annotation(
    annotations: Option<&BTreeMap<String, String>>,
    key: &str,
) -> Result<Option<bool>, InvalidAnnotation> {
    let Some(value) = annotations.and_then(|all| all.get(key)) else {
        return Ok(None);
    };
    parse_bool(value).map(Some).ok_or_else(|| InvalidAnnotation { key: key.to_owned(), value: value.clone() })
}

/// The annotation's value if valid, else what `fallback` returns, reporting an invalid value.
fn decide(
    annotations: Option<&BTreeMap<String, String>>,
    key: &str,
    fallback: impl FnOnce() -> bool,
) -> Enablement {
    match bool_annotation(annotations, key) {
        Ok(Some(enabled)) => Enablement { enabled, invalid_annotation: None },
        Ok(None) => Enablement { enabled: fallback(), invalid_annotation: None },
        Err(invalid) => Enablement { enabled: fallback(), invalid_annotation: Some(invalid) },
    }
}

/// Is the namespace `name` (with `annotations`) in scope?
pub fn namespace_scope(
    name: &str,
    annotations: Option<&BTreeMap<String, String>>,
    actioned_namespaces: &[String],
    enabled_by_default: bool,
) -> Enablement {
    decide(annotations, keys::NAMESPACE_ENABLE, || {
        enabled_by_default || actioned_namespaces.iter().any(|actioned| actioned == name)
    })
}

/// Should a default PDB be created for a Deployment with `annotations`? Only
/// `pdb-create: "false"` (or another ParseBool false) opts out.
pub fn pdb_create_enabled(annotations: Option<&BTreeMap<String, String>>) -> Enablement {
    decide(annotations, keys::PDB_CREATE, || true)
}

/// May a Deployment with `annotations` be surged? Only `surge: "false"` opts out.
pub fn surge_enabled(annotations: Option<&BTreeMap<String, String>>) -> Enablement {
    decide(annotations, keys::SURGE, || true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn invalid(key: &str, value: &str) -> Option<InvalidAnnotation> {
        Some(InvalidAnnotation { key: key.into(), value: value.into() })
    }

    #[test]
    fn parse_bool_accepts_exactly_go_spellings() {
        let cases = [
            ("1", Some(true)),
            ("t", Some(true)),
            ("T", Some(true)),
            ("TRUE", Some(true)),
            ("true", Some(true)),
            ("True", Some(true)),
            ("0", Some(false)),
            ("f", Some(false)),
            ("F", Some(false)),
            ("FALSE", Some(false)),
            ("false", Some(false)),
            ("False", Some(false)),
            ("tRUE", None),
            ("yes", None),
            ("no", None),
            ("", None),
            (" true", None),
            ("true ", None),
            ("2", None),
            ("on", None),
        ];
        for (value, want) in cases {
            assert_eq!(parse_bool(value), want, "{value:?}");
        }
    }

    #[test]
    fn namespace_enablement() {
        let actioned = vec!["kube-system".to_owned(), "team-a".to_owned()];
        let key = keys::NAMESPACE_ENABLE;
        let cases = [
            ("listed, no annotation", "team-a", vec![], false, true, None),
            ("unlisted, default off", "team-b", vec![], false, false, None),
            ("unlisted, default on", "team-b", vec![], true, true, None),
            ("listed, default on", "kube-system", vec![], true, true, None),
            ("annotation true beats list and default", "team-b", vec![(key, "true")], false, true, None),
            ("annotation false beats list", "team-a", vec![(key, "false")], false, false, None),
            ("annotation false beats default", "team-b", vec![(key, "false")], true, false, None),
            ("annotation 1", "team-b", vec![(key, "1")], false, true, None),
            ("annotation F", "team-a", vec![(key, "F")], true, false, None),
            (
                "invalid falls back to list, reported",
                "team-a",
                vec![(key, "yes")],
                false,
                true,
                invalid(key, "yes"),
            ),
            (
                "invalid falls back to default, reported",
                "team-b",
                vec![(key, "nope")],
                false,
                false,
                invalid(key, "nope"),
            ),
            ("empty value is invalid", "team-b", vec![(key, "")], true, true, invalid(key, "")),
            ("other annotations are ignored", "team-b", vec![("enable", "true")], false, false, None),
        ];
        for (name, namespace, pairs, by_default, enabled, invalid_annotation) in cases {
            let found = annotations(&pairs);
            assert_eq!(
                namespace_scope(namespace, Some(&found), &actioned, by_default),
                Enablement { enabled, invalid_annotation },
                "{name}"
            );
        }
        assert_eq!(
            namespace_scope("team-a", None, &actioned, false),
            Enablement { enabled: true, invalid_annotation: None },
            "no annotations at all"
        );
        assert!(!namespace_scope("team-a", None, &[], false).enabled, "empty list");
    }

    #[test]
    fn deployment_opt_outs() {
        type Check = fn(Option<&BTreeMap<String, String>>) -> Enablement;
        /// name, check, annotation key, value, want enabled, want it reported as invalid.
        type Row = (&'static str, Check, &'static str, Option<&'static str>, bool, bool);
        let cases: [Row; 12] = [
            ("pdb-create absent", pdb_create_enabled, keys::PDB_CREATE, None, true, false),
            ("pdb-create false", pdb_create_enabled, keys::PDB_CREATE, Some("false"), false, false),
            ("pdb-create 0", pdb_create_enabled, keys::PDB_CREATE, Some("0"), false, false),
            ("pdb-create true", pdb_create_enabled, keys::PDB_CREATE, Some("true"), true, false),
            (
                "pdb-create invalid → unset, reported",
                pdb_create_enabled,
                keys::PDB_CREATE,
                Some("never"),
                true,
                true,
            ),
            ("pdb-create other key ignored", pdb_create_enabled, keys::SURGE, Some("false"), true, false),
            ("surge absent", surge_enabled, keys::SURGE, None, true, false),
            ("surge false", surge_enabled, keys::SURGE, Some("false"), false, false),
            ("surge FALSE", surge_enabled, keys::SURGE, Some("FALSE"), false, false),
            ("surge True", surge_enabled, keys::SURGE, Some("True"), true, false),
            ("surge invalid → unset, reported", surge_enabled, keys::SURGE, Some("off"), true, true),
            ("surge other key ignored", surge_enabled, keys::PDB_CREATE, Some("false"), true, false),
        ];
        for (name, check, key, value, enabled, reported) in cases {
            let found = annotations(&value.map(|v| vec![(key, v)]).unwrap_or_default());
            let decision = check(Some(&found));
            assert_eq!(decision.enabled, enabled, "{name}");
            let want_invalid = if reported { value.and_then(|v| invalid(key, v)) } else { None };
            assert_eq!(decision.invalid_annotation, want_invalid, "{name}");
        }
        assert!(surge_enabled(None).enabled && pdb_create_enabled(None).enabled, "no annotations");
    }

    #[test]
    fn invalid_annotation_message_names_key_and_value() {
        let message = InvalidAnnotation { key: keys::SURGE.into(), value: "maybe".into() }.to_string();
        assert!(message.contains(keys::SURGE) && message.contains("\"maybe\""), "{message}");
    }
}
