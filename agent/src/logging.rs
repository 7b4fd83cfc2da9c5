//! Logging: fern, `pretty` or `json` lines on stderr.
//!
//! `fatal` is not a `log` level; it is logged at error level with the target `fatal` and
//! shown as `FATAL` / `"fatal"`. Secrets never reach this module: callers pass masked values.

use crate::config::{LogFormat, LogLevel};
use vrrp_protocol::escape_controls;

/// Target that marks a fatal line.
pub const FATAL: &str = "fatal";

pub fn init(level: LogLevel, format: LogFormat) {
    // Libraries log what they carry: tungstenite traces the upgrade request (the query
    // holds the auth token), ureq and rustls trace requests and handshakes. They are
    // capped at info so no level of ours can let a secret through them.
    let cap = level.filter().min(log::LevelFilter::Info);
    let dispatch = fern::Dispatch::new()
        .level(level.filter())
        .level_for("tungstenite", cap)
        .level_for("ureq", cap)
        .level_for("ureq_proto", cap)
        .level_for("rustls", cap)
        .format(move |out, message, record| {
            let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let fatal = record.target() == FATAL;
            match format {
                LogFormat::Pretty => {
                    let lvl = if fatal {
                        "FATAL".to_string()
                    } else {
                        record.level().to_string()
                    };
                    // One record, one line: text from outside (a notify body,
                    // a server's answer) cannot start a forged line.
                    out.finish(format_args!(
                        "{time} {lvl:<5} {}",
                        escape_controls(&message.to_string())
                    ))
                }
                LogFormat::Json => {
                    let lvl = if fatal {
                        "fatal".to_string()
                    } else {
                        match record.level() {
                            log::Level::Warn => "warn".to_string(),
                            l => l.to_string().to_lowercase(),
                        }
                    };
                    let line = serde_json::json!({
                        "time": time,
                        "level": lvl,
                        "msg": message.to_string(),
                    });
                    out.finish(format_args!("{line}"))
                }
            }
        })
        .chain(std::io::stderr());
    // A second init (tests) keeps the first logger.
    let _ = dispatch.apply();
}
