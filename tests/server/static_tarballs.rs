//! The static tarballs (issue 32) where they have to run: `scripts/package` builds
//! both (x86_64 and aarch64, musl, LTO) once per test run (`tarballs`, shared with
//! `package.rs`); every shipped binary has no `NEEDED` entry (`readelf -d`) and stays
//! under 15 MiB; the x86_64 tarball runs in a Debian 11 root (glibc 2.31, no OpenSSL
//! 3), chrooted in a mount and PID namespace of its own: `--version`, the server's
//! `/api/health`, the agent's setup PIN and its registration; the aarch64 tarball runs
//! under `qemu-aarch64-static`: `--version` of both and the server's `/api/health`.
//!
//! The Debian 11 root is made once by `debootstrap --variant=minbase bullseye` from
//! Debian's own archive and kept in `/var/cache/vrrp-monitor/bullseye`
//! (`VRRP_BULLSEYE_ROOT` moves it); the tests never write into it: the tarball is
//! bind-mounted on its `/opt` and its `/tmp` is a fresh tmpfs, both gone with the
//! namespace. Needs root, debootstrap, util-linux (unshare), binutils (readelf),
//! file, qemu-user-static (scripts/install-test-deps.sh).

use crate::harness::{free_port, http_agent, ADMIN_PASSWORD};
use crate::package::{run, wait_for, Running};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MIB: u64 = 1024 * 1024;
pub const ARCHES: [&str; 2] = ["x86_64", "aarch64"];

/// What one `scripts/package` run made.
pub struct Tarballs {
    /// The `--out` folder: both tarballs and SHA256SUMS.
    pub dist: PathBuf,
    pub version: String,
    /// What the script printed.
    pub said: String,
}

impl Tarballs {
    pub fn tarball(&self, arch: &str) -> PathBuf {
        self.dist
            .join(format!("vrrp-monitor-{}-linux-{arch}.tar.gz", self.version))
    }
}

fn package() -> Result<Tarballs, String> {
    let dist = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-test");
    let _ = std::fs::remove_dir_all(&dist);
    let out = Command::new(format!("{ROOT}/scripts/package"))
        .arg("--out")
        .arg(&dist)
        .output()
        .map_err(|e| format!("scripts/package: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "scripts/package failed: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let first = said
        .lines()
        .find_map(|l| l.strip_prefix("tarball: "))
        .ok_or_else(|| format!("scripts/package names no tarball: {said}"))?;
    let name = Path::new(first)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let version = name
        .strip_prefix("vrrp-monitor-")
        .and_then(|n| n.strip_suffix("-linux-x86_64.tar.gz"))
        .ok_or_else(|| format!("not vrrp-monitor-<version>-linux-x86_64.tar.gz: {name}"))?
        .to_owned();
    Ok(Tarballs {
        dist,
        version,
        said,
    })
}

/// Both tarballs, built by the first test that asks (two release builds: once).
pub fn tarballs() -> &'static Tarballs {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Packaging);
    static BUILT: OnceLock<Result<Tarballs, String>> = OnceLock::new();
    match BUILT.get_or_init(package) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// The tarball of `arch` unpacked into `dir/opt`, with `/opt/vrrp-monitor` a
/// relative link to the release as the install guide makes it; returns its home.
fn unpack(arch: &str, dir: &Path) -> PathBuf {
    let t = tarballs();
    let opt = dir.join("opt");
    std::fs::create_dir_all(&opt).unwrap();
    run(Command::new("tar")
        .arg("-C")
        .arg(&opt)
        .arg("-xzf")
        .arg(t.tarball(arch)));
    std::os::unix::fs::symlink(
        format!("vrrp-monitor-{}", t.version),
        opt.join("vrrp-monitor"),
    )
    .unwrap();
    opt.join("vrrp-monitor")
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn every_shipped_binary_is_static_and_the_sums_cover_both_tarballs() {
    let t = tarballs();
    eprintln!("{}", t.said);
    let sums = run(Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&t.dist));
    for arch in ARCHES {
        let name = format!("vrrp-monitor-{}-linux-{arch}.tar.gz", t.version);
        assert!(sums.contains(&format!("{name}: OK")), "{sums}");
        let work = tempfile::tempdir().unwrap();
        let home = unpack(arch, work.path());
        for bin in ["vrrp-monitor", "vrrp-agent"] {
            let path = home.join("bin").join(bin);
            let dynamic = run(Command::new("readelf").arg("-d").arg(&path));
            assert!(!dynamic.contains("NEEDED"), "{arch}/{bin}: {dynamic}");
            let header = run(Command::new("readelf").arg("-h").arg(&path));
            let machine = if arch == "x86_64" {
                "X86-64"
            } else {
                "AArch64"
            };
            assert!(header.contains(machine), "{arch}/{bin}: {header}");
            let file = run(Command::new("file").arg("-b").arg(&path));
            assert!(file.contains("statically linked"), "{arch}/{bin}: {file}");
            let size = std::fs::metadata(&path).unwrap().len();
            eprintln!("{arch}/{bin}: {size} bytes; {}", file.trim());
            assert!(size < 15 * MIB, "{arch}/{bin}: {size} bytes");
        }
    }
}

/// The Debian 11 root, made once (about a minute, ~215 MB) and then reused.
pub fn bullseye_root() -> PathBuf {
    debian_root("bullseye", "VRRP_BULLSEYE_ROOT")
}

/// The Debian 12 root (packages.rs), made and kept the same way (~205 MB).
pub fn bookworm_root() -> PathBuf {
    debian_root("bookworm", "VRRP_BOOKWORM_ROOT")
}

/// `debootstrap --variant=minbase SUITE` into /var/cache/vrrp-monitor/SUITE (or `$env`),
/// once: the tests that share a root (this file's and packages.rs) wait for one
/// another instead of both writing its `.partial` folder.
fn debian_root(suite: &str, env: &str) -> PathBuf {
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let root = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/var/cache/vrrp-monitor/{suite}")));
    if root.join("etc/debian_version").is_file() {
        return root;
    }
    let partial = root.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(partial.parent().unwrap()).unwrap();
    run(Command::new("debootstrap")
        .args(["--variant=minbase", suite])
        .arg(&partial)
        .arg("http://deb.debian.org/debian"));
    std::fs::rename(&partial, &root).unwrap();
    root
}

/// `cmd` (a shell script) chrooted into `root`, in a mount and PID namespace of its
/// own: a fresh /proc, a tmpfs on /tmp, `opt` bind-mounted on /opt. The namespace
/// (and everything in it) ends with the returned process.
fn in_root(root: &Path, opt: &Path, script: &str) -> Command {
    let mut c = Command::new("unshare");
    c.args(["--mount", "--pid", "--fork", "--kill-child", "sh", "-c"])
        .arg(concat!(
            "set -e; root=$1; opt=$2; script=$3; ",
            "mount -t proc proc \"$root/proc\"; ",
            "mount -t tmpfs -o mode=1777 tmpfs \"$root/tmp\"; ",
            "mount --bind \"$opt\" \"$root/opt\"; ",
            "exec chroot \"$root\" /bin/sh -c \"$script\"",
        ))
        .arg("sh")
        .arg(root)
        .arg(opt)
        .arg(script);
    c
}

fn health(base: &str) -> Option<Value> {
    http_agent()
        .get(&format!("{base}/api/health"))
        .call()
        .ok()
        .filter(|r| r.status() == 200)?
        .body_mut()
        .read_json()
        .ok()
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn x86_64_tarball_runs_in_a_debian_11_root() {
    let t = tarballs();
    let root = bullseye_root();
    let work = tempfile::tempdir().unwrap();
    unpack("x86_64", work.path());
    let opt = work.path().join("opt");
    let libc = run(&mut in_root(&root, &opt, "ldd --version"));
    assert!(libc.contains("2.31"), "not Debian 11's glibc: {libc}");
    let ssl = run(&mut in_root(
        &root,
        &opt,
        "find /usr /lib -name 'libssl.so*' 2>/dev/null; true",
    ));
    assert!(
        !ssl.contains("libssl.so.3"),
        "the root has OpenSSL 3: {ssl}"
    );

    for bin in ["vrrp-monitor", "vrrp-agent"] {
        let v = run(&mut in_root(
            &root,
            &opt,
            &format!("/opt/vrrp-monitor/bin/{bin} --version"),
        ));
        assert_eq!(v.trim(), format!("{bin} {}", t.version));
    }

    let logs = work.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let server_port = free_port();
    let _server = Running(
        in_root(
            &root,
            &opt,
            "mkdir -p /tmp/monitor && \
             cp /opt/vrrp-monitor/etc/vrrp-monitor/config.yaml /tmp/monitor/ && \
             exec /opt/vrrp-monitor/bin/vrrp-monitor",
        )
        .env("SVC_SERVER_DATA_DIR", "/tmp/monitor")
        .env("SVC_SERVER_CONFIG", "/tmp/monitor/config.yaml")
        .env("SVC_SERVER_PORT", server_port.to_string())
        .env("SVC_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(logs.join("server.log")).unwrap())
        .spawn()
        .unwrap(),
    );
    let base = format!("http://127.0.0.1:{server_port}");
    let h = wait_for("the server's /api/health in the Debian 11 root", 30, || {
        health(&base)
    });
    eprintln!("health: {h}");

    let http = http_agent();
    let mut login = http
        .post(&format!("{base}/api/login"))
        .header("content-type", "application/json")
        .send(json!({"username": "admin", "password": ADMIN_PASSWORD}).to_string())
        .unwrap();
    assert_eq!(login.status(), 200);
    let cookie = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("svc_session="))
        .and_then(|c| c.split(';').next())
        .map(str::to_owned)
        .expect("session cookie");
    let _ = login.body_mut().read_to_string();
    let token: Value = http
        .post(&format!("{base}/api/v1/tokens"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .send("{}")
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();

    // The agent, with the example config pointed at that server; its process table
    // is an empty folder (no keepalived here, and none of the machine's is touched).
    let agent_port = free_port();
    let agent_log = logs.join("agent.log");
    let _agent = Running(
        in_root(
            &root,
            &opt,
            &format!(
                "mkdir -p /tmp/agent/data /tmp/agent/proc && \
                 cp /opt/vrrp-monitor/etc/vrrp-agent/config.yaml /tmp/agent/ && \
                 echo 'serverUrl: {base}' >> /tmp/agent/config.yaml && \
                 exec /opt/vrrp-monitor/bin/vrrp-agent"
            ),
        )
        .env("SVC_CLIENT_CONFIG", "/tmp/agent/config.yaml")
        .env("SVC_CLIENT_DATA_DIR", "/tmp/agent/data")
        .env("SVC_CLIENT_PORT", agent_port.to_string())
        .env("SVC_PROC_DIR", "/tmp/agent/proc")
        .env("LOG_FORMAT", "json")
        .stdout(std::fs::File::create(logs.join("agent.out")).unwrap())
        .stderr(std::fs::File::create(&agent_log).unwrap())
        .spawn()
        .unwrap(),
    );
    let pin = wait_for("the setup PIN in the agent's log", 30, || {
        let text = std::fs::read_to_string(&agent_log).unwrap_or_default()
            + &std::fs::read_to_string(logs.join("agent.out")).unwrap_or_default();
        text.lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let msg = v["msg"].as_str().or(v["message"].as_str())?;
            Some(msg.split("Setup PIN: ").nth(1)?.trim().to_owned())
        })
    });
    let mut answer = http
        .post(&format!("http://127.0.0.1:{agent_port}/api/register"))
        .header("content-type", "application/json")
        .send(json!({"url": base, "token": token["token"], "pin": pin}).to_string())
        .unwrap();
    assert_eq!(
        answer.status(),
        200,
        "{}",
        answer.body_mut().read_to_string().unwrap_or_default()
    );
    let reading = wait_for("the agent's reading on the server", 30, || {
        let states: Value = http
            .get(&format!("{base}/api/v1/keepalived/states"))
            .header("cookie", &cookie)
            .call()
            .ok()?
            .body_mut()
            .read_json()
            .ok()?;
        states.as_array()?.first().cloned()
    });
    assert_eq!(reading["running"], false, "{reading}");
}

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn aarch64_tarball_runs_under_qemu_user() {
    let t = tarballs();
    let work = tempfile::tempdir().unwrap();
    let home = unpack("aarch64", work.path());
    // binfmt_misc may not be registered in a container: the emulator is named.
    let qemu = |bin: &str| {
        let mut c = Command::new("qemu-aarch64-static");
        c.arg(home.join("bin").join(bin));
        c
    };
    for bin in ["vrrp-monitor", "vrrp-agent"] {
        let v = run(qemu(bin).arg("--version"));
        assert_eq!(v.trim(), format!("{bin} {}", t.version));
    }
    let data = work.path().join("monitor");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(
        home.join("etc/vrrp-monitor/config.yaml"),
        data.join("config.yaml"),
    )
    .unwrap();
    let port = free_port();
    let _server = Running(
        qemu("vrrp-monitor")
            .env("SVC_SERVER_DATA_DIR", &data)
            .env("SVC_SERVER_CONFIG", data.join("config.yaml"))
            .env("SVC_SERVER_PORT", port.to_string())
            .env("SVC_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("LOG_FORMAT", "json")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.path().join("server.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let h = wait_for("the aarch64 server's /api/health", 60, || health(&base));
    eprintln!("health: {h}");
    assert!(data.join("vrrp-monitor.db").is_file());
}
