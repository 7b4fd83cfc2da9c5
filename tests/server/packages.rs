//! The .deb and .rpm packages that `scripts/package` makes beside the tarballs, from
//! the same static binaries, in the same run (`tarballs()`):
//!
//! - In a Debian 11 and a Debian 12 root (debootstrap minbase, cached like the
//!   tarballs' root; never written: an overlay whose upper layer is a temporary
//!   folder, mounted in a mount and PID namespace of its own for each step), both
//!   .debs install with dpkg (no systemd there: PID 1 is not systemd); the users,
//!   modes and owners are checked and each program runs `--version` as its own
//!   user; the units are installed, not enabled; an edited
//!   /etc/vrrp-agent/config.yaml survives the upgrade to the same
//!   binaries packaged as `<version>.1` (`scripts/package --version`); purge
//!   removes /etc/vrrp-* and /var/lib/vrrp-* and leaves the users.
//! - The .rpms install into an empty root (`rpm --root --initdb`, `--noscripts`: it
//!   has no shell); their file lists, config marking, owners and scriptlets are
//!   checked, and the installed units pass `systemd-analyze verify`;
//!   `systemd-sysusers --root` makes each user from the installed sysusers.d file.
//!   The scriptlets run where there is a shell and no systemd (the Debian 12
//!   overlay): %pre makes the user (useradd) and again finds it, %post its 0700
//!   folders, %preun and %postun do nothing.
//! - lintian and rpmlint report no error or warning beyond the overrides, each
//!   explained, in packaging/deb/<package>.lintian-overrides and packaging/rpm/rpmlintrc.
//!
//! Needs root, debootstrap, util-linux (unshare, setpriv in the roots), lintian,
//! rpmlint, rpm and systemd (systemd-sysusers) (scripts/install-test-deps.sh).

use crate::package::run;
use crate::static_tarballs::{bookworm_root, bullseye_root, tarballs, ARCHES};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const PROGRAMS: [&str; 2] = ["vrrp-agent", "vrrp-monitor"];

fn deb_arch(arch: &str) -> &'static str {
    if arch == "x86_64" {
        "amd64"
    } else {
        "arm64"
    }
}

fn deb(dist: &Path, program: &str, version: &str, arch: &str) -> PathBuf {
    dist.join(format!("{program}_{version}-1_{}.deb", deb_arch(arch)))
}

fn rpm(dist: &Path, program: &str, version: &str, arch: &str) -> PathBuf {
    dist.join(format!("{program}-{version}-1.{arch}.rpm"))
}

/// A tool the test runs, or a sentence naming the package that brings it.
fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{tool} is missing: apt-get install {package} (scripts/install-test-deps.sh)"
    );
}

/// The x86_64 binaries of `tarballs()` packaged again as `<version>.1` (a higher
/// version for dpkg), to upgrade to: `scripts/package --bin-dir --version`, no build.
fn upgrade() -> &'static (PathBuf, String) {
    static BUILT: OnceLock<Result<(PathBuf, String), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let t = tarballs();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-upgrade");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        run(Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .arg("-xzf")
            .arg(t.tarball("x86_64")));
        let version = format!("{}.1", t.version);
        let dist = dir.join("dist");
        let out = Command::new(format!("{ROOT}/scripts/package"))
            .arg("--bin-dir")
            .arg(dir.join(format!("vrrp-monitor-{}/bin", t.version)))
            .args(["--arch", "x86_64", "--version", &version, "--out"])
            .arg(&dist)
            .output()
            .map_err(|e| format!("scripts/package: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/package --version {version}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((dist, version))
    });
    match built {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

/// A throwaway copy of a cached Debian root: an overlay of `lower` (never written)
/// with its upper layer in a temporary folder. Each `sh` mounts it anew in a mount
/// and PID namespace of its own, with `packages` on /mnt/packages; what one step
/// changes (packages, users) is in the upper layer for the next.
struct Overlay {
    lower: PathBuf,
    dir: tempfile::TempDir,
}

impl Overlay {
    fn new(lower: PathBuf) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["upper", "work", "merged"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        Overlay { lower, dir }
    }

    /// `script` (sh -e) chrooted into the overlay; its stdout.
    fn sh(&self, packages: &Path, script: &str) -> String {
        let mut c = Command::new("unshare");
        c.args(["--mount", "--pid", "--fork", "--kill-child", "sh", "-c"])
            .arg(concat!(
                "set -e; lower=$1; dir=$2; packages=$3; script=$4; m=$dir/merged; ",
                "mount -t overlay overlay -o \"lowerdir=$lower,upperdir=$dir/upper,workdir=$dir/work\" \"$m\"; ",
                "mount -t proc proc \"$m/proc\"; ",
                "mount -t tmpfs -o mode=1777 tmpfs \"$m/tmp\"; ",
                "mkdir -p \"$m/mnt/packages\"; ",
                "mount --bind \"$packages\" \"$m/mnt/packages\"; ",
                "exec chroot \"$m\" /bin/sh -ec \"$script\"",
            ))
            .arg("sh")
            .arg(&self.lower)
            .arg(self.dir.path())
            .arg(packages)
            .arg(script)
            .stdin(Stdio::null());
        run(&mut c)
    }
}

/// `stat` of each path in the root: `path mode user:group`.
fn modes(root: &Overlay, packages: &Path, paths: &[&str]) -> String {
    root.sh(
        packages,
        &format!("stat -c '%n %a %U:%G' {}", paths.join(" ")),
    )
}

const DEB_MODES: [&str; 16] = [
    "/etc/vrrp-agent 700 vrrp-agent:vrrp-agent",
    "/etc/vrrp-agent/config.yaml 600 vrrp-agent:vrrp-agent",
    "/var/lib/vrrp-agent 700 vrrp-agent:vrrp-agent",
    "/usr/bin/vrrp-agent 755 root:root",
    "/usr/libexec/vrrp-agent/vrrp-agent-notify 755 root:root",
    "/lib/systemd/system/vrrp-agent.service 644 root:root",
    "/usr/lib/sysusers.d/vrrp-agent.conf 644 root:root",
    "/usr/share/doc/vrrp-agent/changelog.Debian.gz 644 root:root",
    "/etc/vrrp-monitor 700 vrrp-monitor:vrrp-monitor",
    "/etc/vrrp-monitor/config.yaml 600 vrrp-monitor:vrrp-monitor",
    "/var/lib/vrrp-monitor 700 vrrp-monitor:vrrp-monitor",
    "/usr/bin/vrrp-monitor 755 root:root",
    "/lib/systemd/system/vrrp-monitor.service 644 root:root",
    "/usr/lib/sysusers.d/vrrp-monitor.conf 644 root:root",
    "/usr/share/doc/vrrp-monitor/copyright 644 root:root",
    "/usr/share/doc/vrrp-monitor/install.md 644 root:root",
];

fn check_modes(root: &Overlay, packages: &Path, when: &str) {
    let paths: Vec<&str> = DEB_MODES
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let said = modes(root, packages, &paths);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines, DEB_MODES, "{when}: modes and owners");
}

fn debs_install_upgrade_and_purge(lower: PathBuf, debian: &str) {
    let t = tarballs();
    let (new_dist, new_version) = upgrade();
    let work = tempfile::tempdir().unwrap();
    let packages = work.path();
    for (dir, dist, version) in [("old", &t.dist, &t.version), ("new", new_dist, new_version)] {
        std::fs::create_dir(packages.join(dir)).unwrap();
        for p in PROGRAMS {
            let from = deb(dist, p, version, "x86_64");
            std::fs::copy(&from, packages.join(dir).join(from.file_name().unwrap())).unwrap();
        }
    }
    let root = Overlay::new(lower);
    let release = root.sh(packages, "cat /etc/debian_version");
    assert!(
        release.starts_with(debian),
        "not Debian {debian}: {release}"
    );
    // No systemd in the root: the maintainer scripts take their other paths
    // (useradd; no systemctl).
    let init = root.sh(
        packages,
        "command -v systemd-sysusers systemctl || echo none",
    );
    eprintln!(
        "Debian {debian}: systemd tools in the root: {}",
        init.trim()
    );

    let said = root.sh(
        packages,
        "dpkg -i /mnt/packages/old/vrrp-agent_*.deb /mnt/packages/old/vrrp-monitor_*.deb 2>&1",
    );
    eprintln!("Debian {debian}: {said}");
    for p in PROGRAMS {
        let user = root.sh(packages, &format!("getent passwd {p}"));
        let fields: Vec<&str> = user.trim().split(':').collect();
        assert_eq!(fields.len(), 7, "{user}");
        assert_eq!(fields[0], p);
        let uid: u32 = fields[2].parse().unwrap();
        assert!((100..1000).contains(&uid), "{p}: not a system uid: {user}");
        assert_eq!(fields[5], format!("/var/lib/{p}"), "{user}");
        assert_eq!(fields[6], "/usr/sbin/nologin", "{user}");
        let group = root.sh(packages, &format!("getent group {p}"));
        assert!(group.starts_with(&format!("{p}:x:")), "{group}");
        let conffiles = root.sh(packages, &format!("dpkg-query -W -f='${{Conffiles}}' {p}"));
        assert!(
            conffiles.contains(&format!("/etc/{p}/config.yaml ")),
            "{p}: {conffiles}"
        );
        // Its own user runs it and may write its configuration folder (the agent
        // writes serverUrl back; the server its secrets and settings).
        let as_user = root.sh(
            packages,
            &format!(
                "setpriv --reuid {p} --regid {p} --init-groups sh -ec \
                 'id -un; /usr/bin/{p} --version; touch /etc/{p}/probe; rm /etc/{p}/probe; \
                  test -r /etc/{p}/config.yaml'"
            ),
        );
        assert_eq!(
            as_user.lines().collect::<Vec<_>>(),
            [p.to_owned(), format!("{p} {}", t.version)],
            "{p} as its own user"
        );
        let unit = root.sh(packages, &format!("cat /lib/systemd/system/{p}.service"));
        assert!(
            unit.contains(&format!("\nExecStart=/usr/bin/{p}\n")),
            "{p}.service: {unit}"
        );
        assert!(
            unit.contains(&format!("Documentation=file:/usr/share/doc/{p}/")),
            "{p}.service: {unit}"
        );
        assert!(
            !unit.contains("/opt/") && !unit.contains("DynamicUser"),
            "{p}.service: {unit}"
        );
        // The unit runs the program as the user the package made.
        assert!(
            unit.contains(&format!("\nUser={p}\n")),
            "{p}.service: {unit}"
        );
        // Installed, not enabled (doc/install.md, Packages).
        let wants = root.sh(
            packages,
            &format!(
                "ls /etc/systemd/system/multi-user.target.wants/{p}.service 2>/dev/null || true"
            ),
        );
        assert!(wants.trim().is_empty(), "{p} is enabled: {wants}");
    }
    let server_unit = root.sh(packages, "cat /lib/systemd/system/vrrp-monitor.service");
    assert!(
        server_unit.contains("\nUser=vrrp-monitor\nGroup=vrrp-monitor\n"),
        "{server_unit}"
    );
    // Nobody but the user reads a config file.
    let other = root.sh(
        packages,
        "setpriv --reuid nobody --regid nogroup --clear-groups cat /etc/vrrp-agent/config.yaml \
         /etc/vrrp-monitor/config.yaml 2>&1 || echo refused",
    );
    assert!(other.contains("refused"), "{other}");
    check_modes(&root, packages, "installed");

    // Upgrade after editing the agent's config: dpkg keeps the edited conffile.
    let edit = "listenPort: 3999 # edited before the upgrade";
    let said = root.sh(
        packages,
        &format!(
            "echo '{edit}' >> /etc/vrrp-agent/config.yaml; \
             dpkg -i /mnt/packages/new/vrrp-agent_*.deb /mnt/packages/new/vrrp-monitor_*.deb 2>&1"
        ),
    );
    eprintln!("Debian {debian}: {said}");
    for p in PROGRAMS {
        let v = root.sh(packages, &format!("dpkg-query -W -f='${{Version}}' {p}"));
        assert_eq!(v, format!("{new_version}-1"), "{p} after the upgrade");
    }
    let config = root.sh(packages, "cat /etc/vrrp-agent/config.yaml");
    assert!(
        config.ends_with(&format!("{edit}\n")),
        "the edit is gone: {config}"
    );
    assert!(config.contains("# vrrp-agent configuration"), "{config}");
    check_modes(&root, packages, "upgraded");

    // Purge: the configuration and the data go, the users stay.
    let said = root.sh(packages, "dpkg --purge vrrp-agent vrrp-monitor 2>&1");
    eprintln!("Debian {debian}: {said}");
    let left = root.sh(
        packages,
        "for p in vrrp-agent vrrp-monitor; do \
           for f in /etc/$p /var/lib/$p /usr/bin/$p /lib/systemd/system/$p.service; do \
             if [ -e $f ]; then echo \"left: $f\"; fi; done; \
           if dpkg -s $p >/dev/null 2>&1; then echo \"still known: $p\"; fi; \
           getent passwd $p >/dev/null && echo \"user: $p\"; \
         done",
    );
    assert_eq!(
        left, "user: vrrp-agent\nuser: vrrp-monitor\n",
        "after purge"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn debs_install_upgrade_and_purge_in_debian_11() {
    tarballs();
    debs_install_upgrade_and_purge(bullseye_root(), "11.");
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn debs_install_upgrade_and_purge_in_debian_12() {
    tarballs();
    debs_install_upgrade_and_purge(bookworm_root(), "12.");
}

/// `rpm -qp --qf …` of one package.
fn rpm_query(path: &Path, format: &str) -> String {
    run(Command::new("rpm").args(["-qp", "--qf", format]).arg(path))
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn rpms_install_into_an_empty_root_and_make_their_users() {
    let t = tarballs();
    need("rpm", "rpm");
    need("systemd-sysusers", "systemd");
    for arch in ARCHES {
        for p in PROGRAMS {
            let path = rpm(&t.dist, p, &t.version, arch);
            assert!(path.is_file(), "{} is missing", path.display());
            assert_eq!(
                rpm_query(&path, "%{NAME} %{VERSION} %{ARCH}"),
                format!("{p} {} {arch}", t.version)
            );
            // Every file: flags (c config, n noreplace, d doc), owner, mode.
            let files = rpm_query(
                &path,
                "[%{FILENAMES} %{FILEFLAGS:fflags} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEMODES:perms}\n]",
            );
            let mut want = vec![
                format!("/etc/{p}/config.yaml cn {p}:{p} -rw-------"),
                format!("/usr/bin/{p}  root:root -rwxr-xr-x"),
                format!("/usr/lib/systemd/system/{p}.service  root:root -rw-r--r--"),
                format!("/usr/lib/sysusers.d/{p}.conf  root:root -rw-r--r--"),
            ];
            if p == "vrrp-agent" {
                want.push("/usr/libexec/vrrp-agent/vrrp-agent-notify  root:root -rwxr-xr-x".into());
            }
            for f in want {
                assert!(
                    files.lines().any(|l| l == f),
                    "{arch} {p}: no `{f}` in\n{files}"
                );
            }
            assert!(
                files.contains(&format!("/usr/share/licenses/{p}/LICENSE d ")),
                "{files}"
            );
            let config = run(Command::new("rpm").arg("-qcp").arg(&path));
            assert_eq!(config, format!("/etc/{p}/config.yaml\n"));
            let scripts = run(Command::new("rpm").args(["-qp", "--scripts"]).arg(&path));
            for (part, must) in [
                (
                    "preinstall scriptlet",
                    format!("systemd-sysusers --replace=/usr/lib/sysusers.d/{p}.conf"),
                ),
                (
                    "preinstall scriptlet",
                    format!("useradd -r -g {p} -d /var/lib/{p}"),
                ),
                (
                    "postinstall scriptlet",
                    format!("install -d -m 0700 -o {p} -g {p} /var/lib/{p}"),
                ),
                ("postinstall scriptlet", format!("chmod 0700 /etc/{p}")),
                (
                    "postinstall scriptlet",
                    format!("systemctl --no-reload preset {p}.service"),
                ),
                (
                    "preuninstall scriptlet",
                    format!("disable --now {p}.service"),
                ),
                (
                    "postuninstall scriptlet",
                    format!("try-restart {p}.service"),
                ),
            ] {
                assert!(scripts.contains(part), "{p}: no {part}: {scripts}");
                assert!(scripts.contains(&must), "{p}: no `{must}` in {scripts}");
            }
        }
    }

    // The x86_64 pair into an empty root: no shell there, so no scriptlets.
    let empty = tempfile::tempdir().unwrap();
    let root = empty.path();
    run(Command::new("rpm").arg("--root").arg(root).arg("--initdb"));
    let mut install = Command::new("rpm");
    install
        .arg("--root")
        .arg(root)
        .args(["-i", "--nodeps", "--noscripts"]);
    for p in PROGRAMS {
        install.arg(rpm(&t.dist, p, &t.version, "x86_64"));
    }
    run(&mut install);
    let installed =
        run(Command::new("rpm")
            .arg("--root")
            .arg(root)
            .args(["-qa", "--qf", "%{NAME}\n"]));
    let mut names: Vec<&str> = installed.lines().collect();
    names.sort_unstable();
    assert_eq!(names, PROGRAMS);
    for p in PROGRAMS {
        let bin = root.join("usr/bin").join(p);
        let mode = std::fs::metadata(&bin).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755, "{}", bin.display());
        let v = run(Command::new(&bin).arg("--version"));
        assert_eq!(v.trim(), format!("{p} {}", t.version));
        let config = root.join(format!("etc/{p}/config.yaml"));
        let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600, "{}", config.display());
    }
    // The installed units are valid for systemd (their ExecStart moved into the
    // root) and as hardened as the tarball's.
    let units = tempfile::tempdir().unwrap();
    for p in PROGRAMS {
        let text =
            std::fs::read_to_string(root.join(format!("usr/lib/systemd/system/{p}.service")))
                .unwrap();
        let copy = units.path().join(format!("{p}.service"));
        std::fs::write(
            &copy,
            text.replace(
                "ExecStart=/usr/bin/",
                &format!("ExecStart={}/usr/bin/", root.display()),
            ),
        )
        .unwrap();
        run(Command::new("systemd-analyze").arg("verify").arg(&copy));
        let security = run(Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&copy));
        let level = security
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or_default();
        eprintln!("packaged {level}");
    }

    // The users from the installed sysusers.d files, as systemd (and rpm 4.19+) do.
    let made = run(Command::new("systemd-sysusers").arg(format!("--root={}", root.display())));
    eprintln!("systemd-sysusers: {made}");
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    for p in PROGRAMS {
        let line = passwd
            .lines()
            .find(|l| l.starts_with(&format!("{p}:")))
            .unwrap_or_else(|| panic!("no {p} in {passwd}"));
        assert!(
            line.ends_with(&format!(":/var/lib/{p}:/usr/sbin/nologin")),
            "{line}"
        );
    }

    // The scriptlets where there is a shell and no systemd (RHEL in a container):
    // the Debian 12 root. %pre twice (its useradd fallback, then nothing to do),
    // %post as on a first install (rpm has made /etc/<package> for the config),
    // %preun and %postun as on an erase.
    let debian = Overlay::new(bookworm_root());
    let scripts = tempfile::tempdir().unwrap();
    for p in PROGRAMS {
        for (tag, file) in [
            ("PREIN", "pre"),
            ("POSTIN", "post"),
            ("PREUN", "preun"),
            ("POSTUN", "postun"),
        ] {
            let text = rpm_query(
                &rpm(&t.dist, p, &t.version, "x86_64"),
                &format!("%{{{tag}}}"),
            );
            std::fs::write(scripts.path().join(format!("{p}.{file}")), text).unwrap();
        }
    }
    let said = debian.sh(
        scripts.path(),
        "if command -v systemd-sysusers || command -v systemctl; then exit 1; fi; \
         for p in vrrp-agent vrrp-monitor; do \
           sh /mnt/packages/$p.pre; sh /mnt/packages/$p.pre; \
           mkdir /etc/$p; sh /mnt/packages/$p.post 1; \
         done; \
         getent passwd vrrp-agent vrrp-monitor; getent group vrrp-agent vrrp-monitor; \
         stat -c '%n %a %U:%G' /etc/vrrp-agent /var/lib/vrrp-agent /etc/vrrp-monitor /var/lib/vrrp-monitor; \
         for p in vrrp-agent vrrp-monitor; do sh /mnt/packages/$p.preun 0; sh /mnt/packages/$p.postun 0; done",
    );
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 8, "{said}");
    for p in PROGRAMS {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{p}:x:"))
                && l.ends_with(&format!(":/var/lib/{p}:/usr/sbin/nologin"))),
            "{said}"
        );
        for dir in [format!("/etc/{p}"), format!("/var/lib/{p}")] {
            assert!(
                lines.contains(&format!("{dir} 700 {p}:{p}").as_str()),
                "{said}"
            );
        }
    }
}

/// Every override (a line that is not a comment) sits in a block that starts with
/// a comment saying why.
fn every_override_explained(file: &str) {
    let text = std::fs::read_to_string(format!("{ROOT}/{file}")).unwrap();
    for block in text.split("\n\n") {
        let block = block.trim();
        if block.is_empty() {
            continue;
        }
        assert!(
            block.starts_with('#'),
            "{file}: an override without a comment saying why:\n{block}"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn lintian_and_rpmlint_find_nothing_beyond_the_explained_overrides() {
    let t = tarballs();
    need("lintian", "lintian");
    need("rpmlint", "rpmlint");
    for f in [
        "packaging/deb/vrrp-agent.lintian-overrides",
        "packaging/deb/vrrp-monitor.lintian-overrides",
        "packaging/rpm/rpmlintrc",
    ] {
        every_override_explained(f);
    }

    let mut debs = Vec::new();
    let mut rpms = Vec::new();
    for arch in ARCHES {
        for p in PROGRAMS {
            debs.push(deb(&t.dist, p, &t.version, arch));
            rpms.push(rpm(&t.dist, p, &t.version, arch));
        }
    }
    for d in &debs {
        let size = std::fs::metadata(d).unwrap().len();
        eprintln!("{}: {size} bytes", d.display());
    }
    // The tags are read, not lintian's exit status (it depends on --fail-on and on
    // running as root). Errors and warnings fail the test; info and pedantic tags
    // (I:, P:) are shown only.
    let out = Command::new("lintian")
        .args(["--pedantic", "--display-info", "--show-overrides"])
        .args(&debs)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("lintian:\n{said}{}", String::from_utf8_lossy(&out.stderr));
    let found: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("E: ") || l.starts_with("W: "))
        .collect();
    assert!(
        found.is_empty(),
        "lintian, beyond packaging/deb/*.lintian-overrides:\n{}",
        found.join("\n")
    );
    let overridden = said.lines().filter(|l| l.starts_with("O: ")).count();
    assert!(overridden > 0, "lintian read no override: {said}");

    let out = Command::new("rpmlint")
        .arg("-r")
        .arg(format!("{ROOT}/packaging/rpm/rpmlintrc"))
        .args(&rpms)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("rpmlint:\n{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains(&format!(
            "{} packages and 0 specfiles checked; 0 errors, 0 warnings",
            rpms.len()
        )),
        "rpmlint, beyond packaging/rpm/rpmlintrc:\n{said}"
    );
}
