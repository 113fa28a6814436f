//! How two answers are made comparable: what differs between any two servers or runs
//! (identities, versions, times, generated name suffixes) is normalised away, and what is left
//! is compared field by field.

use std::collections::BTreeSet;

use serde_json::Value;

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && s.ends_with('Z')
        && b[..4].iter().all(u8::is_ascii_digit)
}

/// Name suffixes the apiserver generates (`generateName`): five of these characters.
fn is_generated_suffix(s: &str) -> bool {
    s.len() == 5 && s.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// A `pod-template-hash`: 6 to 10 characters of the same alphabet, a digit among them.
/// kube-sim hashes the template its own way (upstream hashes a dump of the Go struct), so the
/// value is compared only as a hash, everywhere it appears (labels, ReplicaSet and pod names).
fn is_template_hash(s: &str) -> bool {
    (6..=10).contains(&s.len())
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// `web-7d9f8c6b5d-x2k4p` → `web-<hash>-*`; a `generateName` (`web-7d9f8c6b5d-`) keeps its dash.
fn normalise_name(name: &str) -> String {
    if let Some(prefix) = name.strip_suffix('-').filter(|p| !p.is_empty()) {
        return format!("{}-", normalise_name(prefix));
    }
    // An Event's name: its object's name and the time in hex nanoseconds (client-go's recorder).
    if let Some((object, time)) = name.rsplit_once('.')
        && time.len() == 16
        && time.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return format!("{}.<time>", normalise_name(object));
    }
    let (stem, generated) = match name.rsplit_once('-') {
        Some((stem, suffix)) if is_generated_suffix(suffix) => (stem, true),
        _ => (name, false),
    };
    let stem = match stem.rsplit_once('-') {
        Some((base, hash)) if is_template_hash(hash) => format!("{base}-<hash>"),
        _ if is_template_hash(stem) => "<hash>".to_owned(),
        _ => stem.to_owned(),
    };
    if generated { format!("{stem}-*") } else { stem }
}

/// Drops what differs between any two servers or runs: uids, resourceVersions, managedFields,
/// times (a Table's Age cells among them), continue tokens; generated name suffixes become `*`.
pub fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            normalise_table_ages(map);
            for key in ["uid", "resourceVersion", "managedFields", "selfLink", "continue"] {
                map.remove(key);
            }
            for key in ["name", "generateName", "pod-template-hash"] {
                if let Some(Value::String(name)) = map.get_mut(key) {
                    *name = normalise_name(name);
                }
            }
            for v in map.values_mut() {
                normalise(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        Value::String(s) if is_timestamp(s) => *s = "<time>".into(),
        // Each server has its own CA (kube-root-ca.crt).
        Value::String(s) if s.starts_with("-----BEGIN CERTIFICATE-----") => *s = "<certificate>".into(),
        Value::String(s) => {
            *s = normalise_message(s);
            // Quoted names in messages (`ReplicaSet "web-7d9f8c6b5d" has successfully progressed.`).
            if s.contains('"') {
                *s = s.split('"').map(normalise_name).collect::<Vec<_>>().join("\"");
            }
        }
        _ => {}
    }
}

/// A server-side Table's Age column says how long ago each object was made, as of the moment
/// each server answered: `<age>`.
fn normalise_table_ages(table: &mut serde_json::Map<String, Value>) {
    if table.get("kind").and_then(Value::as_str) != Some("Table") {
        return;
    }
    let columns = table.get("columnDefinitions").and_then(Value::as_array);
    let Some(age) = columns.and_then(|c| c.iter().position(|c| c["name"] == "Age")) else { return };
    for row in table.get_mut("rows").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(cell) = row["cells"].get_mut(age) {
            *cell = "<age>".into();
        }
    }
}

/// What messages quote of the server's state: uids become `<uid>`, the resourceVersion a
/// precondition was checked against (`in record (347)`) `<rv>`.
fn normalise_message(s: &str) -> String {
    let bytes = s.as_bytes();
    let is_uid = |at: usize| {
        bytes.len() >= at + 36
            && bytes[at..at + 36]
                .iter()
                .enumerate()
                .all(|(i, b)| if [8, 13, 18, 23].contains(&i) { *b == b'-' } else { b.is_ascii_hexdigit() })
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if is_uid(i) {
            out.push_str("<uid>");
            i += 36;
        } else if let Some(digits) = s[i..]
            .strip_prefix("in record (")
            .map(|rest| rest.bytes().take_while(u8::is_ascii_digit).count())
            .filter(|&n| n > 0 && s[i + 11 + n..].starts_with(')'))
        {
            out.push_str("in record (<rv>");
            i += 11 + digits;
        } else {
            let c = s[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// kubectl output: ages become `<age>`, generated suffixes `*`, runs of spaces one space (column
/// widths follow the values).
pub fn normalise_text(text: &str, unordered: bool) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|token| {
                    let age = token.len() > 1
                        && token.bytes().next().is_some_and(|b| b.is_ascii_digit())
                        && token.bytes().all(|b| b.is_ascii_digit() || b"smhdy".contains(&b))
                        && token.bytes().last().is_some_and(|b| b"smhdy".contains(&b));
                    if age {
                        "<age>".to_owned()
                    } else {
                        // `pods/"web-7d9f8c6b5d-x2k4p"`: names between slashes and quotes.
                        token
                            .split('/')
                            .map(|part| part.split('"').map(normalise_name).collect::<Vec<_>>().join("\""))
                            .collect::<Vec<_>>()
                            .join("/")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if unordered {
        lines.sort();
    }
    lines
}

/// Removes what `pointer` names; a `*` segment stands for every element or field.
pub fn drop_pointer(value: &mut Value, pointer: &str) {
    let Some(rest) = pointer.strip_prefix('/') else { return };
    let (head, tail) = rest.split_once('/').map_or((rest, None), |(h, t)| (h, Some(t)));
    let head = head.replace("~1", "/").replace("~0", "~");
    match (value, tail) {
        (Value::Object(map), None) => {
            map.remove(&head);
        }
        (Value::Object(map), Some(tail)) if head == "*" => {
            map.values_mut().for_each(|v| drop_pointer(v, &format!("/{tail}")));
        }
        (Value::Object(map), Some(tail)) => {
            if let Some(v) = map.get_mut(&head) {
                drop_pointer(v, &format!("/{tail}"));
            }
        }
        (Value::Array(items), Some(tail)) if head == "*" => {
            items.iter_mut().for_each(|v| drop_pointer(v, &format!("/{tail}")));
        }
        (Value::Array(items), Some(tail)) => {
            if let Some(v) = head.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                drop_pointer(v, &format!("/{tail}"));
            }
        }
        _ => {}
    }
}

/// Paths where `a` and `b` differ (`/spec/replicas: 2 ≠ 3`).
pub fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                differences(
                    &format!("{path}/{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}/{i}"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: kube-sim {a} ≠ real {b}")),
        _ => {}
    }
}

/// Replaces `from` by `to` in every string of `value` (a server's own address in what it echoes).
pub fn replace_in_strings(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_in_strings(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_in_strings(v, from, to)),
        _ => {}
    }
}
