//! The runtime's files import each other without a circle (controller/README.md, "The runtime
//! in one picture"): `context.rs` holds the reconcilers' memories, the reconcilers use the
//! context, so a memory file that imported the context (or a `mod.rs` re-exporting both) would
//! close one. Read from the source: `use` paths through `crate::` and `super::`, tests excluded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["runtime", "kube", "write"]`) → file, for every file under `src/`.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).expect("under src").with_extension("");
                let mut module: Vec<String> =
                    relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
                if module.last().is_some_and(|last| last == "mod" || last == "lib") {
                    module.pop();
                }
                found.insert(module, path);
            }
        }
    }
    found
}

/// The modules `source` (the file of `module`) names through `crate::`/`super::`, in `use`
/// statements (groups and `pub use child::…` re-exports included) and in paths written inline,
/// each cut to the longest prefix that is a module. Comments and tests are not read.
fn imports(
    module: &[String],
    is_mod_rs: bool,
    source: &str,
    known: &BTreeMap<Vec<String>, PathBuf>,
) -> BTreeSet<Vec<String>> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let code: String =
        code.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
    let (mut paths, mut rest) = (Vec::new(), String::new());
    let mut lines = code.split('\n');
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
        let Some(statement) = trimmed.strip_prefix("use ") else {
            rest.push_str(line);
            rest.push('\n');
            continue;
        };
        let mut statement = statement.to_owned();
        while !statement.contains(';') {
            statement.push_str(lines.next().unwrap_or(";"));
        }
        paths.extend(use_paths(&statement, module, is_mod_rs, known));
    }
    // Inline paths (`crate::runtime::queue::MAX_BACKOFF`): no groups there.
    for prefix in ["crate::", "super::"] {
        for (at, _) in rest.match_indices(prefix) {
            if rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String =
                rest[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            paths.extend(use_paths(&path, module, false, known));
        }
    }
    let parent_of_self = |path: &Vec<String>| !path.is_empty() && path.as_slice() != module;
    paths
        .into_iter()
        .map(|mut path| {
            while !path.is_empty() && !known.contains_key(&path) {
                path.pop();
            }
            path
        })
        .filter(parent_of_self)
        .collect()
}

/// The module paths one `use` statement (or inline path) names, before cutting to modules.
fn use_paths(
    statement: &str,
    module: &[String],
    is_mod_rs: bool,
    known: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<Vec<String>> {
    let words = statement.split_whitespace().collect::<Vec<_>>().join(" ").replace(" as ", "@");
    let statement: String = words.chars().filter(|c| !c.is_whitespace() && *c != ';').collect();
    let (stem, group) = statement.split_once("::{").unwrap_or((&statement, ""));
    let mut segments: Vec<&str> = stem.split("::").collect();
    let mut base = match segments.first().copied() {
        Some("crate") => Vec::new(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        Some("self") => module.to_vec(),
        Some(child) if is_mod_rs && known.contains_key(&[module, &[child.to_owned()]].concat()) => {
            segments.insert(0, "self");
            module.to_vec()
        }
        _ => return Vec::new(), // another crate
    };
    segments.remove(0);
    while segments.first() == Some(&"super") {
        base.pop();
        segments.remove(0);
    }
    let name = |s: &str| s.split('@').next().unwrap_or_default().trim_matches(['{', '}']).to_owned();
    let full: Vec<String> = base.into_iter().chain(segments.into_iter().map(name)).collect();
    if group.is_empty() {
        return vec![full];
    }
    group
        .split(',')
        .map(|item| full.iter().cloned().chain([name(item.split("::").next().unwrap_or_default())]).collect())
        .collect()
}

#[test]
fn no_runtime_file_imports_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let known = modules(&src);
    let graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = known
        .iter()
        .filter(|(module, _)| module.first().is_some_and(|m| m == "runtime"))
        .map(|(module, file)| {
            let source = std::fs::read_to_string(file).expect("read source");
            let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
            (module.clone(), imports(module, is_mod_rs, &source, &known))
        })
        .collect();
    assert!(graph.len() > 20, "the runtime's files were found: {:?}", graph.keys());
    // Depth-first from each file: reaching it again is a circle.
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.join("::")])];
        let mut seen = BTreeSet::new();
        while let Some((module, trail)) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                let trail: Vec<String> = trail.iter().cloned().chain([next.join("::")]).collect();
                assert!(next != start, "an import circle: {}", trail.join(" → "));
                if seen.insert(next.clone()) {
                    stack.push((next.clone(), trail));
                }
            }
        }
    }
}

#[test]
fn a_memory_importing_the_context_is_a_circle() {
    let known: BTreeMap<Vec<String>, PathBuf> = [
        vec!["runtime".to_owned()],
        vec!["runtime".to_owned(), "context".to_owned()],
        vec!["runtime".to_owned(), "memory".to_owned()],
    ]
    .into_iter()
    .map(|m| (m, PathBuf::new()))
    .collect();
    let context = ["runtime".to_owned(), "context".to_owned()];
    let memory = ["runtime".to_owned(), "memory".to_owned()];
    assert_eq!(
        imports(&memory, false, "use super::context::Context;\nuse std::sync::Arc;", &known),
        BTreeSet::from([context.to_vec()])
    );
    assert_eq!(
        imports(&context, false, "use crate::runtime::{memory::Memory, Item};", &known),
        BTreeSet::from([memory.to_vec(), vec!["runtime".to_owned()]]),
        "an item of `runtime` is an import of its mod.rs"
    );
    let runtime = ["runtime".to_owned()];
    assert_eq!(
        imports(&runtime, true, "pub use memory::Memory;\n#[cfg(test)]\nuse context::X;", &known),
        BTreeSet::from([memory.to_vec()]),
        "a re-export counts, a test-only import does not"
    );
}
