//! The history's pure parts: the book's writes, clipping, and the availability
//! arithmetic, on hand-made intervals (no clock, no database).

use super::availability::availability;
use super::*;

const S: i64 = 1000;

fn masters(ids: &[&str]) -> Masters {
    Masters {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        hosts: ids.iter().map(|s| format!("host-{s}")).collect(),
    }
}

fn shape(ids: &[&str], health: HistoryHealth, incident: Option<&str>) -> Shape {
    Shape {
        masters: masters(ids),
        health,
        incident: incident.map(str::to_owned),
    }
}

fn iv(from: i64, to: i64, ids: &[&str], health: HistoryHealth, incident: Option<&str>) -> Interval {
    Interval {
        from_ms: from * S,
        to_ms: to * S,
        open: false,
        masters: Arc::new(masters(ids)),
        health,
        incident: incident.map(Arc::from),
    }
}

use HistoryHealth::*;

#[test]
fn the_book_writes_only_changes_and_never_goes_back_in_time() {
    let mut book = Book::default();
    let mut out = Vec::new();
    book.record("k", shape(&["a"], Ok, None), 10 * S, &mut out);
    assert_eq!(out.len(), 1, "the first state opens an interval");
    out.clear();
    book.record("k", shape(&["a"], Ok, None), 20 * S, &mut out);
    assert!(out.is_empty(), "the same state writes nothing");
    book.record("k", shape(&["b"], Ok, None), 30 * S, &mut out);
    assert_eq!(
        out,
        vec![
            Write::Close {
                key: "k".into(),
                at_ms: 30 * S
            },
            Write::Open {
                key: "k".into(),
                from_ms: 30 * S,
                shape: shape(&["b"], Ok, None)
            }
        ]
    );
    out.clear();
    // A change first seen before the open interval began starts with it.
    book.record("k", shape(&["b"], NoMaster, Some("i1")), 25 * S, &mut out);
    assert!(matches!(out[0], Write::Close { at_ms, .. } if at_ms == 30 * S));
    assert!(matches!(out[1], Write::Open { from_ms, .. } if from_ms == 30 * S));
    out.clear();
    book.close("k", 40 * S, &mut out);
    assert_eq!(
        out,
        vec![Write::Close {
            key: "k".into(),
            at_ms: 40 * S
        }]
    );
    out.clear();
    book.close("k", 50 * S, &mut out);
    assert!(out.is_empty(), "a closed cluster has nothing to close");
}

#[test]
fn clipping_cuts_to_the_window_and_drops_what_is_outside() {
    let list = vec![
        iv(0, 10, &["a"], Ok, None),
        iv(10, 20, &["b"], Ok, None),
        iv(20, 30, &["b"], Degraded, Some("i")),
    ];
    let clipped = clip(&list, 5 * S, 20 * S);
    assert_eq!(clipped.len(), 2);
    assert_eq!((clipped[0].from_ms, clipped[0].to_ms), (5 * S, 10 * S));
    assert_eq!((clipped[1].from_ms, clipped[1].to_ms), (10 * S, 20 * S));
    let json = interval_json(&clipped[1]);
    assert_eq!(json["master"], "host-b");
    assert_eq!(json["health"], "ok");
    assert_eq!(json["from"], "1970-01-01T00:00:10.000Z");
}

#[test]
fn availability_sums_health_masters_and_incidents() {
    // 0-100 a alone ok; 100-110 no master (incident i1); 110-200 b ok;
    // 200-230 split brain a+b (incident i2); 230-260 b degraded (still i2);
    // gap 260-300 (server stopped); 300-400 b degraded (i2 across the restart).
    let list = vec![
        iv(0, 100, &["a"], Ok, None),
        iv(100, 110, &[], NoMaster, Some("i1")),
        iv(110, 200, &["b"], Ok, None),
        iv(200, 230, &["a", "b"], SplitBrain, Some("i2")),
        iv(230, 260, &["b"], Degraded, Some("i2")),
        iv(300, 400, &["b"], Degraded, Some("i2")),
    ];
    let a = availability(&list, 0, 400 * S);
    assert_eq!(a.window_ms, 400 * S);
    assert_eq!(a.observed_ms, 360 * S, "the gap is not observed");
    assert_eq!(a.health_ms[Ok.index()], 190 * S);
    assert_eq!(a.health_ms[NoMaster.index()], 10 * S);
    assert_eq!(a.health_ms[SplitBrain.index()], 30 * S);
    assert_eq!(a.health_ms[Degraded.index()], 130 * S);
    // a -> (none) -> b counts once, b after the split brain once; b across the
    // restart is the same master.
    assert_eq!(a.master_changes, 2);
    assert_eq!(a.incidents, 2);
    assert_eq!(a.incident_total_ms, 10 * S + 200 * S);
    assert_eq!(
        a.incident_longest_ms,
        200 * S,
        "the restart is inside the incident"
    );
    assert_eq!(a.one_master_ms, (100 + 90 + 30 + 100) * S);
    let json = serde_json::to_value(a.view("k".into())).unwrap();
    assert_eq!(json["seconds"]["ok"], 190.0);
    assert_eq!(json["unobservedSeconds"], 40.0);
    assert_eq!(json["incidents"]["count"], 2);
    assert!((json["oneMasterShare"].as_f64().unwrap() - 320.0 / 360.0).abs() < 1e-9);
}

#[test]
fn availability_clips_to_the_window() {
    let list = vec![
        iv(0, 100, &["a"], Ok, None),
        iv(100, 150, &["a"], Degraded, Some("i1")),
        iv(150, 300, &["b"], Ok, None),
    ];
    // Window 120-200: 30 s of the incident, then b takes over at 150.
    let a = availability(&list, 120 * S, 200 * S);
    assert_eq!(a.observed_ms, 80 * S);
    assert_eq!(a.health_ms[Degraded.index()], 30 * S);
    assert_eq!(a.incidents, 1);
    assert_eq!(
        a.incident_total_ms,
        30 * S,
        "only the part inside the window"
    );
    assert_eq!(a.master_changes, 1);
    // A change before the window is not counted in it.
    let b = availability(&list, 160 * S, 200 * S);
    assert_eq!(b.master_changes, 0);
    assert_eq!(b.incidents, 0);
    assert_eq!(b.one_master_ms, 40 * S);
    // Unreachable: the confirmed master is kept but nobody can say it is one.
    let c = availability(&[iv(0, 10, &["a"], Unreachable, Some("i"))], 0, 10 * S);
    assert_eq!(c.one_master_ms, 0);
    assert_eq!(c.health_ms[Unreachable.index()], 10 * S);
    // Nothing observed: no share rather than a made-up one.
    let none = availability(&[], 0, 10 * S);
    assert!(none.view("k".into()).one_master_share.is_none());
    assert_eq!(none.view("k".into()).unobserved_seconds, 10.0);
}

#[test]
fn masters_round_trip_through_their_stored_text() {
    let m = masters(&["id-1", "id-2"]);
    assert_eq!(Masters::from_text(&m.to_text()), m);
    assert_eq!(Masters::from_text("not json"), Masters::default());
}
