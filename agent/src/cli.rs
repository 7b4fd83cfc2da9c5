//! The command line of `vrrp-agent`: no arguments runs the agent; `register`
//! registers it once and exits (for configuration management); `--help` and
//! `--version` are the only other things it does. Configuration stays in the
//! environment and `config.yaml` (see `--help`); `parse` is pure.

use std::path::PathBuf;

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Run,
    Help,
    Version,
    /// `register [--token-file FILE]`: see [`crate::register_once`].
    Register {
        token_file: Option<PathBuf>,
    },
}

/// The arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    match args {
        [] => Ok(Command::Run),
        [a] if a == "--help" || a == "-h" || a == "help" => Ok(Command::Help),
        [a] if a == "--version" || a == "-V" => Ok(Command::Version),
        [a, rest @ ..] if a == "register" => match rest {
            [] => Ok(Command::Register { token_file: None }),
            [h] if h == "--help" || h == "-h" => Ok(Command::Help),
            [o, f] if o == "--token-file" && !f.is_empty() => Ok(Command::Register {
                token_file: Some(PathBuf::from(f)),
            }),
            [o, ..] => Err(format!(
                "register: unknown argument \"{o}\" (register [--token-file FILE])"
            )),
        },
        [first, ..] => Err(format!("unknown argument \"{first}\"")),
    }
}

pub fn help() -> String {
    format!(
        "vrrp-agent {}: reads keepalived on this host and reports to vrrp-monitor.

Usage:
  vrrp-agent             run the agent (as root: it signals keepalived and reads
                         its dump files through /proc/<pid>/root)
  vrrp-agent register [--token-file FILE]
                         register once with the config's serverUrl and exit: the
                         registration token (made on the server) from FILE, - for
                         standard input, or SVC_REGISTRATION_TOKEN; no setup PIN.
                         Already registered: prints \"already registered as <id>\",
                         exits 0. Restart the agent afterwards to connect.
  vrrp-agent --version   print the version
  vrrp-agent --help      print this

Configuration: config.yaml (default {}), overridden by the environment:
  SVC_CLIENT_CONFIG            the config file
  SVC_CLIENT_DATA_DIR          data directory (identity, queue; default <agent dir>/data)
  SVC_CLIENT_PORT              local web server port (status, register, notify)
  SVC_NOTIFY_FIFO              keepalived's vrrp_notify_fifo (absolute path)
  SVC_NOTIFY_TOKEN             token of the notify script (at least 16 characters)
  SVC_REGISTRATION_SECRET, SVC_REGISTRATION_SECRET_FILE   outbound registration
  SVC_REGISTRATION_TOKEN       registration token of `vrrp-agent register`
  SVC_PROC_DIR                 /proc of the host (in a container)
  LOG_LEVEL, LOG_FORMAT        trace..silent; json or pretty
",
        crate::lifecycle::VERSION,
        crate::config::DEFAULT_CONFIG,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_refusals() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(&args(&[])), Ok(Command::Run));
        assert_eq!(parse(&args(&["--help"])), Ok(Command::Help));
        assert_eq!(parse(&args(&["--version"])), Ok(Command::Version));
        assert!(parse(&args(&["--config", "x"]))
            .unwrap_err()
            .contains("--config"));
        assert_eq!(
            parse(&args(&["register"])),
            Ok(Command::Register { token_file: None })
        );
        assert_eq!(
            parse(&args(&["register", "--token-file", "-"])),
            Ok(Command::Register {
                token_file: Some(PathBuf::from("-"))
            })
        );
        assert!(parse(&args(&["register", "--token", "x"]))
            .unwrap_err()
            .contains("--token"));
        assert!(parse(&args(&["register", "--token-file"])).is_err());
        assert!(help().contains("SVC_NOTIFY_TOKEN"));
        assert!(help().contains("vrrp-agent register [--token-file FILE]"));
        assert!(help().contains("SVC_REGISTRATION_TOKEN"));
    }
}
