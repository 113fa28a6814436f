//! The JSONPath subset CRD `additionalPrinterColumns` use: `.a.b`, `.a[0].b`, `.a[*].b`,
//! `.a['b.c']`, `.a.b\.c`, and filters `.a[?(@.type=="Ready")].status` (`==`/`!=` against a
//! string or number, or `[?(@.x)]` for presence). Optional surrounding `{}` are accepted.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(i64),
    Wildcard,
    Filter { path: Vec<String>, comparison: Option<(bool, Value)> },
}

/// A compiled path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    segments: Vec<Segment>,
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let inner = trimmed.strip_prefix('{').and_then(|s| s.strip_suffix('}')).unwrap_or(trimmed);
        let chars: Vec<char> = inner.chars().collect();
        let mut segments = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let (key, next) = read_key(&chars, i);
                    if key.is_empty() {
                        // `..` (recursive descent) and a trailing `.` are outside the subset.
                        if next < chars.len() || i < chars.len() {
                            return Err(format!("unsupported JSONPath {text:?}"));
                        }
                    } else {
                        segments.push(Segment::Key(key));
                    }
                    i = next;
                }
                '[' => {
                    let close = find_bracket_end(&chars, i)
                        .ok_or_else(|| format!("unclosed '[' in JSONPath {text:?}"))?;
                    let body: String = chars[i + 1..close].iter().collect();
                    segments.push(parse_bracket(body.trim(), text)?);
                    i = close + 1;
                }
                _ if i == 0 => {
                    // A path without the leading dot (`status.phase`).
                    let (key, next) = read_key(&chars, i);
                    segments.push(Segment::Key(key));
                    i = next;
                }
                other => return Err(format!("unexpected {other:?} in JSONPath {text:?}")),
            }
        }
        Ok(Self { segments })
    }

    /// The first value the path selects, if any.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        let mut current = vec![root];
        for segment in &self.segments {
            let mut next = Vec::new();
            for value in current {
                match segment {
                    Segment::Key(key) => next.extend(value.get(key.as_str())),
                    Segment::Index(index) => {
                        if let Some(items) = value.as_array() {
                            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                            let at = if *index < 0 { len + index } else { *index };
                            next.extend(usize::try_from(at).ok().and_then(|at| items.get(at)));
                        }
                    }
                    Segment::Wildcard => match value {
                        Value::Array(items) => next.extend(items.iter()),
                        Value::Object(map) => next.extend(map.values()),
                        _ => {}
                    },
                    Segment::Filter { path, comparison } => {
                        if let Some(items) = value.as_array() {
                            next.extend(items.iter().filter(|item| {
                                let found = path.iter().try_fold(*item, |v, k| v.get(k.as_str()));
                                match (found, comparison) {
                                    (Some(_), None) => true,
                                    (Some(found), Some((true, want))) => loosely_equal(found, want),
                                    (Some(found), Some((false, want))) => !loosely_equal(found, want),
                                    (None, Some((false, _))) => true,
                                    (None, _) => false,
                                }
                            }));
                        }
                    }
                }
            }
            current = next;
        }
        current.into_iter().next()
    }
}

fn loosely_equal(found: &Value, want: &Value) -> bool {
    match (found, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => found == want,
    }
}

/// A key up to the next unescaped `.` or `[`; `\.` is a literal dot.
fn read_key(chars: &[char], mut i: usize) -> (String, usize) {
    let mut key = String::new();
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                key.push(chars[i + 1]);
                i += 2;
            }
            '.' | '[' => break,
            c => {
                key.push(c);
                i += 1;
            }
        }
    }
    (key, i)
}

/// The `]` closing the `[` at `open`, skipping quoted strings and nested brackets.
fn find_bracket_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_bracket(body: &str, text: &str) -> Result<Segment, String> {
    if body == "*" {
        return Ok(Segment::Wildcard);
    }
    if let Some(key) = unquote(body) {
        return Ok(Segment::Key(key));
    }
    if let Ok(index) = body.parse::<i64>() {
        return Ok(Segment::Index(index));
    }
    let filter = body
        .strip_prefix("?(")
        .and_then(|s| s.strip_suffix(')'))
        .map(str::trim)
        .ok_or_else(|| format!("unsupported [{body}] in JSONPath {text:?}"))?;
    let (left, comparison) = if let Some((left, right)) = filter.split_once("==") {
        (left, Some((true, literal(right.trim(), text)?)))
    } else if let Some((left, right)) = filter.split_once("!=") {
        (left, Some((false, literal(right.trim(), text)?)))
    } else {
        (filter, None)
    };
    let path = left
        .trim()
        .strip_prefix('@')
        .ok_or_else(|| format!("filter must start with @ in JSONPath {text:?}"))?;
    let path = path.split('.').filter(|k| !k.is_empty()).map(str::to_string).collect();
    Ok(Segment::Filter { path, comparison })
}

fn unquote(s: &str) -> Option<String> {
    let inner = s
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|s| s.strip_suffix('"')))?;
    Some(inner.to_string())
}

fn literal(s: &str, text: &str) -> Result<Value, String> {
    if let Some(string) = unquote(s) {
        return Ok(Value::String(string));
    }
    match s {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    s.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| format!("unsupported literal {s:?} in JSONPath {text:?}"))
}
