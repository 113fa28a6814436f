//! Every name the prose gives must exist: a comment (`//` in Rust, `#` in deploy/) or a Markdown
//! file naming a file of the repository (`runtime/kube/write.rs`), an item in a file
//! (`write.rs::writer`, or in deploy/'s comments "runtime/kube/write.rs, writer"), a function
//! (`` `writer()` ``), an ARCHITECTURE.md section (`ARCHITECTURE.md §4.2`) or a Markdown
//! heading (`controller/README.md, "Layout"`) fails this test when the name is gone. So a rename
//! or a deleted file cannot leave the docs behind unseen.
//!
//! Markdown below a line `<!-- history -->` is a log (the CI ledger's past entries): it names
//! files as they were, and is not checked.

use std::path::{Path, PathBuf};

/// A name the prose gives, and where.
#[derive(Debug, PartialEq, Eq)]
enum Reference {
    /// A file, by a path suffix (`runtime/kube/write.rs`), maybe with an item defined in it.
    File { path: String, item: Option<String> },
    /// A function defined somewhere in the workspace.
    Function(String),
    /// A numbered section of ARCHITECTURE.md.
    Section(String),
    /// A heading of a Markdown file (by a path suffix).
    Heading { file: String, heading: String },
}

const FILE_EXTENSIONS: [&str; 10] =
    [".rs", ".md", ".sh", ".yaml", ".toml", ".json", ".txt", ".py", ".go", ".tpl"];

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_/.-".contains(c)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier at the start of `text`, if any.
fn ident(text: &str) -> Option<&str> {
    let end = text.find(|c| !is_ident_char(c)).unwrap_or(text.len());
    (end > 0 && !text.starts_with(|c: char| c.is_ascii_digit())).then(|| &text[..end])
}

/// Where a reference is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prose {
    /// A manifest's comments, which name the code behind a setting as "write.rs, writer".
    Manifest,
    /// Rust comments and Markdown, which name an item only as `write.rs::writer`.
    Text,
}

/// Names that look like files but are not ours: KEDA's API group, the files inside an OCI image
/// archive (deploy/image/).
const NOT_FILES: [&str; 3] = ["keda.sh", "index.json", "manifest.json"];

/// Every reference in `text` (one file's prose).
fn references(text: &str, prose: Prose) -> Vec<Reference> {
    let mut found = Vec::new();
    files_in(text, prose, &mut found);
    sections_in(text, &mut found);
    functions_in(text, &mut found);
    found
}

/// Paths with a known extension, with the item after `::` or a comma (a comment may break
/// the line there: the next line's `#` or `//` is skipped), and Markdown headings after a
/// `.md` name (`README.md, "Layout"`).
fn files_in(text: &str, prose: Prose, found: &mut Vec<Reference>) {
    let mut at = 0;
    while at < text.len() {
        let Some((offset, ext)) = FILE_EXTENSIONS
            .iter()
            .filter_map(|ext| text[at..].find(ext).map(|i| (i, *ext)))
            .min_by_key(|(i, ext)| (*i, std::cmp::Reverse(ext.len())))
        else {
            break;
        };
        let end = at + offset + ext.len();
        let start = text[..at + offset].rfind(|c| !is_path_char(c)).map_or(0, |i| i + 1);
        at = end;
        let path = &text[start..end];
        let after = &text[end..];
        let before = &text[..start];
        // A sentence's full stop ends a path; any other path character continues the word.
        let continues = match after.strip_prefix('.') {
            Some(next) => next.starts_with(is_path_char),
            None => after.starts_with(is_path_char),
        };
        if continues
            || path.starts_with('.') && !path.starts_with("../")
            || NOT_FILES.iter().any(|n| path.ends_with(n))
            || path == ext
            || before.ends_with("://")
            || before.ends_with('*')
            || after.starts_with('*')
            || path.starts_with("target/")
            || path.starts_with('/')
        {
            continue; // a longer word, a URL, a glob, build output or an absolute path
        }
        let rest = after.trim_start_matches(['`', '\'']);
        let item = if let Some(item) = rest.strip_prefix("::") {
            ident(item).map(str::to_owned)
        } else if ext == ".rs" && prose == Prose::Manifest {
            rest.strip_prefix(',')
                .map(|f| f.trim_start_matches(|c: char| c.is_whitespace() || c == '#' || c == '/'))
                .and_then(ident)
                .map(str::to_owned)
        } else {
            None
        };
        if ext == ".md"
            && let Some(heading) = rest.strip_prefix(", \"").and_then(|h| h.split_once('"')).map(|(h, _)| h)
        {
            let heading = heading.split_whitespace().collect::<Vec<_>>().join(" ");
            found.push(Reference::Heading { file: path.to_owned(), heading });
        }
        found.push(Reference::File { path: path.to_owned(), item });
    }
}

/// `ARCHITECTURE.md §2, §4.1–4.4` (and `ARCHITECTURE §2`): every section number cited.
fn sections_in(text: &str, found: &mut Vec<Reference>) {
    let mut rest = text;
    while let Some(at) = rest.find("ARCHITECTURE") {
        rest = &rest[at + "ARCHITECTURE".len()..];
        let cited = rest.strip_prefix(".md").unwrap_or(rest);
        let mut numbers = cited.trim_start();
        while let Some(after) = numbers.strip_prefix('§') {
            let end = after.find(|c: char| !(c.is_ascii_digit() || "–-.".contains(c))).unwrap_or(after.len());
            for number in after[..end].trim_end_matches('.').split(['–', '-']) {
                let number = number.trim_start_matches('§').trim_end_matches('.');
                if !number.is_empty() {
                    found.push(Reference::Section(number.to_owned()));
                }
            }
            numbers = after[end..].trim_start_matches([',', ' ', '\n']).trim_start_matches("and ");
        }
    }
}

/// `` `name()` `` (and `` `Type::name()` ``): a function the workspace defines.
fn functions_in(text: &str, found: &mut Vec<Reference>) {
    for (i, quoted) in text.split('`').enumerate() {
        if i % 2 == 1
            && let Some(call) = quoted.strip_suffix("()")
        {
            let name = call.rsplit("::").next().unwrap_or(call);
            if ident(name) == Some(name) {
                found.push(Reference::Function(name.to_owned()));
            }
        }
    }
}

/// The prose of a file: comment lines of Rust, all of Markdown (up to `<!-- history -->`) and
/// of deploy/'s manifests; nothing of other files.
fn prose(relative: &str, text: &str) -> Option<(String, Prose)> {
    if relative.ends_with(".rs") {
        let comments: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("//"))
            .map(|l| l.trim_start_matches(['/', '!']))
            .collect();
        Some((comments.join("\n"), Prose::Text))
    } else if relative.ends_with(".md") {
        Some((text.split("<!-- history -->").next().unwrap_or_default().to_owned(), Prose::Text))
    } else if relative.starts_with("deploy/") && relative.ends_with(".yaml") {
        Some((text.to_owned(), Prose::Manifest))
    } else {
        None
    }
}

/// The files below `dir` (build output, VCS data and fuzzing data left out).
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

/// The repository as (relative path, text).
struct Repository {
    files: Vec<(String, String)>,
}

impl Repository {
    fn read(root: &Path) -> Self {
        let mut paths = Vec::new();
        files(root, &mut paths);
        let files = paths
            .iter()
            .map(|p| {
                let relative = p.strip_prefix(root).expect("below the root").to_string_lossy().into_owned();
                (relative, std::fs::read_to_string(p).unwrap_or_default())
            })
            .collect();
        Self { files }
    }

    fn matching<'a>(&'a self, suffix: &'a str) -> impl Iterator<Item = &'a (String, String)> {
        let suffix = suffix.trim_start_matches("./");
        self.files.iter().filter(move |(path, _)| path == suffix || path.ends_with(&format!("/{suffix}")))
    }

    /// A path of another project (`hack/lib/etcd.sh`, Kubernetes'): its first directory is
    /// none of ours.
    fn is_elsewhere(&self, path: &str) -> bool {
        let Some((first, _)) = path.trim_start_matches("./").split_once('/') else { return false };
        !self.files.iter().any(|(ours, _)| ours.split('/').rev().skip(1).any(|dir| dir == first))
    }

    /// Why `reference` is dangling, or `None` when what it names exists.
    fn dangling(&self, reference: &Reference) -> Option<String> {
        let defines = |code: &str, item: &str| {
            ["fn", "struct", "enum", "const", "type", "trait", "static", "mod", "macro_rules!"].iter().any(
                |k| {
                    code.contains(&format!("{k} {item}("))
                        || code.contains(&format!("{k} {item}<"))
                        || code.contains(&format!("{k} {item} "))
                        || code.contains(&format!("{k} {item};"))
                        || code.contains(&format!("{k} {item}:"))
                },
            )
        };
        match reference {
            Reference::File { path, .. } if path.starts_with("../") => {
                Some(format!("{path}: outside the repository"))
            }
            Reference::File { path, .. } if self.is_elsewhere(path) => None,
            Reference::File { path, item } => {
                let candidates: Vec<_> = self.matching(path).collect();
                if candidates.is_empty() {
                    return Some(format!("no file {path}"));
                }
                item.as_ref()
                    .filter(|item| !candidates.iter().any(|(_, code)| defines(code, item)))
                    .map(|item| format!("{path} defines no `{item}`"))
            }
            Reference::Function(name) => {
                let defined = self.files.iter().any(|(path, code)| {
                    path.ends_with(".rs")
                        && (code.contains(&format!("fn {name}(")) || code.contains(&format!("fn {name}<")))
                });
                (!defined).then(|| format!("no function `{name}` in the workspace"))
            }
            Reference::Section(number) => {
                let heading = |l: &str| {
                    l.trim_start_matches('#')
                        .trim_start()
                        .strip_prefix(number.as_str())
                        .is_some_and(|r| l.starts_with("##") && (r.starts_with(". ") || r.starts_with(' ')))
                };
                let found = self.matching("ARCHITECTURE.md").any(|(_, text)| text.lines().any(heading));
                (!found).then(|| format!("ARCHITECTURE.md has no section {number}"))
            }
            Reference::Heading { file, heading } => {
                let found = self.matching(file).any(|(_, text)| {
                    text.lines().any(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == heading)
                });
                (!found).then(|| format!("{file} has no heading \"{heading}\""))
            }
        }
    }
}

#[test]
fn every_file_function_and_section_the_prose_names_exists() {
    let repository = Repository::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut checked = 0;
    let mut dangling = Vec::new();
    for (path, text) in &repository.files {
        let Some((prose, kind)) = prose(path, text) else { continue };
        for reference in references(&prose, kind) {
            checked += 1;
            if let Some(why) = repository.dangling(&reference) {
                dangling.push(format!("{path}: {why}"));
            }
        }
    }
    assert!(checked > 300, "the docs name the code: {checked} references");
    assert!(dangling.is_empty(), "names that are not there:\n{}", dangling.join("\n"));
}

#[test]
fn a_dangling_file_function_or_section_is_reported() {
    let repository = Repository {
        files: vec![
            ("controller/src/runtime/write.rs".into(), "pub fn writer(\nstruct WriteGate {".into()),
            ("ARCHITECTURE.md".into(), "# Architecture\n## 2. Shape\n### 4.2 Surge\n".into()),
            ("controller/README.md".into(), "## Layout\n".into()),
        ],
    };
    let prose = "`runtime/write.rs` and `write.rs::WriteGate`, `writer()`;\n\
                 ARCHITECTURE.md §2, §4.2; controller/README.md, \"Layout\".\n\
                 Gone: runtime/gone.rs, runtime/write.rs::reader, `reader()`, ARCHITECTURE.md §4.3,\n\
                 controller/README.md, \"Wiring\", ../shared/design/TESTING.md.";
    let why: Vec<String> =
        references(prose, Prose::Text).iter().filter_map(|r| repository.dangling(r)).collect();
    assert_eq!(
        why,
        [
            "no file runtime/gone.rs",
            "runtime/write.rs defines no `reader`",
            "controller/README.md has no heading \"Wiring\"",
            "../shared/design/TESTING.md: outside the repository",
            "ARCHITECTURE.md has no section 4.3",
            "no function `reader` in the workspace",
        ]
    );
}

#[test]
fn a_reference_is_read_with_the_item_after_it_even_across_a_comment_line_break() {
    let text = "  # a read (runtime/surge/reconcile.rs,\n  # read_deployment) and (cleanup.rs). x.rsync";
    assert_eq!(
        references(text, Prose::Manifest),
        [
            Reference::File {
                path: "runtime/surge/reconcile.rs".into(),
                item: Some("read_deployment".into())
            },
            Reference::File { path: "cleanup.rs".into(), item: None },
        ]
    );
}

/// The paths of the tree drawn in the fenced block of `markdown` that starts with `root/`
/// (`├── name   what it is`, four columns per level).
fn drawn_tree(markdown: &str, root: &str) -> Vec<String> {
    let mut lines = markdown.lines().skip_while(|l| l.trim_end() != root).skip(1);
    let mut dirs: Vec<String> = vec![root.trim_end_matches('/').to_owned()];
    let mut files = Vec::new();
    for line in lines.by_ref().take_while(|l| !l.starts_with("```")) {
        let Some(start) = line.find(|c: char| c.is_ascii_alphanumeric() || c == '_') else { continue };
        let depth = line[..start].chars().count() / 4;
        let name = line[start..].split_whitespace().next().unwrap_or_default();
        dirs.truncate(depth);
        match name.strip_suffix('/') {
            Some(dir) => dirs.push(dir.to_owned()),
            None => files.push(format!("{}/{name}", dirs.join("/"))),
        }
    }
    files.sort();
    files
}

#[test]
fn the_runtime_drawn_in_the_controller_readme_is_the_runtime_on_disk() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("controller/README.md")).expect("controller/README.md");
    let drawn = drawn_tree(&readme, "runtime/");
    let base = root.join("controller/src");
    let mut on_disk = Vec::new();
    files(&base.join("runtime"), &mut on_disk);
    let mut on_disk: Vec<String> = on_disk
        .iter()
        .map(|p| p.strip_prefix(&base).expect("below src").to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(drawn, on_disk, "controller/README.md's drawing of runtime/ and the files differ");
}

#[test]
fn a_drawn_tree_is_read_as_paths() {
    let markdown =
        "```\nruntime/\n├── mod.rs      x\n├── kube/       y\n│   └── write.rs  z\n└── queue.rs\n```\n";
    assert_eq!(
        drawn_tree(markdown, "runtime/"),
        ["runtime/kube/write.rs", "runtime/mod.rs", "runtime/queue.rs"]
    );
}
