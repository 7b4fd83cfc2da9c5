//! A bounded memory of lines already logged, so a line that comes back with every
//! reading (a VIP list entry that is no address) is logged once, not every few seconds.
//!
//! Pure bookkeeping, no logging here. The memory holds at most `capacity` distinct
//! lines of at most [`MAX_LINE_CHARS`] characters each; past that the line remembered
//! longest is forgotten (and would be logged again if it came back), so whatever a
//! dump holds, the memory stays small.

use std::collections::{HashSet, VecDeque};

/// Lines are remembered (and should be shown) cut to this many characters.
pub const MAX_LINE_CHARS: usize = 200;

/// Remembers the last `capacity` distinct lines.
#[derive(Debug)]
pub struct LoggedOnce {
    capacity: usize,
    order: VecDeque<String>,
    seen: HashSet<String>,
}

/// `line` cut to [`MAX_LINE_CHARS`] characters (never inside a character).
pub fn cut(line: &str) -> &str {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

impl LoggedOnce {
    pub fn new(capacity: usize) -> LoggedOnce {
        LoggedOnce {
            capacity: capacity.max(1),
            order: VecDeque::new(),
            seen: HashSet::new(),
        }
    }

    /// True the first time a line is offered (and again once it was forgotten).
    pub fn first_time(&mut self, line: &str) -> bool {
        let line = cut(line);
        if self.seen.contains(line) {
            return false;
        }
        if self.order.len() == self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
        self.order.push_back(line.to_string());
        self.seen.insert(line.to_string());
        true
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_new_once_and_memory_stays_bounded() {
        let mut once = LoggedOnce::new(3);
        assert!(once.first_time("not set"));
        assert!(!once.first_time("not set"), "the same line again");
        assert!(once.first_time("(none)"));
        assert!(once.first_time(""));
        assert!(!once.first_time("(none)"));
        assert_eq!(once.len(), 3);
        // A fourth distinct line pushes out the oldest, which then counts as new.
        assert!(once.first_time("Unicast peer = 192.0.2.2"));
        assert_eq!(once.len(), 3);
        assert!(once.first_time("not set"));
        assert!(!once.first_time("Unicast peer = 192.0.2.2"));
        for i in 0..1000 {
            once.first_time(&format!("line {i}"));
        }
        assert_eq!(once.len(), 3, "never more than the capacity");
    }

    #[test]
    fn long_lines_are_remembered_cut() {
        let mut once = LoggedOnce::new(4);
        let long = "é".repeat(MAX_LINE_CHARS * 3);
        assert_eq!(cut(&long).chars().count(), MAX_LINE_CHARS);
        assert!(once.first_time(&long));
        // Differs only past the cut: the same line as far as the memory is concerned.
        assert!(!once.first_time(&format!("{long}x")));
        assert_eq!(cut("short"), "short");
    }
}
