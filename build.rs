//! Embeds the dashboard (`static/`, minus the files other modules include
//! themselves) into the server binary: writes `$OUT_DIR/static_files.rs`, a table
//! of URL path, `include_bytes!` of the file and a content hash for its ETag.
//! Cargo reruns this whenever anything under `static/` changes.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Folders under `static/` that are not the dashboard (included elsewhere).
const NOT_SERVED: &[&str] = &["docs", "webhook-templates"];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    // Read when the script runs, not baked in when it was compiled: a target/
    // copied from another checkout must not embed that checkout's files.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("static");
    println!("cargo:rerun-if-changed=static");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let mut table = String::from("/// (URL path, content, content hash) of every embedded file.\npub static FILES: &[(&str, &[u8], &str)] = &[\n");
    for path in files {
        let rel = path.strip_prefix(&root).expect("under static/");
        let rel = rel.to_string_lossy().replace('\\', "/");
        if NOT_SERVED.iter().any(|d| rel.starts_with(&format!("{d}/"))) {
            continue;
        }
        // Rerun on changes to each file too (directory mtimes miss edits in place).
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).expect("readable static file");
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        table.push_str(&format!(
            "    ({:?}, include_bytes!({:?}), \"{:016x}\"),\n",
            format!("/{rel}"),
            path.display().to_string(),
            h.finish()
        ));
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("static_files.rs");
    std::fs::write(out, table).expect("writable OUT_DIR");
}
