//! Fault: the server's data directory runs out of space while an agent sends.
//! Reads go on, writes get a clear 503, the log says so once per streak, no
//! event is acknowledged that was not stored, and writes come back by themselves.
//! The data directory is a small tmpfs mounted by the test (needs root, as the lab
//! tests do).

use crate::harness::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        let status = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .expect("mount(8)");
        assert!(status.success(), "mounting a tmpfs needs root");
        SmallDisk(at.to_owned())
    }

    /// Fills what is left with a file; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 16 * 1024];
        loop {
            if f.write_all(&block).is_err() {
                break;
            }
        }
        // Down to the last byte, so the database's next page does not fit.
        while f.write_all(&[0]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

fn batch(ids: &BTreeSet<String>) -> Value {
    let padding = "x".repeat(2048);
    let events: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "keepalived.disk_test",
                          "level": "info", "subject": {}, "data": { "padding": padding } }))
        .collect();
    json!({ "events": events })
}

/// Sends the pending ids and removes those acknowledged; whether an ack came.
fn offer(
    ws: &mut Ws,
    pending: &mut BTreeSet<String>,
    acked: &mut Vec<String>,
    wait: Duration,
) -> bool {
    ws.send("ACTIVITY", batch(pending));
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        match ws.next(Duration::from_millis(100)) {
            Some(Ok(m)) if m["type"] == "ACTIVITY_ACK" => {
                for id in m["payload"]["ids"].as_array().unwrap() {
                    let id = id.as_str().unwrap().to_owned();
                    pending.remove(&id);
                    acked.push(id);
                }
                return true;
            }
            Some(Err(e)) => panic!("agent socket ended: {e:?}"),
            _ => {}
        }
    }
    false
}

/// Lines at info level and above (the harness logs at debug) containing `needle`.
fn lines_with(server: &Server, needle: &str) -> usize {
    parse_log(&server.log_text())
        .iter()
        .filter(|l| l["level"] != "debug" && l["level"] != "trace")
        .filter(|l| l["msg"].as_str().is_some_and(|m| m.contains(needle)))
        .count()
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root mounts a small file system; --features test-lab (scripts/test.sh)"
)]
fn a_full_data_disk_refuses_writes_clearly_and_recovers_by_itself() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Lab);
    let launch = Launch::new();
    let disk = SmallDisk::mount(&launch.data_dir(), "6m");
    let server = launch.start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "disk");
    let mut ws = server.connect_agent(&agent);
    let mut pending = BTreeSet::new();
    let mut acked = Vec::new();
    let mut next = 0;
    let mut new_events = |pending: &mut BTreeSet<String>, n: usize| {
        for _ in 0..n {
            next += 1;
            pending.insert(format!("disk-{next:05}"));
        }
    };
    new_events(&mut pending, 10);
    assert!(offer(
        &mut ws,
        &mut pending,
        &mut acked,
        Duration::from_secs(5)
    ));

    let filler = disk.fill();
    // The WAL may still have room from before; keep sending until a batch is refused.
    let mut refused = false;
    for _ in 0..200 {
        new_events(&mut pending, 10);
        if !offer(&mut ws, &mut pending, &mut acked, Duration::from_secs(2)) {
            refused = true;
            break;
        }
    }
    assert!(
        refused,
        "a batch went unacknowledged once the disk was full"
    );
    // Offered again, as the agent does: still not acknowledged, and not logged again.
    for _ in 0..3 {
        assert!(!offer(
            &mut ws,
            &mut pending,
            &mut acked,
            Duration::from_secs(1)
        ));
    }
    let write = server.post("/api/v1/tokens", Auth::Cookie(&admin), "{}");
    assert_eq!(write.status, 503, "{:?}", write.body);
    assert!(
        write.error().starts_with("Storage full"),
        "{}",
        write.error()
    );
    // Reads go on.
    assert_eq!(
        server.get("/api/v1/clients", Auth::Cookie(&admin)).status,
        200
    );
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
    let full_lines = "disk holding the data directory is full";
    assert_eq!(
        lines_with(&server, full_lines),
        1,
        "one line per streak:\n{}",
        server.log_text()
    );
    assert_eq!(
        lines_with(&server, "Cannot store activity"),
        0,
        "{}",
        server.log_text()
    );

    std::fs::remove_file(filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "writes did not come back");
        offer(&mut ws, &mut pending, &mut acked, Duration::from_secs(2));
    }
    assert_eq!(lines_with(&server, "Database writes work again"), 1);
    assert_eq!(
        server
            .post("/api/v1/tokens", Auth::Cookie(&admin), "{}")
            .status,
        200
    );

    // Every acknowledged event is stored, once.
    let conn =
        rusqlite::Connection::open(server.launch.data_dir().join("vrrp-monitor.db")).unwrap();
    for id in &acked {
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM activity WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1, "{id}");
    }
    drop(conn);
    let (status, _launch) = server.stop();
    assert!(status.success());
    drop(disk);
}
