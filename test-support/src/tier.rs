//! The test tiers. Plain `cargo test` runs what needs nothing but Rust: unit tests
//! and the real binaries on free loopback ports. The tests that need root and the
//! lab, a browser, Node.js, a Debian root, Prometheus or schemathesis are each
//! behind a cargo feature of their package (`test-lab`, `test-browser`,
//! `test-node`, `test-packaging`, `test-prometheus`, `test-contract`; `test-all`
//! turns on every one), marked
//! `#[cfg_attr(not(feature = "..."), ignore = "...")]` so that without it they are
//! listed as ignored, never passed. `scripts/test.sh` and CI turn on `test-all`.
//!
//! A test of a tier that was turned on calls [`require`] first: a missing
//! prerequisite fails it with a sentence saying what to install, so an opted-in
//! tier never passes by skipping.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One opt-in tier, named by what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Root (network, mount and PID namespaces) and real keepalived: `scripts/lab`.
    Lab,
    /// Headless Chromium driven over WebDriver.
    Browser,
    /// Node.js, for the OpenID Connect provider the OIDC tests run.
    Node,
    /// Root, debootstrap, qemu-user and the static toolchain: the shipped tarballs.
    Packaging,
    /// Prometheus and promtool reading the server's `/metrics`.
    Prometheus,
    /// schemathesis and openapi-spec-validator (PyPI) holding the server to its
    /// OpenAPI description; root, for the network namespace the server runs in.
    Contract,
}

/// The PyPI packages of the contract tier, pinned; scripts/install-test-deps.sh
/// installs the same into [`contract_venv`].
pub const CONTRACT_PIP_PACKAGES: &[&str] =
    &["schemathesis==4.32.5", "openapi-spec-validator==0.9.0"];

/// The Python modules the contract tier imports.
const CONTRACT_MODULES: &str = "import schemathesis, openapi_spec_validator";

/// Where scripts/install-test-deps.sh makes the contract tier's venv:
/// `target/contract-venv` of the workspace (Debian's python3 is externally managed).
pub fn contract_venv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join("target/contract-venv")
}

/// The Python the contract tier runs schemathesis and openapi-spec-validator
/// with: `VRRP_CONTRACT_PYTHON` when set, else the venv's (when it has both
/// packages), else `python3` on `PATH` (which may have them installed by hand).
pub fn contract_python() -> PathBuf {
    if let Some(p) = std::env::var_os("VRRP_CONTRACT_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = contract_venv().join("bin/python");
    if imports(&venv) {
        return venv;
    }
    PathBuf::from("python3")
}

/// Whether `python` runs and imports the contract tier's modules.
fn imports(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", CONTRACT_MODULES])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command a tier runs and the Debian package that brings it.
struct Needs {
    root: bool,
    commands: &'static [(&'static str, &'static str)],
}

impl Tier {
    /// The cargo feature that turns the tier on.
    pub fn feature(self) -> &'static str {
        match self {
            Tier::Lab => "test-lab",
            Tier::Browser => "test-browser",
            Tier::Node => "test-node",
            Tier::Packaging => "test-packaging",
            Tier::Prometheus => "test-prometheus",
            Tier::Contract => "test-contract",
        }
    }

    fn needs(self) -> Needs {
        match self {
            Tier::Lab => Needs {
                root: true,
                commands: &[
                    ("keepalived", "keepalived"),
                    ("ip", "iproute2"),
                    ("nsenter", "util-linux"),
                    ("unshare", "util-linux"),
                    ("flock", "util-linux"),
                    ("pgrep", "procps"),
                    ("curl", "curl"),
                    ("python3", "python3"),
                ],
            },
            Tier::Browser => Needs {
                root: false,
                commands: &[
                    ("chromium", "chromium"),
                    ("chromedriver", "chromium-driver"),
                ],
            },
            Tier::Node => Needs {
                root: false,
                commands: &[("node", "nodejs"), ("npm", "npm")],
            },
            Tier::Packaging => Needs {
                root: true,
                commands: &[
                    ("debootstrap", "debootstrap"),
                    ("qemu-aarch64-static", "qemu-user-static"),
                    ("file", "file"),
                    ("readelf", "binutils"),
                    ("objdump", "binutils"),
                    ("systemd-analyze", "systemd"),
                    ("sha256sum", "coreutils"),
                ],
            },
            Tier::Prometheus => Needs {
                root: false,
                commands: &[("prometheus", "prometheus"), ("promtool", "prometheus")],
            },
            // Root and `ip`: the server runs in a network namespace of its own with
            // only loopback, so that what the fuzzer makes it dial (webhooks, the
            // heartbeat, outbound agents) never leaves the machine.
            Tier::Contract => Needs {
                root: true,
                commands: &[("ip", "iproute2"), ("python3", "python3")],
            },
        }
    }

    /// What is missing on this machine for the tier, as a sentence; `None` when
    /// everything is there.
    pub fn missing(self) -> Option<String> {
        let needs = self.needs();
        let mut packages: Vec<&str> = needs
            .commands
            .iter()
            .filter(|(command, _)| crate::which(command).is_none() && !in_sbin(command))
            .map(|(_, package)| *package)
            .collect();
        packages.dedup();
        let not_root = needs.root && !crate::is_root();
        let pip = self == Tier::Contract && !imports(&contract_python());
        describe(self, &packages, pip, not_root)
    }
}

/// The sentence for a tier that lacks `packages`, the contract tier's PyPI
/// packages (when `pip`), and root (when `not_root`).
fn describe(tier: Tier, packages: &[&str], pip: bool, not_root: bool) -> Option<String> {
    if packages.is_empty() && !pip && !not_root {
        return None;
    }
    let mut what = Vec::new();
    if !packages.is_empty() {
        what.push(format!("apt-get install -y {}", packages.join(" ")));
    }
    if pip {
        let venv = contract_venv();
        what.push(format!(
            "python3 -m venv {v} && {v}/bin/pip install {} (or set VRRP_CONTRACT_PYTHON to a python3 that imports schemathesis and openapi_spec_validator)",
            CONTRACT_PIP_PACKAGES.join(" "),
            v = venv.display()
        ));
    }
    if not_root {
        what.push("run the tests as root".to_owned());
    }
    Some(format!(
        "the {} tier (cargo feature `{}`) needs what this machine lacks: {}. \
         scripts/install-test-deps.sh installs the packages, and scripts/test.sh \
         runs it before every tier",
        format!("{tier:?}").to_lowercase(),
        tier.feature(),
        what.join(", and ")
    ))
}

/// keepalived and friends live in /usr/sbin, which an ordinary user's PATH lacks.
fn in_sbin(command: &str) -> bool {
    ["/usr/sbin", "/sbin"]
        .iter()
        .any(|d| std::path::Path::new(d).join(command).is_file())
}

/// Fails the calling test with what to install when `tier` cannot run here.
pub fn require(tier: Tier) {
    if let Some(sentence) = tier.missing() {
        panic!("{sentence}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prerequisite_is_named_with_its_package_and_the_feature() {
        assert_eq!(describe(Tier::Lab, &[], false, false), None);
        let s = describe(Tier::Lab, &["keepalived", "iproute2"], false, true).unwrap();
        assert!(
            s.starts_with("the lab tier (cargo feature `test-lab`)"),
            "{s}"
        );
        assert!(s.contains("apt-get install -y keepalived iproute2"), "{s}");
        assert!(s.contains("run the tests as root"), "{s}");
        let s = describe(Tier::Browser, &["chromium-driver"], false, false).unwrap();
        assert!(s.contains("`test-browser`") && !s.contains("root"), "{s}");
        let s = describe(Tier::Contract, &[], true, false).unwrap();
        assert!(
            s.starts_with("the contract tier (cargo feature `test-contract`)"),
            "{s}"
        );
        assert!(
            s.contains("/bin/pip install schemathesis==") && s.contains("openapi-spec-validator=="),
            "{s}"
        );
    }
}
