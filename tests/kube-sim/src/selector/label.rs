//! Label selectors: the `labelSelector` query syntax (upstream `labels.Parse`) and
//! `metav1.LabelSelector` objects (upstream `metav1.LabelSelectorAsSelector`).

use std::fmt;

use serde_json::Value;

use super::validation::{invalid, label_value_errors, validate_key};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated, as upstream's string set.
    values: Vec<String>,
}

impl Requirement {
    /// upstream `labels.NewRequirement`: validates the key, the value count for the operator,
    /// and every value.
    fn new(key: &str, operator: Operator, mut values: Vec<String>) -> Result<Self, String> {
        validate_key(key)?;
        let values_repr = || format!("{values:?}");
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(format!(
                    "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                    values_repr()
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
                return Err(format!(
                    "values: Invalid value: {}: exact-match compatibility requires one single value",
                    values_repr()
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(format!(
                    "values: Invalid value: {}: values set must be empty for exists and does not exist",
                    values_repr()
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        values_repr()
                    ));
                }
                if values.iter().any(|v| v.parse::<i64>().is_err()) {
                    return Err(format!(
                        "values[0]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                        values_repr()
                    ));
                }
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let errors = label_value_errors(value);
            if !errors.is_empty() {
                return Err(invalid(&format!("values[{i}]"), value, &errors));
            }
        }
        values.sort();
        values.dedup();
        Ok(Self { key: key.to_string(), operator, values })
    }

    fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key)).and_then(Value::as_str);
        let in_values = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(in_values),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(in_values),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan { actual > bound } else { actual < bound }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map(String::as_str).unwrap_or("");
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// A parsed label selector (string syntax or a `metav1.LabelSelector` object).
///
/// The default value is the empty selector, which matches every object. A *null*
/// `metav1.LabelSelector` (`from_api(&Value::Null)`) instead matches no object, as upstream's
/// `labels.Nothing()`; it is not empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    /// Sorted by key, as upstream's internal selector.
    requirements: Vec<Requirement>,
    matches_nothing: bool,
}

impl LabelSelector {
    /// Parses the `labelSelector` query syntax (`a=b,c!=d,e in (f,g),!h,i`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let tokens = lex(s);
        let mut parser = Parser { tokens: &tokens, position: 0 };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements, matches_nothing: false })
    }

    /// Builds a selector from a `metav1.LabelSelector` JSON object (matchLabels, matchExpressions).
    ///
    /// `null` gives a selector matching nothing; `{}` (or empty matchLabels and
    /// matchExpressions) gives one matching everything.
    pub fn from_api(selector: &Value) -> Result<Self, String> {
        let object = match selector {
            Value::Null => {
                return Ok(Self { requirements: Vec::new(), matches_nothing: true });
            }
            Value::Object(object) => object,
            other => return Err(format!("a label selector must be an object, not {other}")),
        };
        let mut requirements = Vec::new();
        match object.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, value) in labels {
                    let Some(value) = value.as_str() else {
                        return Err(format!("matchLabels.{key} must be a string, not {value}"));
                    };
                    requirements.push(Requirement::new(key, Operator::Equals, vec![value.to_string()])?);
                }
            }
            Some(other) => return Err(format!("matchLabels must be an object, not {other}")),
        }
        let expressions = match object.get("matchExpressions") {
            None | Some(Value::Null) => &Vec::new(),
            Some(Value::Array(expressions)) => expressions,
            Some(other) => return Err(format!("matchExpressions must be an array, not {other}")),
        };
        for expression in expressions {
            requirements.push(requirement_from_expression(expression)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements, matches_nothing: false })
    }

    /// True when the selector has no requirement, so it matches every object. The null
    /// selector (matches nothing) is not empty.
    pub fn is_empty(&self) -> bool {
        !self.matches_nothing && self.requirements.is_empty()
    }

    /// True when this is the null selector, which matches no object.
    pub fn matches_nothing(&self) -> bool {
        self.matches_nothing
    }

    /// Matches against an object's `metadata.labels`.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches_labels(object.pointer("/metadata/labels").and_then(Value::as_object))
    }

    /// Matches against a label map (`None` = no labels).
    pub fn matches_labels(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// The query-string form (`a=b,c in (d,e)`), requirements sorted by key as upstream's
/// `Selector.String()`; the null selector prints as upstream's `labels.Nothing()` (empty).
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

fn requirement_from_expression(expression: &Value) -> Result<Requirement, String> {
    let key = expression
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("matchExpressions entry {expression} needs a string key"))?;
    let operator = match expression.get("operator").and_then(Value::as_str) {
        Some("In") => Operator::In,
        Some("NotIn") => Operator::NotIn,
        Some("Exists") => Operator::Exists,
        Some("DoesNotExist") => Operator::DoesNotExist,
        Some(other) => return Err(format!("{other:?} is not a valid label selector operator")),
        None => return Err("\"\" is not a valid label selector operator".to_string()),
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("matchExpressions values must be strings, not {v}"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!("matchExpressions values must be an array, not {other}"));
        }
    };
    Requirement::new(key, operator, values)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Identifier,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    Error,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn literal_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// upstream `labels.Lexer`, run to the end; the last token is always `EndOfString`.
fn lex(s: &str) -> Vec<(Token, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && is_whitespace(chars[i]) {
            i += 1;
        }
        // Go's lexer treats a NUL byte as the end of the input.
        if i >= chars.len() || chars[i] == '\0' {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        }
        let start = i;
        if is_special(chars[i]) {
            // The longest run of special characters that is still a known token.
            let mut token = None;
            while i < chars.len() && is_special(chars[i]) {
                let candidate: String = chars[start..=i].iter().collect();
                match literal_token(&candidate) {
                    Some(t) => {
                        token = Some((t, candidate));
                        i += 1;
                    }
                    None => break,
                }
            }
            match token {
                Some(t) => tokens.push(t),
                None => {
                    let text: String = chars[start..=i].iter().collect();
                    tokens.push((Token::Error, format!("error expected: keyword found '{text}'")));
                    i += 1;
                }
            }
        } else {
            while i < chars.len() && chars[i] != '\0' && !is_special(chars[i]) && !is_whitespace(chars[i]) {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let token = literal_token(&text).unwrap_or(Token::Identifier);
            tokens.push((token, text));
        }
    }
}

/// Whether `in`/`notin` are keywords (after a key) or plain identifiers (values).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    tokens: &'a [(Token, String)],
    position: usize,
}

impl Parser<'_> {
    fn peek(&self, context: Context) -> (Token, String) {
        let (token, literal) =
            self.tokens.get(self.position).cloned().unwrap_or((Token::EndOfString, String::new()));
        let token = match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, t) => t,
        };
        (token, literal)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.peek(context);
        if self.position < self.tokens.len() {
            self.position += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.peek(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement =
                        self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.peek(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!("found '{literal}', expected: identifier after ','"));
                            }
                        }
                        _ => {
                            return Err(format!("found '{literal}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!("found '{literal}', expected: !, identifier, or 'end of string'"));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(&key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, operator, values)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        validate_key(&literal)?;
        let (next, _) = self.peek(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::NotEquals => Operator::NotEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            _ => {
                return Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt"));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.peek(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (token, literal) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal);
                    let (next, literal) = self.peek(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // Empty entries (`(,a)`, `(a,)`, `(a,,b)`) are the empty value.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (next, _) = self.peek(Context::Values);
                    if next == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        self.consume(Context::Values);
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.peek(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}
