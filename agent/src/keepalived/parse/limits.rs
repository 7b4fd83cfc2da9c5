//! How much of a dump the parsers keep. A dump is keepalived's, but it is read from a
//! file another process wrote and the parsers are fuzzed: whatever it holds, nothing it
//! says makes them keep more than these bounds. A line or a value beyond them is left
//! out (a name is cut instead, so its instance stays visible under the same name on
//! every reading); a list stops growing at its bound.

/// Longest line that is read; a longer one counts only for the indentation it ends.
pub(super) const MAX_LINE: usize = 4096;

/// Longest value kept as text (a name, a word, a password). keepalived's own are far
/// shorter: an interface name is at most 15 bytes, a PASS password 8.
pub(super) const MAX_WORD: usize = 256;

/// Most entries kept in one list (VIPs, peers, tracked items, members, counters) and
/// most names remembered per tracker section.
pub(super) const MAX_LIST: usize = 4096;

/// Most instances (and sync groups) kept from one dump.
pub(super) const MAX_INSTANCES: usize = 4096;

/// `v` when it is a value worth keeping: not empty and not longer than [`MAX_WORD`].
pub(super) fn word(v: &str) -> Option<&str> {
    (!v.is_empty() && v.len() <= MAX_WORD).then_some(v)
}

/// `v` cut to at most [`MAX_WORD`] bytes, at a character boundary.
pub(super) fn name(v: &str) -> String {
    if v.len() <= MAX_WORD {
        return v.to_string();
    }
    let mut end = MAX_WORD;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    v[..end].to_string()
}

/// Whether a list already holding `len` entries takes one more.
pub(super) fn room(len: usize) -> bool {
    len < MAX_LIST
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_names_are_bounded() {
        assert_eq!(word("eth0"), Some("eth0"));
        assert_eq!(word(""), None);
        assert_eq!(word(&"x".repeat(MAX_WORD)).map(str::len), Some(MAX_WORD));
        assert_eq!(word(&"x".repeat(MAX_WORD + 1)), None);
        assert_eq!(name("VI_1"), "VI_1");
        // Cut at a character boundary: 'é' is two bytes.
        let long = "é".repeat(MAX_WORD);
        let cut = name(&long);
        assert!(cut.len() <= MAX_WORD && long.starts_with(&cut));
        assert_eq!(cut.len(), MAX_WORD);
        let odd = format!("x{}", "é".repeat(MAX_WORD));
        assert_eq!(name(&odd).len(), MAX_WORD - 1);
        assert!(room(MAX_LIST - 1) && !room(MAX_LIST));
    }
}
