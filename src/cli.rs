//! The command line of `vrrp-monitor`: no arguments runs the server; `--help`,
//! `--version`, `backup <file>` and `import-kasm` are the other things it does. Configuration
//! stays in the environment and `config.yaml` (see `--help`); `parse` is pure.

use std::path::PathBuf;

/// One version, from one place: the workspace version, or what `scripts/package`
/// sets (`<version>`, or `<version>+<hash>` off a tag) in `VRRP_VERSION`.
pub const VERSION: &str = match option_env!("VRRP_VERSION") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Serve,
    Help,
    Version,
    /// A consistent copy of the database to this file (see `db::backup`).
    Backup(PathBuf),
    /// Take over a keepalived-status-monitor database (see `import`).
    ImportKasm {
        db: PathBuf,
        config: Option<PathBuf>,
    },
}

const IMPORT_USAGE: &str =
    "import-kasm: needs the original's database (vrrp-monitor import-kasm --db PATH [--config PATH])";

fn import_kasm(rest: &[String]) -> Result<Command, String> {
    let (mut db, mut config) = (None, None);
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let slot = match flag.as_str() {
            "--db" => &mut db,
            "--config" => &mut config,
            other => return Err(format!("import-kasm: unknown argument \"{other}\"")),
        };
        match it.next() {
            Some(v) if !v.starts_with('-') && slot.is_none() => *slot = Some(PathBuf::from(v)),
            _ => return Err(IMPORT_USAGE.into()),
        }
    }
    let db = db.ok_or_else(|| IMPORT_USAGE.to_owned())?;
    Ok(Command::ImportKasm { db, config })
}

/// The arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    match args {
        [] => Ok(Command::Serve),
        [a] if a == "--help" || a == "-h" || a == "help" => Ok(Command::Help),
        [a] if a == "--version" || a == "-V" => Ok(Command::Version),
        [b] if b == "backup" => {
            Err("backup: needs the file to write (vrrp-monitor backup <file>)".into())
        }
        [b, file] if b == "backup" && !file.starts_with('-') => {
            Ok(Command::Backup(PathBuf::from(file)))
        }
        [i, rest @ ..] if i == "import-kasm" => import_kasm(rest),
        [first, ..] => Err(format!("unknown argument \"{first}\"")),
    }
}

pub fn help() -> String {
    format!(
        "vrrp-monitor {VERSION}: the control plane that watches keepalived (VRRP) fleets.

Usage:
  vrrp-monitor                 run the server
  vrrp-monitor backup <file>   copy the running server's database to <file>
                               (SQLite online backup; the server keeps running)
  vrrp-monitor import-kasm --db PATH [--config PATH]
                               take over a keepalived-status-monitor 1.0
                               installation (server stopped; see doc/upgrade.md)
  vrrp-monitor --version       print the version
  vrrp-monitor --help          print this

Configuration: config.yaml in the data directory (created with every key on
first start), overridden by the environment:
  SVC_SERVER_DATA_DIR      data directory (default ./data)
  SVC_SERVER_CONFIG        config file (default <data directory>/config.yaml)
  SVC_SERVER_PORT          listen port (default 3010)
  SVC_TRUSTED_PROXIES      proxies whose X-Forwarded-For/-Proto are believed
  SVC_ADMIN_USERNAME, SVC_ADMIN_PASSWORD   the first-run administrator
  LOG_LEVEL                trace, debug, info, warn, error, fatal, silent
  LOG_FORMAT               json or pretty

Prometheus metrics: GET /metrics (see security.metrics_allowed_networks).
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn commands_and_refusals() {
        assert_eq!(parse(&args(&[])), Ok(Command::Serve));
        assert_eq!(parse(&args(&["--help"])), Ok(Command::Help));
        assert_eq!(parse(&args(&["-V"])), Ok(Command::Version));
        assert_eq!(
            parse(&args(&["backup", "/tmp/x.db"])),
            Ok(Command::Backup("/tmp/x.db".into()))
        );
        assert!(parse(&args(&["backup"])).unwrap_err().contains("<file>"));
        assert!(parse(&args(&["--verbose"]))
            .unwrap_err()
            .contains("--verbose"));
        assert!(parse(&args(&["--version", "x"])).is_err());
        assert!(help().contains("SVC_SERVER_DATA_DIR"));
        assert_eq!(
            parse(&args(&[
                "import-kasm",
                "--db",
                "/o/server.db",
                "--config",
                "/o/config.yaml"
            ])),
            Ok(Command::ImportKasm {
                db: "/o/server.db".into(),
                config: Some("/o/config.yaml".into())
            })
        );
        assert_eq!(
            parse(&args(&["import-kasm", "--db", "x.db"])),
            Ok(Command::ImportKasm {
                db: "x.db".into(),
                config: None
            })
        );
        for bad in [
            &["import-kasm"][..],
            &["import-kasm", "--config", "c"],
            &["import-kasm", "--db"],
            &["import-kasm", "--db", "a", "--db", "b"],
            &["import-kasm", "--db", "a", "--force"],
        ] {
            assert!(
                parse(&args(bad)).unwrap_err().starts_with("import-kasm:"),
                "{bad:?}"
            );
        }
    }
}
