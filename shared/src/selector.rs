//! Label-selector matching (`metav1.LabelSelectorAsSelector` then `Matches`).
//!
//! The whole selector is validated before anything is matched, as upstream converts it
//! first: an unknown operator or an `In`/`NotIn` without values is an error, never a silent
//! match or miss. Label key/value syntax is not re-checked (the API server already did).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// A selector that cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The operator is not one of In, NotIn, Exists, DoesNotExist.
    #[error(
        "matchExpressions[{index}] (key {key:?}): unknown operator {operator:?}; expected In, NotIn, Exists or DoesNotExist"
    )]
    UnknownOperator { index: usize, key: String, operator: String },
    /// `In` or `NotIn` with no values.
    #[error("matchExpressions[{index}] (key {key:?}): operator {operator} needs at least one value")]
    MissingValues { index: usize, key: String, operator: String },
    /// `Exists` or `DoesNotExist` with values.
    #[error("matchExpressions[{index}] (key {key:?}): operator {operator} must not have values")]
    UnexpectedValues { index: usize, key: String, operator: String },
}

#[derive(Clone, Copy)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

fn operator_of(index: usize, requirement: &LabelSelectorRequirement) -> Result<Operator, SelectorError> {
    let error_fields = || (index, requirement.key.clone(), requirement.operator.clone());
    let operator = match requirement.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        _ => {
            let (index, key, operator) = error_fields();
            return Err(SelectorError::UnknownOperator { index, key, operator });
        }
    };
    let has_values = requirement.values.as_ref().is_some_and(|values| !values.is_empty());
    match operator {
        Operator::In | Operator::NotIn if !has_values => {
            let (index, key, operator) = error_fields();
            Err(SelectorError::MissingValues { index, key, operator })
        }
        Operator::Exists | Operator::DoesNotExist if has_values => {
            let (index, key, operator) = error_fields();
            Err(SelectorError::UnexpectedValues { index, key, operator })
        }
        _ => Ok(operator),
    }
}

/// Checks every `matchExpressions` entry of `selector` without matching anything.
pub fn validate(selector: &LabelSelector) -> Result<(), SelectorError> {
    let requirements = selector.match_expressions.as_deref().unwrap_or_default();
    for (index, requirement) in requirements.iter().enumerate() {
        operator_of(index, requirement)?;
    }
    Ok(())
}

/// Does `selector` select an object with `labels`? Every `matchLabels` pair and every
/// expression must hold; the empty selector `{}` matches everything.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool, SelectorError> {
    validate(selector)?;
    let mut match_labels = selector.match_labels.iter().flatten();
    if !match_labels.all(|(key, value)| labels.get(key) == Some(value)) {
        return Ok(false);
    }
    let requirements = selector.match_expressions.as_deref().unwrap_or_default();
    for (index, requirement) in requirements.iter().enumerate() {
        let value = labels.get(&requirement.key);
        let listed = |v: &String| requirement.values.iter().flatten().any(|allowed| allowed == v);
        let holds = match operator_of(index, requirement)? {
            Operator::In => value.is_some_and(listed),
            // As upstream: a missing key satisfies NotIn.
            Operator::NotIn => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `selector` in the API's `labelSelector` query syntax (`app=web,tier in (a,b),!canary`); the
/// empty selector is the empty string, which selects everything.
pub fn query(selector: &LabelSelector) -> Result<String, SelectorError> {
    let mut parts: Vec<String> =
        selector.match_labels.iter().flatten().map(|(k, v)| format!("{k}={v}")).collect();
    let requirements = selector.match_expressions.as_deref().unwrap_or_default();
    for (index, requirement) in requirements.iter().enumerate() {
        let key = &requirement.key;
        let values = || requirement.values.iter().flatten().cloned().collect::<Vec<_>>().join(",");
        parts.push(match operator_of(index, requirement)? {
            Operator::In => format!("{key} in ({})", values()),
            Operator::NotIn => format!("{key} notin ({})", values()),
            Operator::Exists => key.clone(),
            Operator::DoesNotExist => format!("!{key}"),
        });
    }
    Ok(parts.join(","))
}

/// Does a PDB with `pdb_selector` cover pods made from a template with `template_labels`?
/// A null selector selects nothing (policy/v1); absent labels are an empty set.
pub fn pdb_covers_template(
    pdb_selector: Option<&LabelSelector>,
    template_labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, SelectorError> {
    let Some(selector) = pdb_selector else {
        return Ok(false);
    };
    let empty = BTreeMap::new();
    matches(selector, template_labels.unwrap_or(&empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn expression(key: &str, operator: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.map(|vs| vs.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn selector(match_labels: &[(&str, &str)], expressions: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }
    }

    #[test]
    fn selector_matching() {
        let web = labels(&[("app", "web"), ("tier", "front")]);
        let cases = [
            ("empty selector matches all", LabelSelector::default(), labels(&[]), true),
            ("empty selector matches labelled", LabelSelector::default(), web.clone(), true),
            ("matchLabels equal", selector(&[("app", "web")], vec![]), web.clone(), true),
            (
                "matchLabels all required",
                selector(&[("app", "web"), ("tier", "back")], vec![]),
                web.clone(),
                false,
            ),
            ("matchLabels missing key", selector(&[("app", "web")], vec![]), labels(&[]), false),
            (
                "empty matchLabels map matches all",
                LabelSelector { match_labels: Some(BTreeMap::new()), ..Default::default() },
                web.clone(),
                true,
            ),
            (
                "In listed",
                selector(&[], vec![expression("tier", "In", Some(&["front", "mid"]))]),
                web.clone(),
                true,
            ),
            (
                "In not listed",
                selector(&[], vec![expression("tier", "In", Some(&["back"]))]),
                web.clone(),
                false,
            ),
            (
                "In missing key",
                selector(&[], vec![expression("zone", "In", Some(&["a"]))]),
                web.clone(),
                false,
            ),
            (
                "NotIn listed",
                selector(&[], vec![expression("tier", "NotIn", Some(&["front"]))]),
                web.clone(),
                false,
            ),
            (
                "NotIn not listed",
                selector(&[], vec![expression("tier", "NotIn", Some(&["back"]))]),
                web.clone(),
                true,
            ),
            (
                "NotIn missing key matches",
                selector(&[], vec![expression("zone", "NotIn", Some(&["a"]))]),
                web.clone(),
                true,
            ),
            ("Exists present", selector(&[], vec![expression("app", "Exists", None)]), web.clone(), true),
            ("Exists absent", selector(&[], vec![expression("zone", "Exists", None)]), web.clone(), false),
            (
                "Exists with empty values list",
                selector(&[], vec![expression("app", "Exists", Some(&[]))]),
                web.clone(),
                true,
            ),
            (
                "DoesNotExist absent",
                selector(&[], vec![expression("zone", "DoesNotExist", None)]),
                web.clone(),
                true,
            ),
            (
                "DoesNotExist present",
                selector(&[], vec![expression("app", "DoesNotExist", None)]),
                web.clone(),
                false,
            ),
            (
                "labels and expressions both hold",
                selector(
                    &[("app", "web")],
                    vec![
                        expression("tier", "In", Some(&["front"])),
                        expression("zone", "DoesNotExist", None),
                    ],
                ),
                web.clone(),
                true,
            ),
            (
                "one expression fails",
                selector(
                    &[("app", "web")],
                    vec![
                        expression("tier", "In", Some(&["front"])),
                        expression("app", "NotIn", Some(&["web"])),
                    ],
                ),
                web.clone(),
                false,
            ),
        ];
        for (name, selector, labels, want) in cases {
            assert_eq!(matches(&selector, &labels), Ok(want), "{name}");
        }
    }

    #[test]
    fn invalid_selectors_are_errors_not_matches() {
        let web = labels(&[("app", "web")]);
        let cases = [
            (
                "unknown operator",
                selector(&[], vec![expression("app", "Equals", Some(&["web"]))]),
                SelectorError::UnknownOperator { index: 0, key: "app".into(), operator: "Equals".into() },
            ),
            (
                "operator is case sensitive",
                selector(&[], vec![expression("app", "in", Some(&["web"]))]),
                SelectorError::UnknownOperator { index: 0, key: "app".into(), operator: "in".into() },
            ),
            (
                "In without values",
                selector(&[], vec![expression("app", "In", None)]),
                SelectorError::MissingValues { index: 0, key: "app".into(), operator: "In".into() },
            ),
            (
                "NotIn with empty values",
                selector(&[], vec![expression("app", "NotIn", Some(&[]))]),
                SelectorError::MissingValues { index: 0, key: "app".into(), operator: "NotIn".into() },
            ),
            (
                "Exists with values",
                selector(&[], vec![expression("app", "Exists", Some(&["web"]))]),
                SelectorError::UnexpectedValues { index: 0, key: "app".into(), operator: "Exists".into() },
            ),
            (
                "invalid after a failing expression still errors",
                selector(
                    &[("app", "db")],
                    vec![expression("app", "In", Some(&["db"])), expression("x", "Bogus", None)],
                ),
                SelectorError::UnknownOperator { index: 1, key: "x".into(), operator: "Bogus".into() },
            ),
        ];
        for (name, selector, want) in cases {
            assert_eq!(matches(&selector, &web).as_ref(), Err(&want), "{name}");
            assert!(want.to_string().contains("matchExpressions["), "{name}: {want}");
        }
    }

    #[test]
    fn pdb_coverage_of_a_pod_template() {
        let template = labels(&[("app", "web")]);
        let by_app = selector(&[("app", "web")], vec![]);
        let other = selector(&[("app", "db")], vec![]);
        let cases = [
            ("null selector covers nothing", None, Some(&template), Ok(false)),
            ("empty selector covers everything", Some(LabelSelector::default()), Some(&template), Ok(true)),
            ("empty selector covers a label-less template", Some(LabelSelector::default()), None, Ok(true)),
            ("matching selector", Some(by_app.clone()), Some(&template), Ok(true)),
            ("other app", Some(other), Some(&template), Ok(false)),
            ("label-less template", Some(by_app), None, Ok(false)),
            (
                "invalid selector",
                Some(selector(&[], vec![expression("app", "In", None)])),
                Some(&template),
                Err(SelectorError::MissingValues { index: 0, key: "app".into(), operator: "In".into() }),
            ),
        ];
        for (name, pdb_selector, template_labels, want) in cases {
            assert_eq!(pdb_covers_template(pdb_selector.as_ref(), template_labels), want, "{name}");
        }
    }

    /// Property, exhaustively over a small label universe: NotIn is the negation of In and
    /// DoesNotExist the negation of Exists, for every label set.
    #[test]
    fn operators_are_complementary() {
        let values = ["a", "b", "c"];
        let value_sets: [&[&str]; 4] = [&["a"], &["b"], &["a", "b"], &["c"]];
        let mut label_sets = vec![labels(&[])];
        for v in values {
            label_sets.push(labels(&[("k", v)]));
            label_sets.push(labels(&[("k", v), ("other", "x")]));
        }
        for set in &label_sets {
            for vs in value_sets {
                let one = |op: &str| matches(&selector(&[], vec![expression("k", op, Some(vs))]), set);
                assert_eq!(one("NotIn").map(|m| !m), one("In"), "{set:?} {vs:?}");
            }
            let bare = |op: &str| matches(&selector(&[], vec![expression("k", op, None)]), set);
            assert_eq!(bare("DoesNotExist").map(|m| !m), bare("Exists"), "{set:?}");
        }
    }

    #[test]
    fn query_is_the_api_syntax_and_refuses_what_matching_refuses() {
        let full = selector(
            &[("app", "web")],
            vec![
                expression("tier", "In", Some(&["a", "b"])),
                expression("env", "NotIn", Some(&["dev"])),
                expression("team", "Exists", None),
                expression("canary", "DoesNotExist", None),
            ],
        );
        assert_eq!(query(&full).unwrap(), "app=web,tier in (a,b),env notin (dev),team,!canary");
        assert_eq!(query(&LabelSelector::default()).unwrap(), "", "the empty selector selects all");
        let unknown = selector(&[], vec![expression("x", "Near", None)]);
        assert!(query(&unknown).is_err(), "never turned into another operator");
    }
}
