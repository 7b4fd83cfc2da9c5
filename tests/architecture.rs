//! Architecture test: reads the source tree and fails when the layout that
//! ARCHITECTURE.md describes is broken (in the spirit of rust-analyzer's tidy
//! tests). It runs no code of the project; it only reads files.
//!
//! Rules:
//! - only `src/http/` knows tiny_http and tungstenite;
//! - domain modules (everything in `src/` but `http/`, `app.rs`, `lib.rs`,
//!   `main.rs`) use neither `crate::http` nor `crate::app`: threads
//!   get narrow handles, and only the HTTP layer and start-up see `App`;
//! - every source file of the server, the agent and the shared crates starts
//!   with a `//!` module doc comment saying what it owns;
//! - no source file under `src/` or `agent/src/` is longer than 800 lines;
//! - the server's top-level modules (its domain folders, `http`, `app`) import
//!   each other without a circle, so each can be read knowing only what it
//!   imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted, as paths relative to the workspace root.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    let mut files: Vec<PathBuf> = out
        .into_iter()
        .filter_map(|p| p.strip_prefix(root()).ok().map(Path::to_path_buf))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no Rust files found under {dir}");
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Lines of code, without comments: a doc comment may name tiny_http.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

/// The places in `text` that name one of `words` in code, as `line: text`.
fn uses_of(text: &str, words: &[&str]) -> Vec<String> {
    code_lines(text)
        .filter(|(_, l)| words.iter().any(|w| l.contains(w)))
        .map(|(n, l)| format!("{n}: {}", l.trim()))
        .collect()
}

fn has_module_doc(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with("//!"))
}

fn is_http(path: &Path) -> bool {
    path.starts_with("src/http")
}

fn is_domain(path: &Path) -> bool {
    !is_http(path)
        && !["src/app.rs", "src/lib.rs", "src/main.rs"]
            .iter()
            .any(|p| path == Path::new(p))
}

/// Every rule broken by one file, as messages that say what to do.
fn violations(path: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let shown = path.display();
    if path.starts_with("src") && !is_http(path) {
        for place in uses_of(text, &["tiny_http", "tungstenite"]) {
            found.push(format!(
                "{shown}:{place}\n    only src/http/ may use tiny_http or tungstenite: move the socket code there and call the domain from it"
            ));
        }
    }
    if path.starts_with("src") && is_domain(path) {
        for place in uses_of(text, &["crate::http", "crate::app"]) {
            found.push(format!(
                "{shown}:{place}\n    a domain module must not reach into the HTTP layer or App: take the narrow handle you need as an argument (see the Handles structs)"
            ));
        }
    }
    if !has_module_doc(text) {
        found.push(format!(
            "{shown}: no module doc comment\n    start the file with `//!` lines saying what the module owns"
        ));
    }
    let lines = text.lines().count();
    if (path.starts_with("src") || path.starts_with("agent/src")) && lines > MAX_LINES {
        found.push(format!(
            "{shown}: {lines} lines (at most {MAX_LINES})\n    split it along its seams (tests can go to a `tests.rs` beside it)"
        ));
    }
    found
}

/// The top-level module a server file belongs to (`src/clusters/thread.rs` → `clusters`).
fn top_module(path: &Path) -> Option<String> {
    let rel = path.strip_prefix("src").ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The top-level modules a file names as `crate::x` (macros such as
/// `crate::fatal!` are not imports).
fn imported_modules(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in code_lines(text) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let name = item.trim().split("::").next().unwrap_or("").trim();
                    if !name.is_empty() && name != "self" && !item.contains('!') {
                        found.insert(name.to_owned());
                    }
                }
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !rest[name.len()..].starts_with('!') {
                found.insert(name);
            }
        }
    }
    found
}

/// Circles in a module graph, each as the modules on it (a cycle found by
/// depth-first search; one per strongly connected part is enough to fail).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_owned());
            found.push(circle);
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn the_server_modules_import_each_other_without_a_circle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files("src") {
        let Some(module) = top_module(&path) else {
            continue;
        };
        let mut imports = imported_modules(&read(&path));
        imports.remove(&module);
        graph.entry(module).or_default().extend(imports);
    }
    // A name that is no module of ours (a macro exported at the crate root,
    // such as `fatal`, imported in a `use crate::{...}` group) is no edge.
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for imports in graph.values_mut() {
        imports.retain(|m| modules.contains(m));
    }
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "import circles between the server's modules:\n{}\n    break them by handing the thread or function the narrow handle it needs, or by a trait the lower module defines (see activity::StoredEvents, agents::session::AgentObserver)",
        found
            .iter()
            .map(|c| format!("    {}", c.join(" -> ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_source_tree_keeps_its_architecture() {
    let mut found = Vec::new();
    for dir in ["src", "agent/src", "protocol/src", "fs/src"] {
        for path in rust_files(dir) {
            found.extend(violations(&path, &read(&path)));
        }
    }
    assert!(
        found.is_empty(),
        "{} architecture rule(s) broken (see ARCHITECTURE.md):\n\n{}\n",
        found.len(),
        found.join("\n\n")
    );
}

/// The checks themselves catch what they are for; otherwise a clean tree would
/// prove nothing.
#[test]
fn the_checks_catch_what_they_are_for() {
    let doc = "//! A module.\n";
    let domain = Path::new("src/clusters/thread.rs");
    assert!(violations(domain, doc).is_empty());
    assert!(violations(domain, "//! Says `tiny_http` only in a comment.\n").is_empty());

    let with = |code: &str| format!("{doc}{code}\n");
    assert_eq!(
        violations(domain, &with("use tiny_http::Request;")).len(),
        1
    );
    assert_eq!(
        violations(domain, &with("use tungstenite::Message;")).len(),
        1
    );
    assert_eq!(violations(domain, &with("use crate::app::App;")).len(), 1);
    assert_eq!(violations(domain, &with("use crate::http::Resp;")).len(), 1);
    assert!(violations(
        Path::new("src/http/transport/ws.rs"),
        &with("use tungstenite::Message;")
    )
    .is_empty());
    assert!(violations(Path::new("src/http/mod.rs"), &with("use crate::app::App;")).is_empty());
    assert!(violations(Path::new("src/app.rs"), &with("use crate::http;")).is_empty());

    assert_eq!(violations(domain, "use std::fmt;\n").len(), 1, "no doc");
    assert_eq!(
        violations(domain, "\n//! Doc after a blank line.\n").len(),
        0
    );

    let long = format!("{doc}{}", "fn f() {}\n".repeat(MAX_LINES));
    assert_eq!(violations(domain, &long).len(), 1);
    assert_eq!(violations(Path::new("agent/src/web.rs"), &long).len(), 1);
    assert!(violations(Path::new("protocol/src/lib.rs"), &long).is_empty());

    let imports = imported_modules(
        "use crate::{clock, http::App};\nuse crate::agents::clients;\ncrate::fatal!(\"x\");\n// crate::app\n",
    );
    assert_eq!(
        imports.into_iter().collect::<Vec<_>>(),
        ["agents", "clock", "http"],
        "macros and comments are not imports"
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("app", vec!["http", "clusters"]),
        ("http", vec!["clusters"]),
        ("clusters", vec!["agents"]),
        ("agents", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert!(circles(&graph).is_empty());
    let mut circled = graph.clone();
    if let Some(deps) = circled.get_mut("agents") {
        deps.insert("clusters".to_owned());
    }
    assert_eq!(circles(&circled), [["agents", "clusters", "agents"]]);
}
