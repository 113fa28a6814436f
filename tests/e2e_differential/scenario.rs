//! The scenarios of `tests/differential/*.yaml` (format: that directory's README), and the
//! differences kube-sim's README lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub scenario: String,
    /// What it shows (documentation only).
    #[serde(default)]
    #[allow(dead_code)]
    pub about: String,
    pub steps: Vec<Step>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// Unique in its scenario; its position (1, 2, ...) when unset.
    #[serde(default)]
    pub name: Option<String>,
    /// `METHOD /path?query`: one request, compared.
    #[serde(default)]
    pub request: Option<String>,
    /// kubectl's arguments: its exit code, stdout and stderr compared.
    #[serde(default)]
    pub kubectl: Option<Vec<String>>,
    /// The AdmissionReviews the review recorder received under `$WEBHOOK/<this>` since the last
    /// look: compared as the webhook received them (path, query and body).
    #[serde(default)]
    pub reviews: Option<String>,
    /// Waits until a webhook configuration calling `$WEBHOOK/<this>` is in effect: dry-run
    /// creates a marker ConfigMap until a review arrives (not compared; the configuration
    /// must match ConfigMap CREATEs in the scenario's namespace).
    #[serde(default)]
    pub webhook_ready: Option<String>,
    /// `GET /path`, repeated on each server until `until` holds (not compared).
    #[serde(default)]
    pub wait: Option<String>,
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub accept: Option<String>,
    /// Sent as this ServiceAccount of the scenario's namespace (created on first use).
    #[serde(default, rename = "as")]
    pub user: Option<String>,
    /// kubectl's standard input.
    #[serde(default)]
    pub stdin: Option<String>,
    /// The real apiserver's status code (or kubectl's exit code): a check of the scenario itself.
    #[serde(default)]
    pub expect: Option<u16>,
    /// For `wait`: JSON pointers and the values they must have; `code` is the status code and a
    /// pointer ending in `/#` an array's length.
    #[serde(default)]
    pub until: BTreeMap<String, Value>,
    /// JSON pointers dropped from both answers before comparing (what controllers race to write).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// kubectl output whose lines come in any order (parallel evictions).
    #[serde(default)]
    pub unordered: bool,
    /// Values of the answer kept per server for later steps (`$NAME`): JSON pointers into the raw
    /// body, e.g. a uid for an ownerReference or a resourceVersion for an update.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
}

/// Every scenario of `tests/differential/*.yaml`, or those whose name starts with one of the
/// comma-separated prefixes in `DIFFERENTIAL_SCENARIOS` (the fast loop while fixing kube-sim).
pub fn scenarios() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/differential")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("scenario file");
        let list: Vec<Scenario> =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let stem = file.file_stem().expect("a name").to_string_lossy().into_owned();
        all.extend(list.into_iter().map(|s| (stem.clone(), s)));
    }
    let mut names = BTreeSet::new();
    for (file, s) in &all {
        assert!(names.insert(s.scenario.clone()), "{file}: scenario {} twice", s.scenario);
        assert!(
            s.scenario.len() <= 63
                && s.scenario.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{file}: scenario {} is not a namespace name",
            s.scenario
        );
    }
    if let Ok(only) = std::env::var("DIFFERENTIAL_SCENARIOS") {
        let prefixes: Vec<&str> = only.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
        all.retain(|(_, s)| prefixes.iter().any(|p| s.scenario.starts_with(p)));
        assert!(!all.is_empty(), "DIFFERENTIAL_SCENARIOS={only} selects no scenario");
    }
    all
}

pub fn step_name(step: &Step, index: usize) -> String {
    step.name.clone().unwrap_or_else(|| (index + 1).to_string())
}

/// `$NS` → the scenario's namespace, `$NAME` → a captured value, everywhere in a string.
pub fn fill(text: &str, vars: &Vars) -> String {
    let mut text = text.replace("$NS", vars.namespace);
    // Longest names first: `$WEBHOOK` must not eat the start of `$WEBHOOK_CA`.
    let mut names: Vec<(&String, &String)> = vars.captured.iter().collect();
    names.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, value) in names {
        text = text.replace(&format!("${name}"), value);
    }
    text
}

pub fn fill_value(value: &Value, vars: &Vars) -> Value {
    serde_json::from_str(&fill(&value.to_string(), vars)).expect("still JSON")
}

/// What `$…` stands for in a step.
pub struct Vars<'a> {
    pub namespace: &'a str,
    pub captured: &'a BTreeMap<String, String>,
}

/// The differences listed in kube-sim's README: `diff:scenario/step` tokens.
pub fn listed() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kube-sim/README.md"))
        .expect("README");
    readme.split('`').filter_map(|t| t.strip_prefix("diff:")).map(str::to_owned).collect()
}
