//! The pure rules of a drain: what the drain file's bytes say (read the way keepalived
//! reads a `track_file`), which file the agent wrote (`FileId`), the drain it keeps in
//! its data directory (`StoredDrain`, bounded when read back), and what the host's
//! drain state is, given the file and that stored drain.
//!
//! The file decides: a file that is missing or says 0 is no drain, whatever the agent
//! stored. A non-zero file is a drain; its story (reason, who, since) is the stored
//! one only while the file is still the very file the agent wrote (same device, inode
//! and modification time). Otherwise someone drained the host by hand: reason
//! [`OUTSIDE_REASON`], nobody, since the file's modification time.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use vrrp_protocol::actions::{cut, MAX_REASON_CHARS, OUTSIDE_REASON};
use vrrp_protocol::DrainState;

/// What a drain writes.
pub const DRAINED: &[u8] = b"1\n";
/// What an undrain writes.
pub const UNDRAINED: &[u8] = b"0\n";
/// keepalived reads at most this many bytes of a track file.
pub const READ_MAX: usize = 127;

/// The number keepalived takes from a track file's bytes: C's `strtol(buf, NULL, 0)`
/// over the first [`READ_MAX`] bytes. White space first, then a sign, then `0x` and
/// hex digits, a leading `0` and octal digits, or decimal digits; reading stops at the
/// first other byte; no digits at all is 0 (so an empty file is 0). `None`: a number
/// outside the range of a C `int`, which keepalived logs and ignores (it keeps the
/// value it had).
pub fn file_value(bytes: &[u8]) -> Option<i64> {
    let s = &bytes[..bytes.len().min(READ_MAX)];
    let mut i = 0;
    while s
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
    {
        i += 1;
    }
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let hex_digit = |c: Option<&u8>| c.is_some_and(u8::is_ascii_hexdigit);
    let base: u32 = if s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && hex_digit(s.get(i + 2))
    {
        i += 2;
        16
    } else if s.get(i) == Some(&b'0') {
        8
    } else {
        10
    };
    let mut value: i64 = 0;
    while let Some(d) = s.get(i).and_then(|c| (*c as char).to_digit(base)) {
        value = value.checked_mul(base as i64)?.checked_add(d as i64)?;
        if value > i64::from(i32::MAX) + 1 {
            return None;
        }
        i += 1;
    }
    let value = if negative { -value } else { value };
    (i64::from(i32::MIN)..=i64::from(i32::MAX))
        .contains(&value)
        .then_some(value)
}

/// Which file a path held: the agent compares the drain file with the one it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
}

impl FileId {
    pub fn of(md: &Metadata) -> FileId {
        FileId {
            dev: md.dev(),
            ino: md.ino(),
            mtime_sec: md.mtime(),
            mtime_nsec: md.mtime_nsec(),
        }
    }

    /// The modification time, ISO 8601 UTC with milliseconds.
    pub fn modified(&self) -> Option<String> {
        let nsec = u32::try_from(self.mtime_nsec).ok()?;
        DateTime::<Utc>::from_timestamp(self.mtime_sec, nsec).map(iso)
    }
}

/// The drain file as the agent found it (a regular file; see `files::look`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// [`file_value`] of its first bytes.
    pub value: Option<i64>,
    pub id: FileId,
}

impl Seen {
    /// Whether the file drains the host: any number but 0 (a number keepalived
    /// ignores as too large is no 0 either).
    pub fn drains(&self) -> bool {
        self.value != Some(0)
    }
}

/// A drain the agent made, as kept in its data directory (`drain.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredDrain {
    pub reason: String,
    pub by: String,
    /// ISO 8601 UTC with milliseconds.
    pub since: String,
    /// The drain file the agent wrote.
    pub file: FileId,
}

impl StoredDrain {
    /// What a stored drain may bring into a reading, whoever edited the file: texts
    /// cut to [`MAX_REASON_CHARS`] characters without control characters, and a
    /// `since` that is a time (else the file's modification time is used).
    pub fn bounded(self) -> StoredDrain {
        let clean = |t: &str| -> String {
            cut(
                &t.chars().filter(|c| !c.is_control()).collect::<String>(),
                MAX_REASON_CHARS,
            )
        };
        let since = DateTime::parse_from_rfc3339(&self.since)
            .ok()
            .map(|t| iso(t.with_timezone(&Utc)))
            .or_else(|| self.file.modified())
            .unwrap_or_default();
        StoredDrain {
            reason: clean(&self.reason),
            by: clean(&self.by),
            since,
            file: self.file,
        }
    }
}

/// The host's drain: `file` is the drain file (`None`: missing or not readable, which
/// keepalived reads as 0), `stored` the drain the agent keeps.
pub fn state(file: Option<&Seen>, stored: Option<&StoredDrain>) -> DrainState {
    let Some(file) = file.filter(|f| f.drains()) else {
        return DrainState::default();
    };
    match stored.filter(|s| s.file == file.id) {
        Some(s) => DrainState {
            drained: true,
            reason: Some(s.reason.clone()),
            by: Some(s.by.clone()),
            since: Some(s.since.clone()),
            ..Default::default()
        },
        None => DrainState {
            drained: true,
            reason: Some(OUTSIDE_REASON.to_string()),
            by: None,
            since: file.id.modified(),
            ..Default::default()
        },
    }
}

/// ISO 8601 UTC with milliseconds, as every time on the wire.
pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_read_as_keepalived_reads_it() {
        for (bytes, want) in [
            (&b"1\n"[..], Some(1)),
            (b"0\n", Some(0)),
            (b"", Some(0)),
            (b"\n", Some(0)),
            (b"  \t-5 apples", Some(-5)),
            (b"+7", Some(7)),
            (b"0x1f", Some(31)),
            (b"0X", Some(0)),
            (b"0x", Some(0)),
            (b"010", Some(8)),
            (b"09", Some(0)),
            (b"drained", Some(0)),
            (b"2147483647", Some(i64::from(i32::MAX))),
            (b"-2147483648", Some(i64::from(i32::MIN))),
            (b"2147483648", None),
            (b"99999999999999999999999999", None),
            (b"1\0garbage", Some(1)),
        ] {
            assert_eq!(
                file_value(bytes),
                want,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        // Only the first 127 bytes count: digits beyond them are not read.
        let mut long = vec![b' '; READ_MAX];
        long.push(b'1');
        assert_eq!(file_value(&long), Some(0));
        assert!(!Seen {
            value: Some(0),
            id: id(1)
        }
        .drains());
        assert!(Seen {
            value: None,
            id: id(1)
        }
        .drains());
        assert!(Seen {
            value: Some(-1),
            id: id(1)
        }
        .drains());
    }

    fn id(ino: u64) -> FileId {
        FileId {
            dev: 1,
            ino,
            mtime_sec: 1_795_000_000,
            mtime_nsec: 123_456_789,
        }
    }

    fn stored(ino: u64) -> StoredDrain {
        StoredDrain {
            reason: "kernel update".into(),
            by: "alice".into(),
            since: "2026-11-21T08:46:00.000Z".into(),
            file: id(ino),
        }
    }

    #[test]
    fn the_file_decides_and_the_stored_drain_tells_its_story() {
        let drained = Seen {
            value: Some(1),
            id: id(7),
        };
        let zero = Seen {
            value: Some(0),
            id: id(7),
        };
        // Missing, unreadable or 0: not drained, whatever is stored.
        assert_eq!(state(None, Some(&stored(7))), DrainState::default());
        assert_eq!(state(Some(&zero), Some(&stored(7))), DrainState::default());
        // The file the agent wrote: the stored story.
        let s = state(Some(&drained), Some(&stored(7)));
        assert!(s.drained);
        assert_eq!(s.reason.as_deref(), Some("kernel update"));
        assert_eq!(s.by.as_deref(), Some("alice"));
        assert_eq!(s.since.as_deref(), Some("2026-11-21T08:46:00.000Z"));
        // Drained by hand: nothing stored, or a file other than the one written.
        for stored in [None, Some(stored(8))] {
            let s = state(Some(&drained), stored.as_ref());
            assert!(s.drained);
            assert_eq!(s.reason.as_deref(), Some(OUTSIDE_REASON));
            assert_eq!(s.by, None);
            assert_eq!(s.since.as_deref(), Some("2026-11-18T11:06:40.123Z"));
        }
    }

    #[test]
    fn a_stored_drain_is_bounded_when_read_back() {
        let s = StoredDrain {
            reason: format!("a\nb\u{1b}{}", "x".repeat(300)),
            by: "bob\r".into(),
            since: "yesterday".into(),
            file: id(1),
        }
        .bounded();
        assert!(s.reason.starts_with("abx") && s.reason.chars().count() == MAX_REASON_CHARS);
        assert_eq!(s.by, "bob");
        assert_eq!(s.since, "2026-11-18T11:06:40.123Z", "the file's time");
        let t = StoredDrain {
            since: "2026-11-21T09:46:00+01:00".into(),
            ..stored(1)
        }
        .bounded();
        assert_eq!(t.since, "2026-11-21T08:46:00.000Z");
    }
}
