//! Strict decoding errors (`unknown field "spec.bogus"`, `duplicate field "data.a"`) and the
//! field paths they name, written as upstream's decoders write them: keys joined by `.`,
//! list indices as `[i]` (`spec.containers[0].bogus`).

use std::fmt;

use crate::go_fmt::quote;

/// Go's decoder keeps at most this many strict errors (`saveStrictError`).
pub(super) const MAX_ERRORS: usize = 100;

/// What a strict error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrictKind {
    /// A key the type has no field for (dropped).
    Unknown,
    /// A key given twice in one object (the last one wins).
    Duplicate,
    /// The YAML decoder's error for keys given twice (`path` holds its whole message:
    /// `yaml: unmarshal errors:\n  line 9: key "a" already set in map`).
    Yaml,
}

/// How the path is quoted: the JSON decoder uses Go's `strconv.Quote`, the unstructured
/// converter and the custom-resource pruning write it raw (`"%s"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quoting {
    /// `strconv.Quote`.
    Go,
    /// As is.
    Raw,
}

/// One strict decoding error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictError {
    /// Unknown or duplicate.
    pub kind: StrictKind,
    /// `spec.containers[0].bogus`.
    pub path: String,
    /// How [`fmt::Display`] quotes the path.
    pub quoting: Quoting,
    /// Prepended to the message (`json patch ` for a JSON patch's operations).
    pub prefix: &'static str,
}

impl StrictError {
    /// An unknown field at `path`.
    pub fn unknown(path: impl Into<String>, quoting: Quoting) -> Self {
        Self { kind: StrictKind::Unknown, path: path.into(), quoting, prefix: "" }
    }
    /// A duplicate field at `path`.
    pub fn duplicate(path: impl Into<String>) -> Self {
        Self { kind: StrictKind::Duplicate, path: path.into(), quoting: Quoting::Go, prefix: "" }
    }
    /// yaml.v2's error for a key repeated at `line` (`key` rendered as Go's `%#v`).
    pub fn yaml_duplicate(line: u64, key: &str) -> Self {
        let message = format!("{YAML_ERRORS}line {line}: key {key} already set in map");
        Self { kind: StrictKind::Yaml, path: message, quoting: Quoting::Raw, prefix: "" }
    }
    /// The warnings this error makes: one per line of a YAML error (upstream's
    /// `parseYAMLWarnings`), else the message.
    pub fn warnings(&self) -> Vec<String> {
        match self.path.strip_prefix(YAML_ERRORS).filter(|_| self.kind == StrictKind::Yaml) {
            Some(lines) => lines.split('\n').map(|l| l.trim().to_string()).collect(),
            None => vec![self.to_string()],
        }
    }
}

/// yaml.v2's prefix of decoding errors.
const YAML_ERRORS: &str = "yaml: unmarshal errors:\n  ";

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            StrictKind::Unknown => "unknown field",
            StrictKind::Duplicate => "duplicate field",
            StrictKind::Yaml => return f.write_str(&self.path),
        };
        match self.quoting {
            Quoting::Go => write!(f, "{}{kind} {}", self.prefix, quote(&self.path)),
            Quoting::Raw => write!(f, "{}{kind} \"{}\"", self.prefix, self.path),
        }
    }
}

/// Errors in the order found, deduplicated and capped as Go's decoder does.
#[derive(Debug, Default)]
pub(super) struct Errors(pub Vec<StrictError>);

impl Errors {
    pub fn push(&mut self, error: StrictError) {
        if self.0.len() < MAX_ERRORS && !self.0.contains(&error) {
            self.0.push(error);
        }
    }
}

/// The path being walked, as a string with a stack of lengths to return to.
#[derive(Debug, Default)]
pub(super) struct Path {
    text: String,
    marks: Vec<usize>,
}

impl Path {
    /// A path starting at `prefix` (`metadata`), or at the root for `""`.
    pub fn at(prefix: &str) -> Self {
        Self { text: prefix.to_string(), marks: Vec::new() }
    }
    /// Descends into `key`.
    pub fn push_key(&mut self, key: &str) {
        self.marks.push(self.text.len());
        if !self.text.is_empty() {
            self.text.push('.');
        }
        self.text.push_str(key);
    }
    /// Descends into list item `index`.
    pub fn push_index(&mut self, index: usize) {
        self.marks.push(self.text.len());
        self.text.push_str(&format!("[{index}]"));
    }
    /// Returns to the parent.
    pub fn pop(&mut self) {
        if let Some(len) = self.marks.pop() {
            self.text.truncate(len);
        }
    }
    /// The path of child `key`, without descending.
    pub fn child(&self, key: &str) -> String {
        if self.text.is_empty() { key.to_string() } else { format!("{}.{key}", self.text) }
    }
    /// How deep the walk is (guards recursion on hostile input).
    pub fn depth(&self) -> usize {
        self.marks.len()
    }
}
