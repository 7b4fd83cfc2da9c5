//! Architecture test: reads the source tree and fails when the layout that
//! ARCHITECTURE.md describes is broken (in the spirit of rust-analyzer's tidy
//! tests). It runs no code of the project; it parses the files with `syn` and
//! follows every path they name (`use` trees whole, multi-line groups, renames,
//! `self`/`super`, paths in code and macros, re-exports), so what rustfmt wraps
//! is read like what it leaves on one line.
//!
//! Rules:
//! - only `src/http/` knows tiny_http and tungstenite; in the agent only `web/`
//!   knows tiny_http;
//! - domain modules (everything in `src/` but `http/`, `app.rs`, `lib.rs`,
//!   `main.rs`) reach neither `http` nor `app`: threads get narrow handles, and
//!   only the HTTP layer and start-up see `App`;
//! - `metrics` is a leaf: it reaches no other module of the server;
//! - no two files of the server, the agent or `dial` import each other, through
//!   any number of others (a file-level graph without a circle), so each file
//!   can be read knowing only what it imports;
//! - every source file of the server, the agent and the shared crates starts
//!   with a `//!` module doc comment saying what it owns;
//! - no source file under `src/` or `agent/src/` is longer than 800 lines;
//! - the repository stands alone: no tracked file reaches outside it for a lab,
//!   fixtures or a specification in a folder beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

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

/// A module path inside one crate (`["http", "api", "agents"]`; the root is empty).
type ModPath = Vec<String>;

/// The module a file is (`src/http/mod.rs` → `http`), given its crate's source folder.
fn module_of(file: &Path, crate_src: &Path) -> ModPath {
    let rel = file.strip_prefix(crate_src).unwrap_or(file);
    let mut parts: ModPath = rel
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(str::to_owned))
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "mod" | "lib" | "main") {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// What one file names: every path (absolute within the crate where it could be
/// told, or as written when it starts with an outside crate), and its `pub use`
/// re-exports.
#[derive(Default, Debug)]
struct Names {
    /// Paths as `(module the path was written in, segments)`: `use` leaves, paths
    /// in code, types and macros. Segments start with `crate`, `super`, `self`, a
    /// local name or an outside crate; resolved later against the module tree.
    paths: Vec<(ModPath, Vec<String>)>,
    /// `pub use` leaves: the name they give, and the path they name.
    reexports: Vec<(ModPath, String, Vec<String>)>,
    /// Inline modules (`mod x { ... }`), not `#[cfg(test)]` ones.
    inline_modules: Vec<ModPath>,
    /// Names brought in by `use`, per module: local name → path.
    aliases: BTreeMap<(ModPath, String), Vec<String>>,
}

struct Collector<'n> {
    module: ModPath,
    names: &'n mut Names,
}

fn is_test_module(m: &syn::ItemMod) -> bool {
    m.attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// The leaves of a use tree, as (local name, path); a glob is `*`.
fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let local = prefix.last().cloned().unwrap_or_default();
                out.push((local, prefix.clone()));
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((name, path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => out.push(("*".to_owned(), prefix.clone())),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                use_leaves(item, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // Test modules may reach anywhere (`use super::*`); they are no part of
        // the map.
        if is_test_module(m) {
            return;
        }
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            self.names.inline_modules.push(self.module.clone());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        let mut prefix = Vec::new();
        if u.leading_colon.is_some() {
            // `use ::x` is always an outside crate.
            return;
        }
        use_leaves(&u.tree, &mut prefix, &mut leaves);
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        for (local, path) in leaves {
            if public && local != "*" {
                self.names
                    .reexports
                    .push((self.module.clone(), local.clone(), path.clone()));
            }
            if local != "*" {
                self.names
                    .aliases
                    .insert((self.module.clone(), local), path.clone());
            }
            self.names.paths.push((self.module.clone(), path));
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let segments = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.names.paths.push((self.module.clone(), segments));
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // The macro's own path; its tokens are not parsed (format strings etc.).
        self.visit_path(&m.path);
    }
}

/// Everything one file names, parsed whole.
fn names_in(text: &str, module: &ModPath) -> Result<Names, syn::Error> {
    let file = syn::parse_file(text)?;
    let mut names = Names::default();
    Collector {
        module: module.clone(),
        names: &mut names,
    }
    .visit_file(&file);
    Ok(names)
}

/// One crate's files, the modules they are, and what each names.
struct CrateMap {
    files: Vec<PathBuf>,
    /// Module → the file that holds it (an inline module maps to its file).
    module_file: BTreeMap<ModPath, PathBuf>,
    names: BTreeMap<PathBuf, Names>,
}

impl CrateMap {
    /// Reads a crate from its source folder (`src`, `agent/src`); `main.rs` is
    /// a crate of its own beside `lib.rs` and is left out.
    fn read(crate_src: &str) -> CrateMap {
        let src = Path::new(crate_src);
        let files: Vec<PathBuf> = rust_files(crate_src)
            .into_iter()
            .filter(|f| f != &src.join("main.rs") || !src.join("lib.rs").exists())
            .collect();
        let texts: Vec<(PathBuf, String)> = files.iter().map(|f| (f.clone(), read(f))).collect();
        CrateMap::from_texts(src, texts)
    }

    fn from_texts(src: &Path, texts: Vec<(PathBuf, String)>) -> CrateMap {
        let mut module_file = BTreeMap::new();
        let mut names = BTreeMap::new();
        let mut files = Vec::new();
        for (file, text) in texts {
            let module = module_of(&file, src);
            let found = names_in(&text, &module)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            module_file.insert(module, file.clone());
            for inline in &found.inline_modules {
                module_file.insert(inline.clone(), file.clone());
            }
            names.insert(file.clone(), found);
            files.push(file);
        }
        CrateMap {
            files,
            module_file,
            names,
        }
    }

    /// A path written in `module`, made absolute within the crate; `None` for
    /// an outside crate or a name that is no path of ours.
    fn absolute(&self, module: &ModPath, path: &[String], depth: usize) -> Option<Vec<String>> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some(path[1..].to_vec()),
            "self" => Some(module.iter().chain(&path[1..]).cloned().collect()),
            "super" => {
                let mut base = module.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            _ => {
                let mut child = module.clone();
                child.push(first.clone());
                if self.module_file.contains_key(&child) {
                    return Some(child.into_iter().chain(path[1..].iter().cloned()).collect());
                }
                // A name a `use` brought in: follow it (an alias of an outside
                // crate's item ends as `None`).
                let file = self.module_file.get(module)?;
                let alias = self
                    .names
                    .get(file)?
                    .aliases
                    .get(&(module.clone(), first.clone()))?;
                if depth > 8 || alias.first() == Some(first) {
                    return None;
                }
                let aliased = self.absolute(module, alias, depth + 1)?;
                Some(
                    aliased
                        .into_iter()
                        .chain(path[1..].iter().cloned())
                        .collect(),
                )
            }
        }
    }

    /// The file an absolute path lands in: the longest module prefix, through a
    /// `pub use` re-export of the next name where there is one.
    fn file_of(&self, path: &[String], depth: usize) -> Option<&PathBuf> {
        let mut at = path.len();
        while !self.module_file.contains_key(&path[..at]) {
            at = at.checked_sub(1)?;
        }
        let module = path[..at].to_vec();
        let file = self.module_file.get(&module)?;
        if let (Some(next), true) = (path.get(at), depth < 8) {
            let reexport = self.names.get(file).and_then(|n| {
                n.reexports
                    .iter()
                    .find(|(m, name, _)| m == &module && name == next)
            });
            if let Some((_, _, target)) = reexport {
                if let Some(abs) = self.absolute(&module, target, 0) {
                    let full: Vec<String> = abs
                        .into_iter()
                        .chain(path[at + 1..].iter().cloned())
                        .collect();
                    if let Some(f) = self.file_of(&full, depth + 1) {
                        return Some(f);
                    }
                }
            }
        }
        Some(file)
    }

    /// File → the files of this crate it names (itself and the crate root left out).
    fn graph(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let root_file = self.module_file.get(&Vec::new()).cloned();
        let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for file in &self.files {
            let edges = graph.entry(file.clone()).or_default();
            for (module, path) in &self.names[file].paths {
                let Some(abs) = self.absolute(module, path, 0) else {
                    continue;
                };
                if let Some(target) = self.file_of(&abs, 0) {
                    if target != file && Some(target) != root_file.as_ref() {
                        edges.insert(target.clone());
                    }
                }
            }
        }
        graph
    }

    /// The outside crates a file names first in a path (`tiny_http`, ...).
    fn outside_crates(&self, file: &Path) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for (module, path) in &self.names[file].paths {
            if self.absolute(module, path, 0).is_none() {
                if let Some(first) = path.first() {
                    found.insert(first.clone());
                }
            }
        }
        found
    }
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
    path.starts_with("src")
        && !is_http(path)
        && !["src/app.rs", "src/lib.rs", "src/main.rs"]
            .iter()
            .any(|p| path == Path::new(p))
}

/// The rules about what a crate's files reach, as messages that say what to do.
fn reach_violations(map: &CrateMap) -> Vec<String> {
    let mut found = Vec::new();
    let graph = map.graph();
    for file in &map.files {
        let shown = file.display();
        let outside = map.outside_crates(file);
        let sockets: Vec<&str> = ["tiny_http", "tungstenite"]
            .into_iter()
            .filter(|c| outside.contains(*c))
            .collect();
        if file.starts_with("src") && !is_http(file) && !sockets.is_empty() {
            found.push(format!(
                "{shown}: names {}\n    only src/http/ may use tiny_http or tungstenite: move the socket code there and call the domain from it",
                sockets.join(", ")
            ));
        }
        if file.starts_with("agent/src")
            && !file.starts_with("agent/src/web")
            && outside.contains("tiny_http")
        {
            found.push(format!(
                "{shown}: names tiny_http\n    only the agent's web/ serves HTTP: move the handler there"
            ));
        }
        let reaches = |prefix: &str| {
            graph[file]
                .iter()
                .any(|t| t.starts_with(prefix) || t == Path::new(&format!("{prefix}.rs")))
        };
        if is_domain(file) && (reaches("src/http") || reaches("src/app")) {
            found.push(format!(
                "{shown}: reaches the HTTP layer or App\n    a domain module must not reach into the HTTP layer or App: take the narrow handle you need as an argument (see the Handles structs)"
            ));
        }
        if file.starts_with("src/metrics") {
            for target in graph[file].iter().filter(|t| !t.starts_with("src/metrics")) {
                found.push(format!(
                    "{shown}: reaches {}\n    metrics is a leaf: hand it plain facts from the caller instead",
                    target.display()
                ));
            }
        }
    }
    for circle in circles(&graph) {
        if known(&circle) {
            continue;
        }
        found.push(format!(
            "import circle: {}\n    these files import each other: break it by handing the thread or function the narrow handle it needs, by moving what both need into a file of its own, or by a trait the lower module defines (see activity::StoredEvents, agents::session::AgentObserver)",
            circle.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    found
}

/// The rules about one file's text, as messages that say what to do.
fn text_violations(path: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let shown = path.display();
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

/// The files that import each other, through any number of others: the
/// strongly connected parts of the graph with more than one file, each sorted.
fn circles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<BTreeSet<N>> {
    let reach = |from: &N| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&N, BTreeSet<N>> = graph.keys().map(|n| (n, reach(n))).collect();
    let mut found: Vec<BTreeSet<N>> = Vec::new();
    for (node, from_node) in &reached {
        if found.iter().any(|c| c.contains(*node)) {
            continue;
        }
        let part: BTreeSet<N> = from_node
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        if part.len() > 1 {
            found.push(part);
        }
    }
    found
}

/// Circles that were there when this rule came in, each to be broken
/// and then taken off this list: a circle not listed fails, and so does a
/// listed one that is gone, so the list only ever shrinks.
const KNOWN_CIRCLES: &[&[&str]] = &[];

fn known(circle: &BTreeSet<PathBuf>) -> bool {
    KNOWN_CIRCLES
        .iter()
        .any(|k| k.len() == circle.len() && k.iter().all(|f| circle.contains(Path::new(f))))
}

fn report(found: Vec<String>) {
    assert!(
        found.is_empty(),
        "{} architecture rule(s) broken (see ARCHITECTURE.md):\n\n{}\n",
        found.len(),
        found.join("\n\n")
    );
}

/// Tracked files that name a folder beside the repository: a clone with nothing
/// beside it must build, test and demo (the lab is `scripts/lab`, the fixtures
/// live under the tests, the protocol is `doc/protocol.md`).
fn outside_references(files: &[(String, Vec<u8>)]) -> Vec<String> {
    // Spelt in two halves, so that this file does not name it.
    let outside = concat!("..", "/shared").as_bytes();
    files
        .iter()
        .filter(|(_, bytes)| bytes.windows(outside.len()).any(|w| w == outside))
        .map(|(path, _)| format!("{path} names a folder outside the repository"))
        .collect()
}

#[test]
fn the_repository_stands_alone() {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git lists the tracked files");
    assert!(listed.status.success(), "git ls-files failed");
    let files: Vec<(String, Vec<u8>)> = listed
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter_map(|p| std::fs::read(root().join(&p)).ok().map(|b| (p, b)))
        .collect();
    assert!(files.len() > 100, "only {} tracked files read", files.len());
    report(outside_references(&files));
    let planted = vec![(
        "doc/x.md".to_owned(),
        concat!("see ..", "/shared/spec").as_bytes().to_vec(),
    )];
    assert_eq!(outside_references(&planted).len(), 1);
}

#[test]
fn each_binary_keeps_its_layers_and_imports_without_a_circle() {
    let mut found = Vec::new();
    let mut all_circles = Vec::new();
    for crate_src in [
        "src",
        "agent/src",
        "dial/src",
        "protocol/src",
        "fs/src",
        "load/src",
        "test-support/src",
    ] {
        let map = CrateMap::read(crate_src);
        found.extend(reach_violations(&map));
        all_circles.extend(circles(&map.graph()));
    }
    for gone in KNOWN_CIRCLES.iter().filter(|k| {
        !all_circles
            .iter()
            .any(|c| c.len() == k.len() && k.iter().all(|f| c.contains(Path::new(f))))
    }) {
        found.push(format!(
            "known circle {} is broken: take it off KNOWN_CIRCLES",
            gone.join(", ")
        ));
    }
    report(found);
}

#[test]
fn every_file_says_what_it_owns_and_stays_short() {
    let mut found = Vec::new();
    for dir in [
        "src",
        "agent/src",
        "protocol/src",
        "fs/src",
        "dial/src",
        "load/src",
    ] {
        for path in rust_files(dir) {
            found.extend(text_violations(&path, &read(&path)));
        }
    }
    report(found);
}

/// A crate made of the given files, for the self-test.
fn crate_of(files: &[(&str, &str)]) -> CrateMap {
    CrateMap::from_texts(
        Path::new("src"),
        files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), format!("//! A module.\n{t}\n")))
            .collect(),
    )
}

/// The checks themselves catch what they are for; otherwise a clean tree would
/// prove nothing.
#[test]
fn the_checks_catch_what_they_are_for() {
    let base: [(&str, &str); 5] = [
        (
            "src/lib.rs",
            "pub mod app; pub mod clusters; pub mod http; pub mod metrics; pub mod clock;",
        ),
        ("src/app.rs", "use crate::http::App;"),
        ("src/http/mod.rs", "pub mod state; pub use state::App;"),
        ("src/http/state.rs", "pub struct App;"),
        ("src/clock.rs", "pub fn now() {}"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut files: Vec<(&str, &str)> = base.to_vec();
        files.extend_from_slice(extra);
        reach_violations(&crate_of(&files))
    };
    assert!(with(&[("src/clusters/mod.rs", "use crate::clock;")]).is_empty());
    // What rustfmt makes of a long import, in a domain module.
    let wrapped = with(&[("src/clusters/mod.rs", "use crate::{\n    http::App,\n};")]);
    assert_eq!(wrapped.len(), 1, "{wrapped:?}");
    assert!(wrapped[0].contains("HTTP layer or App"));
    for reach in [
        "use crate::{clock, app::run};",
        "use crate as root;\nfn f() { root::http::state::App; }",
        "fn f() -> crate::http::App { todo!() }",
        "use super::http;",
    ] {
        let found = with(&[("src/clusters/mod.rs", reach)]);
        assert_eq!(found.len(), 1, "{reach}: {found:?}");
    }
    // Macros, comments and strings are no imports.
    assert!(with(&[(
        "src/clusters/mod.rs",
        "// crate::http\nfn f() { crate::clock::now(); log::info!(\"crate::http\"); }"
    )])
    .is_empty());
    let sockets = with(&[(
        "src/clusters/mod.rs",
        "use tungstenite::{\n    Message,\n};",
    )]);
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    assert!(with(&[("src/http/ws.rs", "use tungstenite::Message;")]).is_empty());
    let metrics = with(&[("src/metrics/mod.rs", "use crate::clock::now;")]);
    assert_eq!(metrics.len(), 1, "metrics is a leaf: {metrics:?}");

    // A circle through a re-export and a `self` import is found; the child
    // declaring its parent's items as `super::` is one too.
    let circled = with(&[
        (
            "src/clusters/mod.rs",
            "pub mod thread;\nuse self::thread::Thread;\npub struct Key;",
        ),
        (
            "src/clusters/thread.rs",
            "use super::Key;\npub struct Thread;",
        ),
    ]);
    assert_eq!(circled.len(), 1, "{circled:?}");
    assert!(circled[0].contains("import circle: src/clusters/mod.rs, src/clusters/thread.rs"));
    // `#[cfg(test)]` modules are no part of the map.
    assert!(with(&[
        (
            "src/clusters/mod.rs",
            "pub mod thread;\nuse thread::Thread;"
        ),
        (
            "src/clusters/thread.rs",
            "pub struct Thread;\n#[cfg(test)]\nmod tests { use super::super::*; }"
        ),
    ])
    .is_empty());

    let doc_less = text_violations(Path::new("src/clusters/mod.rs"), "use std::fmt;\n");
    assert_eq!(doc_less.len(), 1, "no doc");
    assert!(text_violations(
        Path::new("src/clusters/mod.rs"),
        "\n//! Doc after a blank line.\n"
    )
    .is_empty());
    let long = format!("//! A module.\n{}", "fn f() {}\n".repeat(MAX_LINES));
    assert_eq!(
        text_violations(Path::new("agent/src/web/mod.rs"), &long).len(),
        1
    );
    assert!(text_violations(Path::new("protocol/src/lib.rs"), &long).is_empty());
}
