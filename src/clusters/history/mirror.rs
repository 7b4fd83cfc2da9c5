//! The cluster history held in memory: every stored interval, changed by the
//! same writes as the `cluster_history` table and in the same order, so the
//! availability figures of a thousand clusters over a year are summed without
//! reading (and parsing) 800,000 rows per request (the aim: < 200 ms).
//!
//! Pure: no clock, no database, no lock. [`store`](super::store) builds it from
//! the table at start and applies each change on the writer thread once the
//! transaction that made it in the table committed, so it is the table as the
//! last commit left it.
//!
//! The figures are the one pure [`availability`](super::availability) over the
//! cluster's whole history (no second arithmetic to drift from it); only where
//! the fold starts is found by binary search: at the interval before the first
//! one the window can count (as previous interval for a master change at the
//! window's start). The history of one cluster as the API lists it is cut from
//! the same intervals.

use super::availability::{availability_of, Availability};
use super::{Interval, Masters, Write};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Every cluster's stored intervals, by key (in the table's key order).
#[derive(Debug, Default)]
pub struct Mirror {
    series: BTreeMap<String, Series>,
    /// Masters by their stored text, shared by every interval that has them.
    masters: HashMap<String, Arc<Masters>>,
}

/// One cluster's intervals.
#[derive(Debug, Default)]
struct Series {
    /// Sorted by start, one per start (the table's primary key). An open
    /// interval's `to_ms` is its stored end (the last touch); it is read as now.
    list: Vec<Interval>,
    /// The stored ends never decrease and only the last interval may be open: so
    /// the ends as read (an open one's is now, or its last touch if later) never
    /// decrease either, and a window's first interval is found by binary search.
    /// The server's writes keep this; should it not hold, the whole list is read.
    ordered: bool,
}

impl Series {
    fn recheck(&mut self) {
        let n = self.list.len();
        self.ordered = self.list.windows(2).all(|w| w[0].to_ms <= w[1].to_ms)
            && self.list.iter().take(n.saturating_sub(1)).all(|i| !i.open);
    }

    /// Whether `store::read` over `[from_ms, to_ms)` would list this cluster:
    /// an interval starts before `to_ms` and ends after `from_ms` or is open.
    fn listed(&self, from_ms: i64, to_ms: i64) -> bool {
        let meets = |i: &Interval| i.from_ms < to_ms && (i.to_ms > from_ms || i.open);
        if !self.ordered {
            return self.list.iter().any(meets);
        }
        // Of those starting before `to_ms`, the last ends latest and alone may be open.
        let r = self.list.partition_point(|i| i.from_ms < to_ms);
        r > 0 && meets(&self.list[r - 1])
    }

    /// `availability` over the whole list, open intervals ending now.
    fn figures(&self, from_ms: i64, to_ms: i64, now_ms: i64) -> Availability {
        if !self.ordered {
            let list: Vec<Interval> = self.list.iter().map(|i| as_read(i, now_ms)).collect();
            return availability_of(&list, from_ms, to_ms);
        }
        // Intervals that end by the window's start and start before it add
        // nothing; the last of them is still the previous interval of the first
        // that counts. Both starts and ends (as read) are sorted, so those form
        // a prefix.
        let q = self
            .list
            .partition_point(|i| i.from_ms < from_ms && end_as_read(i, now_ms) <= from_ms);
        let start = q.saturating_sub(1);
        let (closed, open) = match self.list.last() {
            Some(last) if last.open => (&self.list[..self.list.len() - 1], Some(last)),
            _ => (&self.list[..], None),
        };
        let open = open.map(|i| as_read(i, now_ms));
        availability_of(
            closed[start.min(closed.len())..]
                .iter()
                .chain(open.as_ref()),
            from_ms,
            to_ms,
        )
    }
}

/// An interval's end as the table is read: an open one holds until now.
fn end_as_read(i: &Interval, now_ms: i64) -> i64 {
    if i.open {
        now_ms.max(i.to_ms)
    } else {
        i.to_ms
    }
}

fn as_read(i: &Interval, now_ms: i64) -> Interval {
    Interval {
        to_ms: end_as_read(i, now_ms),
        ..i.clone()
    }
}

impl Mirror {
    /// The shared masters of a stored masters text.
    pub fn masters(&mut self, text: &str) -> Arc<Masters> {
        if let Some(m) = self.masters.get(text) {
            return m.clone();
        }
        let m = Arc::new(Masters::from_text(text));
        self.masters.insert(text.to_owned(), m.clone());
        m
    }

    /// Adds a stored interval (as read from the table, open ones with their
    /// stored end), replacing one of the same key and start.
    pub fn insert(&mut self, key: &str, interval: Interval) {
        if !self.series.contains_key(key) {
            self.series.insert(key.to_owned(), Series::default());
        }
        let Some(s) = self.series.get_mut(key) else {
            return;
        };
        let at = s.list.partition_point(|i| i.from_ms < interval.from_ms);
        if at == s.list.len() {
            // The usual case (and every row at start): appended, checked in O(1).
            s.ordered = match s.list.last() {
                None => true,
                Some(last) => s.ordered && !last.open && last.to_ms <= interval.to_ms,
            };
            s.list.push(interval);
            return;
        }
        match s.list.get_mut(at) {
            Some(same) if same.from_ms == interval.from_ms => *same = interval,
            _ => s.list.insert(at, interval),
        }
        s.recheck();
    }

    /// Carries out a [`Book`](super::Book)'s writes as
    /// [`store::apply`](super::store::apply) does in the table.
    pub fn apply(&mut self, writes: &[Write], now_ms: i64) {
        for w in writes {
            match w {
                Write::Close { key, at_ms } => {
                    if let Some(s) = self.series.get_mut(key) {
                        for i in s.list.iter_mut().filter(|i| i.open) {
                            i.to_ms = *at_ms;
                            i.open = false;
                        }
                        s.recheck();
                    }
                }
                Write::Open {
                    key,
                    from_ms,
                    shape,
                } => {
                    let masters = self.masters(&shape.masters.to_text());
                    // The incident id shared with the interval before, when the same.
                    let incident = shape.incident.as_deref().map(|id| {
                        self.series
                            .get(key)
                            .and_then(|s| {
                                let at = s.list.partition_point(|i| i.from_ms < *from_ms);
                                at.checked_sub(1).and_then(|p| s.list[p].incident.clone())
                            })
                            .filter(|before| &**before == id)
                            .unwrap_or_else(|| Arc::from(id))
                    });
                    self.insert(
                        key,
                        Interval {
                            from_ms: *from_ms,
                            to_ms: now_ms.max(*from_ms),
                            open: true,
                            masters,
                            health: shape.health,
                            incident,
                        },
                    );
                }
            }
        }
    }

    /// The open intervals are known to hold until `now_ms`
    /// ([`store::touch`](super::store::touch)).
    pub fn touch(&mut self, now_ms: i64) {
        for s in self.series.values_mut() {
            let open: &mut [Interval] = if s.ordered {
                let n = s.list.len();
                &mut s.list[n.saturating_sub(1)..]
            } else {
                &mut s.list
            };
            for i in open.iter_mut().filter(|i| i.open && i.to_ms < now_ms) {
                i.to_ms = now_ms;
            }
        }
    }

    /// Removes the intervals the table's trim deleted, by key and start.
    pub fn remove(&mut self, deleted: &[(String, i64)]) {
        let mut by_key: HashMap<&str, Vec<i64>> = HashMap::new();
        for (key, from_ms) in deleted {
            by_key.entry(key).or_default().push(*from_ms);
        }
        for (key, mut starts) in by_key {
            starts.sort_unstable();
            let Some(s) = self.series.get_mut(key) else {
                continue;
            };
            s.list.retain(|i| starts.binary_search(&i.from_ms).is_err());
            if s.list.is_empty() {
                self.series.remove(key);
            } else {
                s.recheck();
            }
        }
    }

    /// Gives back what the lists grew beyond their length (after the load at start).
    pub fn shrink(&mut self) {
        for s in self.series.values_mut() {
            s.list.shrink_to_fit();
        }
    }

    /// How many intervals are held.
    pub fn len(&self) -> usize {
        self.series.values().map(|s| s.list.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The intervals of `key` that `store::read` gives for `[from_ms, to_ms)`:
    /// starting before `to_ms`, ending after `from_ms` or open (open ones end now).
    pub fn window(&self, key: &str, from_ms: i64, to_ms: i64, now_ms: i64) -> Vec<Interval> {
        let Some(s) = self.series.get(key) else {
            return Vec::new();
        };
        let meets = |i: &&Interval| i.from_ms < to_ms && (i.to_ms > from_ms || i.open);
        let list: &[Interval] = if s.ordered {
            let first = s.list.partition_point(|i| i.to_ms <= from_ms && !i.open);
            let end = s.list.partition_point(|i| i.from_ms < to_ms);
            &s.list[first.min(end)..end]
        } else {
            &s.list
        };
        list.iter()
            .filter(meets)
            .map(|i| as_read(i, now_ms))
            .collect()
    }

    /// When the cluster's stored history begins (its first interval's start).
    pub fn first_start(&self, key: &str) -> Option<i64> {
        self.series
            .get(key)
            .and_then(|s| s.list.first())
            .map(|i| i.from_ms)
    }

    /// Every cluster (or only `key`) with history in `[from_ms, list_to_ms)` (as
    /// `store::read` lists them), in key order, with its figures over
    /// `[from_ms, to_ms)`.
    pub fn availability(
        &self,
        key: Option<&str>,
        from_ms: i64,
        list_to_ms: i64,
        to_ms: i64,
        now_ms: i64,
    ) -> Vec<(&str, Availability)> {
        let chosen: Box<dyn Iterator<Item = (&String, &Series)>> = match key {
            Some(k) => Box::new(self.series.get_key_value(k).into_iter()),
            None => Box::new(self.series.iter()),
        };
        chosen
            .filter(|(_, s)| s.listed(from_ms, list_to_ms))
            .map(|(key, s)| (key.as_str(), s.figures(from_ms, to_ms, now_ms)))
            .collect()
    }

    /// One cluster's figures over `[from_ms, to_ms)` from its whole history.
    pub fn availability_of(
        &self,
        key: &str,
        from_ms: i64,
        to_ms: i64,
        now_ms: i64,
    ) -> Option<Availability> {
        self.series
            .get(key)
            .map(|s| s.figures(from_ms, to_ms, now_ms))
    }
}
