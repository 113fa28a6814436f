//! deploy/'s comments justify each permission and setting by the code that needs it
//! ("runtime/pdb/mod.rs, perform"): each such reference must name a file of the workspace and,
//! where one follows, a function defined in it, so the justifications cannot go stale unseen.

use std::path::{Path, PathBuf};

/// A code path named in a comment: a file (a path suffix) and maybe the function after it.
#[derive(Debug)]
struct Reference {
    file: String,
    function: Option<String>,
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_/.".contains(c)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every `x/y.rs` in `text`, with the identifier after a following comma (the comment may
/// break the line there: the next line's `#` is skipped).
fn references(text: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(".rs") {
        let after = &rest[at + 3..];
        if !after.starts_with(is_path_char) {
            let start = rest[..at].rfind(|c| !is_path_char(c)).map_or(0, |i| i + 1);
            let function = after
                .strip_prefix(',')
                .map(|f| f.trim_start_matches(|c: char| c.is_whitespace() || c == '#'))
                .map(|f| f[..f.find(|c| !is_ident_char(c)).unwrap_or(f.len())].to_owned())
                .filter(|f| !f.is_empty());
            found.push(Reference { file: rest[start..at + 3].to_owned(), function });
        }
        rest = after;
    }
    found
}

/// The files below `dir` (build output and VCS data left out).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !matches!(name.to_str(), Some("target" | ".git" | "corpus" | "artifacts")) {
                files(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

#[test]
fn every_code_path_a_manifest_comment_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(root, &mut all);
    let sources: Vec<(String, String)> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let relative = p.strip_prefix(root).expect("below the root").to_string_lossy().into_owned();
            (relative, std::fs::read_to_string(p).unwrap_or_default())
        })
        .collect();
    let mut manifests = Vec::new();
    files(&root.join("deploy"), &mut manifests);
    let mut checked = 0;
    let mut stale = Vec::new();
    for manifest in &manifests {
        let Ok(text) = std::fs::read_to_string(manifest) else { continue };
        for reference in references(&text) {
            checked += 1;
            let candidates: Vec<&(String, String)> = sources
                .iter()
                .filter(|(path, _)| {
                    path == &reference.file || path.ends_with(&format!("/{}", reference.file))
                })
                .collect();
            let defined = |function: &str| {
                candidates.iter().any(|(_, code)| {
                    [format!("fn {function}("), format!("fn {function}<")].iter().any(|d| code.contains(d))
                })
            };
            let found = match &reference.function {
                _ if candidates.is_empty() => false,
                Some(function) => defined(function),
                None => true,
            };
            if !found {
                stale.push(format!(
                    "{}: {reference:?}",
                    manifest.strip_prefix(root).unwrap_or(manifest).display()
                ));
            }
        }
    }
    assert!(checked > 20, "deploy/ names the code behind its permissions: {checked} references");
    assert!(stale.is_empty(), "comments naming code that is not there:\n{}", stale.join("\n"));
}

#[test]
fn a_reference_is_read_with_the_function_after_it_even_across_a_comment_line_break() {
    let text = "  # a read (runtime/surge/reconcile.rs,\n  # read_deployment) and (cleanup.rs). x.rsync";
    let found: Vec<(String, Option<String>)> =
        references(text).into_iter().map(|r| (r.file, r.function)).collect();
    assert_eq!(
        found,
        [
            ("runtime/surge/reconcile.rs".to_owned(), Some("read_deployment".to_owned())),
            ("cleanup.rs".to_owned(), None)
        ]
    );
}
