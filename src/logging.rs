//! Log output through `log` + `fern`: JSON or pretty lines on stderr, the spec's
//! levels `trace`..`fatal` and `silent`.
//!
//! `log` has no fatal level: a fatal line is an error record on the [`FATAL`]
//! target, printed with level `fatal`. The level can change once after start
//! (the environment is read before the config file is).

use crate::config::{LogFormat, LogLevel};
use std::sync::atomic::{AtomicU8, Ordering};
pub use vrrp_protocol::escape_controls;

/// The target that marks a record as fatal.
pub const FATAL: &str = "fatal";

/// Logs at the spec's `fatal` level.
#[macro_export]
macro_rules! fatal {
    ($($arg:tt)+) => { ::log::error!(target: $crate::logging::FATAL, $($arg)+) };
}

static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Info as u8);

fn current_level() -> LogLevel {
    match LEVEL.load(Ordering::Relaxed) {
        0 => LogLevel::Trace,
        1 => LogLevel::Debug,
        2 => LogLevel::Info,
        3 => LogLevel::Warn,
        4 => LogLevel::Error,
        5 => LogLevel::Fatal,
        _ => LogLevel::Silent,
    }
}

pub fn set_level(level: LogLevel) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

fn record_level(record: &log::Record<'_>) -> LogLevel {
    if record.target() == FATAL {
        return LogLevel::Fatal;
    }
    match record.level() {
        log::Level::Trace => LogLevel::Trace,
        log::Level::Debug => LogLevel::Debug,
        log::Level::Info => LogLevel::Info,
        log::Level::Warn => LogLevel::Warn,
        log::Level::Error => LogLevel::Error,
    }
}

fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Trace => "trace",
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
        LogLevel::Fatal | LogLevel::Silent => "fatal",
    }
}

/// Targets (prefixes) whose records are dropped: see [`mute`].
static MUTED: std::sync::RwLock<Vec<&'static str>> = std::sync::RwLock::new(Vec::new());

/// Drops every record of a dependency's target from now on: for a library
/// whose lines repeat what our own code reports better (once, not per event).
pub fn mute(target_prefix: &'static str) {
    if let Ok(mut muted) = MUTED.write() {
        if !muted.contains(&target_prefix) {
            muted.push(target_prefix);
        }
    }
}

fn muted(target: &str) -> bool {
    MUTED
        .read()
        .is_ok_and(|m| m.iter().any(|p| target.starts_with(p)))
}

/// Installs the logger. Safe to call once per process; later calls are ignored.
pub fn init(format: LogFormat, level: LogLevel) {
    set_level(level);
    let dispatch = fern::Dispatch::new()
        .level(log::LevelFilter::Trace)
        // Dependencies log a great deal at debug; only our own crate speaks below info.
        .filter(|meta| {
            let ours = meta.target().starts_with("vrrp_monitor") || meta.target() == FATAL;
            ours || meta.level() <= log::Level::Info
        })
        .filter(|meta| !muted(meta.target()))
        .filter(|meta| {
            let level = current_level();
            if level == LogLevel::Silent {
                return false;
            }
            let record_level = if meta.target() == FATAL {
                LogLevel::Fatal
            } else {
                match meta.level() {
                    log::Level::Trace => LogLevel::Trace,
                    log::Level::Debug => LogLevel::Debug,
                    log::Level::Info => LogLevel::Info,
                    log::Level::Warn => LogLevel::Warn,
                    log::Level::Error => LogLevel::Error,
                }
            };
            record_level >= level
        })
        .format(move |out, message, record| {
            let time = crate::clock::iso(chrono::Utc::now());
            let level = level_name(record_level(record));
            let target = record.target().trim_start_matches("vrrp_monitor::");
            match format {
                LogFormat::Json => {
                    let line = serde_json::json!({
                        "time": time,
                        "level": level,
                        "target": target,
                        "msg": message.to_string(),
                    });
                    out.finish(format_args!("{line}"))
                }
                // A line is one record: user text in a message (a host name,
                // a user or webhook name) cannot start a forged line. JSON
                // escapes by itself.
                LogFormat::Pretty => out.finish(format_args!(
                    "{time} {:<5} [{target}] {}",
                    level.to_ascii_uppercase(),
                    escape_controls(&message.to_string())
                )),
            }
        })
        .chain(std::io::stderr());
    let _ = dispatch.apply();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("plain\ttext"), "plain\ttext");
        assert_eq!(
            escape_controls("a\n2026 ERROR forged\r\u{1b}[31m"),
            "a\\n2026 ERROR forged\\r\\u{1b}[31m"
        );
    }
}
