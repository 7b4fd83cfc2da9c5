//! A fatal error (a thread dying of a panic) in the real agent code, in a child
//! process: this test binary run again with `VRRP_AGENT_FATAL_CHILD` set. Pending
//! queue writes must be flushed, one fatal line logged, and the process must exit 1
//! after 250 ms.

use std::path::Path;
use std::time::{Duration, Instant};
use vrrp_agent::config::{LogFormat, LogLevel};
use vrrp_agent::store::datadir::DataDir;
use vrrp_agent::store::persist;
use vrrp_agent::store::queue::{ActivityQueue, Queue};
use vrrp_agent::{fatal, logging};
use vrrp_protocol::ActivityEvent;

fn child(dir: &str) -> ! {
    logging::init(LogLevel::Info, LogFormat::Json);
    let dir = DataDir::open(Path::new(dir)).unwrap();
    let (tx, rx) = persist::channel();
    let queue = ActivityQueue::new(
        Queue::from_events(Vec::new(), chrono::Utc::now()),
        tx.clone(),
    );
    let (handle, _thread) = persist::spawn(dir, queue.clone(), tx, rx).unwrap();
    fatal::flush_on_fatal(move |within| {
        handle.flush(within);
    });
    // Two events inside the 1 s write window: not on disk yet.
    let event = |id: &str| ActivityEvent {
        id: id.into(),
        occurred_at: chrono::Utc::now().to_rfc3339(),
        kind: "keepalived.stopped".into(),
        ..Default::default()
    };
    queue.push(vec![event("pending-1"), event("pending-2")]);
    let _ = std::thread::spawn(|| fatal::guard("worker", || panic!("a broken invariant"))).join();
    // The fatal path ends the process; the parent's deadline catches one that does not.
    loop {
        std::thread::park();
    }
}

/// Runs `cmd`, waiting for its exit at most `limit` (then it is killed): a child
/// whose fatal path is broken would otherwise never end. (exit code, stderr)
fn output_within(mut cmd: std::process::Command, limit: Duration) -> (Option<i32>, String) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        code,
        std::fs::read_to_string(err.path()).unwrap_or_default(),
    )
}

#[test]
fn a_fatal_error_flushes_pending_events_and_exits_1_after_250_ms() {
    if let Ok(dir) = std::env::var("VRRP_AGENT_FATAL_CHILD") {
        child(&dir);
    }
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "fatal::a_fatal_error_flushes_pending_events_and_exits_1_after_250_ms",
        "--nocapture",
    ])
    .env("VRRP_AGENT_FATAL_CHILD", dir.path());
    let (code, stderr) = output_within(cmd, Duration::from_secs(10));
    let elapsed = started.elapsed();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        elapsed >= Duration::from_millis(250),
        "exited after {elapsed:?}"
    );
    let fatal: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("\"level\":\"fatal\""))
        .collect();
    assert_eq!(fatal.len(), 1, "{stderr}");
    assert!(fatal[0].contains("thread worker failed"), "{}", fatal[0]);
    let queue = std::fs::read_to_string(dir.path().join("queue.json"))
        .expect("queue.json written before the exit");
    assert!(
        queue.contains("pending-1") && queue.contains("pending-2"),
        "{queue}"
    );
}
