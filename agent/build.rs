//! Resolves the agent's version at build time (sent in AUTH), by priority:
//! 1. `VRRP_AGENT_VERSION` in the build environment, else a `VERSION` file beside the
//!    package or at the workspace root (a release build writes one);
//! 2. the exact git tag on the current commit;
//! 3. `{branch}-{short hash}` plus `-dirty` when the work tree has changes;
//!
//! and the package version when git is not there at all.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&manifest);
    println!("cargo:rerun-if-env-changed=VRRP_AGENT_VERSION");
    for p in [
        "VERSION",
        "../VERSION",
        "src",
        "static",
        "../protocol/src",
        "../.git/HEAD",
        "../.git/index",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    let from_file = ["VERSION", "../VERSION"].iter().find_map(|f| {
        std::fs::read_to_string(dir.join(f))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    });
    let version = std::env::var("VRRP_AGENT_VERSION")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or(from_file)
        .or_else(|| git(dir, &["describe", "--tags", "--exact-match", "HEAD"]))
        .or_else(|| {
            let branch = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
            let hash = git(dir, &["rev-parse", "--short", "HEAD"])?;
            let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some();
            Some(format!(
                "{branch}-{hash}{}",
                if dirty { "-dirty" } else { "" }
            ))
        })
        .unwrap_or_else(|| std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "0.0.0".into()));
    println!("cargo:rustc-env=VRRP_AGENT_VERSION={version}");
}
