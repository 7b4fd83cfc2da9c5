//! The server's own process facts for the `process_*` series, read from
//! `/proc/self` (Linux only; on any read error the series are left out). The
//! count of open descriptors comes from the caller (the HTTP server counts
//! them for its own limits).

use super::ProcessFacts;

/// RSS, threads and open descriptors now; `None` if `/proc` cannot be read
/// or `open_fds` is unknown.
pub fn read(open_fds: Option<u64>) -> Option<ProcessFacts> {
    let open_fds = open_fds?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))?
                .split_whitespace()
                .nth(3)?
                .parse()
                .ok()
        });
    Some(ProcessFacts {
        resident_memory_bytes: field("VmRSS:")? * 1024,
        threads: field("Threads:")?,
        open_fds,
        max_fds,
    })
}
