//! The log levels of both specs (`LOG_LEVEL`, `logLevel`): one enum, so the
//! server and the agent accept the same spellings.

use std::str::FromStr;

/// Log levels of the spec, `trace` (most) to `fatal`, plus `silent`. `fatal`
/// maps to the `error` filter; `silent` turns logging off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    Fatal,
    Silent,
}

impl LogLevel {
    /// A level word, case-insensitive (`warning` reads as `warn`); `None` for
    /// anything else.
    pub fn parse(s: &str) -> Option<LogLevel> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "trace" => LogLevel::Trace,
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "warn" | "warning" => LogLevel::Warn,
            "error" => LogLevel::Error,
            "fatal" => LogLevel::Fatal,
            "silent" => LogLevel::Silent,
            _ => return None,
        })
    }

    /// The `log` crate's filter for this level.
    pub fn filter(self) -> log::LevelFilter {
        match self {
            LogLevel::Trace => log::LevelFilter::Trace,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Error | LogLevel::Fatal => log::LevelFilter::Error,
            LogLevel::Silent => log::LevelFilter::Off,
        }
    }
}

impl FromStr for LogLevel {
    type Err = String;
    /// As [`LogLevel::parse`], with the message the configuration error shows.
    fn from_str(s: &str) -> Result<Self, String> {
        LogLevel::parse(s).ok_or_else(|| {
            format!("\"{s}\" is not a log level (trace, debug, info, warn, error, fatal, silent)")
        })
    }
}
