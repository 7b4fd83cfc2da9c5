//! The mirror against the pure arithmetic it must equal: random histories
//! (gaps, intervals of no length, incidents across many intervals and gaps,
//! renamed masters, an open last interval, now and then an overlap or an open
//! interval that is not the last) and random windows (on interval seams, on UTC
//! day boundaries, inside intervals, in unobserved time), compared with
//! `availability` over the cluster's whole history and with the rows
//! `store::read` gave (no clock, no database).

use super::availability::{availability, Availability};
use super::mirror::Mirror;
use super::*;
use proptest::prelude::*;

const DAY: i64 = 86_400_000;

fn masters(n: usize) -> Masters {
    let (ids, hosts): (&[&str], &[&str]) = match n {
        0 => (&[], &[]),
        1 => (&["a"], &["lb-a"]),
        2 => (&["b"], &["lb-b"]),
        // The same master under a new host name: no master change.
        3 => (&["a"], &["lb-a-renamed"]),
        4 => (&["a", "b"], &["lb-a", "lb-b"]),
        _ => (&["c"], &["lb-c"]),
    };
    Masters {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        hosts: hosts.iter().map(|s| s.to_string()).collect(),
    }
}

/// One interval of a generated history: the gap before it, its length, what it says.
#[derive(Debug, Clone)]
struct Step {
    gap: i64,
    len: i64,
    masters: usize,
    health: usize,
    incident: usize,
}

fn length() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0), 1i64..5_000, 5_000i64..DAY / 2, DAY / 2..3 * DAY,]
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop_oneof![4 => Just(0i64), 1 => length(), 1 => Just(-1_000i64)],
        length(),
        0usize..6,
        0usize..6,
        prop_oneof![3 => Just(0usize), 2 => 1usize..4],
    )
        .prop_map(|(gap, len, masters, health, incident)| Step {
            gap,
            len,
            masters,
            health,
            incident,
        })
}

/// The stored rows of one cluster (open ones with their stored end) and `now`.
fn history(steps: &[Step], open_last: bool, open_inside: Option<usize>) -> Vec<Interval> {
    let mut at = 3 * DAY + 12_345;
    let mut out: Vec<Interval> = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        // A negative gap overlaps the interval before (the table allows it).
        let from = (at + s.gap).max(out.last().map_or(i64::MIN, |i| i.from_ms + 1));
        let to = from + s.len;
        out.push(Interval {
            from_ms: from,
            to_ms: to,
            open: (open_last && n + 1 == steps.len()) || open_inside == Some(n),
            masters: Arc::new(masters(s.masters)),
            health: HistoryHealth::ALL[s.health],
            incident: (s.incident > 0).then(|| Arc::from(format!("inc-{}", s.incident).as_str())),
        });
        at = to;
    }
    out
}

/// As `store::read` and the old handler: open intervals end now.
fn as_read(list: &[Interval], now: i64) -> Vec<Interval> {
    list.iter()
        .map(|i| Interval {
            to_ms: if i.open { now.max(i.to_ms) } else { i.to_ms },
            ..i.clone()
        })
        .collect()
}

/// A time near what matters: an interval's start or end (give or take a
/// millisecond), a UTC midnight, or anywhere around the history.
fn pick(list: &[Interval], choice: (u8, usize, i64)) -> i64 {
    let (kind, n, jitter) = choice;
    let ends: Vec<i64> = list.iter().flat_map(|i| [i.from_ms, i.to_ms]).collect();
    let last = ends.iter().copied().max().unwrap_or(0);
    match kind % 4 {
        0 if !ends.is_empty() => ends[n % ends.len()] + jitter % 2,
        1 => (n as i64 % 12) * DAY,
        _ => (jitter.rem_euclid(last + 2 * DAY)) - DAY,
    }
}

fn time_choice() -> impl Strategy<Value = (u8, usize, i64)> {
    (any::<u8>(), any::<usize>(), any::<i64>())
}

fn mirror_of(key: &str, list: &[Interval]) -> Mirror {
    let mut m = Mirror::default();
    for i in list {
        let masters = m.masters(&i.masters.to_text());
        m.insert(
            key,
            Interval {
                masters,
                ..i.clone()
            },
        );
    }
    m
}

fn reference(list: &[Interval], from: i64, to: i64, now: i64) -> Option<Availability> {
    let listed = list
        .iter()
        .any(|i| i.from_ms < to && (i.to_ms > from || i.open));
    let count_to = to.min(now.max(from));
    listed.then(|| availability(&as_read(list, now), from, count_to))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn the_mirror_gives_the_figures_of_the_whole_history(
        steps in prop::collection::vec(step(), 0..40),
        open_last in any::<bool>(),
        open_inside in prop::option::weighted(0.05, 0usize..40),
        now_after in prop_oneof![4 => 0i64..DAY, 1 => -DAY..0i64],
        windows in prop::collection::vec((time_choice(), time_choice()), 1..8),
    ) {
        let list = history(&steps, open_last, open_inside);
        let now = list.iter().map(|i| i.to_ms).max().unwrap_or(0) + now_after;
        let mirror = mirror_of("k", &list);
        prop_assert_eq!(mirror.len(), list.len());
        for (a, b) in windows {
            let (x, y) = (pick(&list, a), pick(&list, b));
            let (from, to) = (x.min(y), x.max(y).max(x.min(y) + 1));
            let count_to = to.min(now.max(from));
            let fast = mirror.availability(None, from, to, count_to, now);
            prop_assert_eq!(&mirror.availability(Some("k"), from, to, count_to, now), &fast);
            prop_assert!(mirror.availability(Some("x"), from, to, count_to, now).is_empty());
            let expected = reference(&list, from, to, now);
            prop_assert_eq!(fast.first().map(|(_, a)| a.clone()), expected.clone(),
                "window {}..{} now {}", from, to, now);
            prop_assert_eq!(mirror.availability_of("k", from, count_to, now),
                (!list.is_empty()).then(|| availability(&as_read(&list, now), from, count_to)));
            // The history as listed: the rows `store::read` gave, cut the same way.
            let read: Vec<Interval> = as_read(&list, now)
                .into_iter()
                .zip(&list)
                .filter(|(_, stored)| stored.from_ms < to && (stored.to_ms > from || stored.open))
                .map(|(i, _)| i)
                .collect();
            prop_assert_eq!(mirror.window("k", from, to, now), read);
        }
    }

    #[test]
    fn writes_leave_the_mirror_as_the_table(
        steps in prop::collection::vec((step(), 0u8..8), 1..40),
        trim_at in 0usize..40,
    ) {
        // The Book's writes as the cluster-eval thread makes them, with touches and
        // a trim between; the mirror against rows kept as the SQL statements do.
        let mut mirror = Mirror::default();
        let mut book = Book::default();
        let mut rows: Vec<Interval> = Vec::new();
        let mut now = DAY;
        for (n, (s, action)) in steps.iter().enumerate() {
            now += s.len;
            let mut writes = Vec::new();
            match action {
                0 => book.close("k", now, &mut writes),
                1 => {
                    mirror.touch(now);
                    for r in rows.iter_mut().filter(|r| r.open && r.to_ms < now) {
                        r.to_ms = now;
                    }
                }
                _ => book.record("k", Shape {
                    masters: masters(s.masters),
                    health: HistoryHealth::ALL[s.health],
                    incident: (s.incident > 0).then(|| format!("inc-{}", s.incident)),
                }, now - s.gap.abs() % 10_000, &mut writes),
            }
            mirror.apply(&writes, now);
            for w in &writes {
                match w {
                    Write::Close { at_ms, .. } => {
                        for r in rows.iter_mut().filter(|r| r.open) {
                            r.to_ms = *at_ms;
                            r.open = false;
                        }
                    }
                    Write::Open { from_ms, shape, .. } => {
                        let row = Interval {
                            from_ms: *from_ms,
                            to_ms: now.max(*from_ms),
                            open: true,
                            masters: Arc::new(Masters::from_text(&shape.masters.to_text())),
                            health: shape.health,
                            incident: shape.incident.as_deref().map(Arc::from),
                        };
                        rows.retain(|r| r.from_ms != *from_ms);
                        rows.push(row);
                        rows.sort_by_key(|r| r.from_ms);
                    }
                }
            }
            if n == trim_at {
                let cutoff = now - DAY;
                let gone: Vec<(String, i64)> = rows
                    .iter()
                    .filter(|r| r.to_ms < cutoff && !r.open)
                    .map(|r| ("k".to_owned(), r.from_ms))
                    .collect();
                rows.retain(|r| r.to_ms >= cutoff || r.open);
                mirror.remove(&gone);
            }
            prop_assert_eq!(mirror.window("k", i64::MIN, i64::MAX, now), as_read(&rows, now));
            for from in [DAY, now - DAY, now - 1] {
                prop_assert_eq!(
                    mirror.availability_of("k", from, now, now),
                    (!rows.is_empty()).then(|| availability(&as_read(&rows, now), from, now))
                );
            }
        }
    }
}

#[test]
fn a_master_change_on_the_window_start_counts_and_an_incident_over_midnight_counts_once() {
    let iv = |from: i64, to: i64, m: usize, h: HistoryHealth, inc: Option<&str>| Interval {
        from_ms: from,
        to_ms: to,
        open: false,
        masters: Arc::new(masters(m)),
        health: h,
        incident: inc.map(Arc::from),
    };
    use HistoryHealth::*;
    // a until midnight, then b; an incident from 22:00 to 02:00 across the next
    // midnight, with a restart gap inside it.
    let list = vec![
        iv(0, DAY, 1, Ok, None),
        iv(DAY, 2 * DAY - 2 * 3_600_000, 2, Ok, None),
        iv(
            2 * DAY - 2 * 3_600_000,
            2 * DAY - 3_600_000,
            2,
            Degraded,
            Some("i"),
        ),
        iv(
            2 * DAY + 600_000,
            2 * DAY + 2 * 3_600_000,
            2,
            Degraded,
            Some("i"),
        ),
        iv(2 * DAY + 2 * 3_600_000, 3 * DAY, 2, Ok, None),
    ];
    let m = mirror_of("k", &list);
    let day2 = m.availability_of("k", DAY, 2 * DAY, 3 * DAY).unwrap();
    assert_eq!(day2.master_changes, 1, "b took over at the window's start");
    let both = m.availability_of("k", DAY, 3 * DAY, 3 * DAY).unwrap();
    assert_eq!(
        both.incidents, 1,
        "one incident across midnight and the gap"
    );
    assert_eq!(both.incident_longest_ms, 4 * 3_600_000);
    assert_eq!(both.incident_total_ms, 4 * 3_600_000);
    assert_eq!(
        both.observed_ms,
        2 * DAY - 3_600_000 - 600_000,
        "the gap is not"
    );
    let day3 = m.availability_of("k", 2 * DAY, 3 * DAY, 3 * DAY).unwrap();
    assert_eq!(
        (day3.incidents, day3.incident_longest_ms),
        (1, 2 * 3_600_000 - 600_000),
        "from where it resumed after the gap"
    );
    assert_eq!(day3.master_changes, 0);
}
