//! The connection thread on a driven clock against a fake server that speaks the real
//! protocol over a real socket (it can misbehave as the real server cannot: stay silent
//! during the handshake, never ping). No test sleeps for a spec interval: the clock is
//! advanced, and the thread notices on its next short tick.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use tungstenite::Message;
use vrrp_agent::clock::{Clock, ManualClock};
use vrrp_agent::connection::ConnState;
use vrrp_agent::store::queue::Queue;
use vrrp_protocol::{ActivityEvent, Reading};

use crate::in_process::{target, FakeMode, FakeServer, Inbound, Seen};

/// The connection thread (`Inbound`) with what these tests drive on top.
struct Rig(Inbound);

impl std::ops::Deref for Rig {
    type Target = Inbound;
    fn deref(&self) -> &Inbound {
        &self.0
    }
}

impl Rig {
    /// The connection thread with a driven clock, a fixed jitter of 0.5 (1.5 s), and a
    /// stand-in for the reader thread that answers every trigger with a reading.
    fn start(port: u16, events: &[&str]) -> Rig {
        Rig::start_with(&format!("http://127.0.0.1:{port}"), false, events)
    }

    fn start_with(base_url: &str, allow_self_signed: bool, events: &[&str]) -> Rig {
        let clock = std::sync::Arc::new(ManualClock::starting_now());
        let mut q = Queue::default();
        for id in events {
            q.push(ActivityEvent {
                id: id.to_string(),
                occurred_at: clock.utc().to_rfc3339(),
                kind: "vrrp.state_changed".into(),
                ..Default::default()
            });
        }
        Rig(Inbound::start(
            clock,
            target(base_url, "c1", allow_self_signed),
            "test-host",
            q,
            || {
                Arc::new(Reading {
                    collected_at: "2026-11-21T00:00:00.000Z".into(),
                    ..Default::default()
                })
            },
        ))
    }

    fn advance_ms(&self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
    }

    /// The state stays `s` for a while (real time) although the thread is ticking.
    fn stays(&self, s: ConnState) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            assert_eq!(self.status.read().state, s);
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until the thread has scheduled its next attempt after a failure.
    fn wait_scheduled(&self) -> Instant {
        let t0 = Instant::now();
        loop {
            let st = self.status.read().clone();
            if let (ConnState::Disconnected, Some(at)) = (st.state, st.next_attempt) {
                return at;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "no attempt scheduled: {st:?}"
            );
            thread::sleep(Duration::from_millis(5));
        }
    }
}

#[test]
fn handshake_timeout_then_the_ladder_5_10_30_60_plus_jitter() {
    let fake = FakeServer::start(FakeMode::Silent);
    let rig = Rig::start(fake.port, &[]);
    fake.expect_accept();
    rig.wait_state(ConnState::Connecting);
    rig.advance_ms(4_900);
    rig.stays(ConnState::Connecting);
    rig.advance_ms(100);
    let at = rig.wait_scheduled();
    let st = rig.status.read().clone();
    assert!(st.last_error.as_deref().unwrap().contains("5 s"), "{st:?}");
    assert_eq!(at - rig.clock.now(), Duration::from_millis(6_500));
    // Each wait is exactly its step plus the 1.5 s jitter, then the handshake times out.
    for step in [6_500u64, 11_500, 31_500, 61_500, 61_500] {
        let at = rig.wait_scheduled();
        assert_eq!(
            at - rig.clock.now(),
            Duration::from_millis(step),
            "step {step}"
        );
        rig.advance_ms(step - 100);
        fake.expect_no_accept();
        rig.advance_ms(100);
        fake.expect_accept();
        rig.wait_state(ConnState::Connecting);
        rig.advance_ms(5_000);
    }
    assert_eq!(rig.status.read().attempts, 6);
}

#[test]
fn a_manual_connect_replaces_the_queued_attempt_and_waits_for_the_handshake() {
    let fake = FakeServer::start(FakeMode::Silent);
    let rig = Rig::start(fake.port, &[]);
    fake.expect_accept();
    rig.wait_state(ConnState::Connecting);
    rig.advance_ms(5_000);
    rig.wait_scheduled(); // queued at +6.5 s
                          // Two callers at once: one dial, both answered by it.
    let (i1, i2) = (rig.inbox.clone(), rig.inbox.clone());
    let c1 = thread::spawn(move || i1.connect(Duration::from_secs(20)));
    fake.expect_accept();
    rig.wait_state(ConnState::Connecting);
    let c2 = thread::spawn(move || i2.connect(Duration::from_secs(20)));
    fake.expect_no_accept();
    rig.advance_ms(5_000);
    for c in [c1, c2] {
        let r = c.join().unwrap();
        assert!(!r.connected && r.error.unwrap().contains("5 s"));
    }
    // One timer: the replaced attempt (+6.5 s) never fires; the ladder's next (+11.5 s) does.
    let at = rig.wait_scheduled();
    assert_eq!(at - rig.clock.now(), Duration::from_millis(11_500));
    rig.advance_ms(6_500);
    fake.expect_no_accept();
    rig.advance_ms(5_000);
    fake.expect_accept();
    assert_eq!(rig.status.read().attempts, 3);
}

#[test]
fn auth_reading_activity_ack_and_dead_after_35_s_without_a_ping() {
    let fake = FakeServer::start(FakeMode::Auth);
    let rig = Rig::start(fake.port, &["ev-1", "ev-2"]);
    fake.expect_accept();
    let Some(Seen::Uri(uri)) = fake.next(Duration::from_secs(10)) else {
        panic!("no upgrade")
    };
    assert_eq!(uri, "/ws/agent?clientId=c1&token=tok-secret-123");
    let auth = fake.msg("AUTH");
    assert_eq!(
        auth,
        json!({"hostname": "test-host", "version": "9.9.9-test", "capabilities": ["vrrp"]})
    );
    rig.wait_state(ConnState::Connected);
    // The whole queue is offered and an immediate reading is sent.
    let batch = fake.msg("ACTIVITY");
    let ids: Vec<_> = batch["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["ev-1", "ev-2"]);
    fake.msg("KEEPALIVED_UPDATE");
    fake.send(Message::text(
        json!({"type": "ACTIVITY_ACK", "payload": {"ids": ["ev-1"]}}).to_string(),
    ));
    let t0 = Instant::now();
    while rig.queue.lock().len() != 1 {
        assert!(t0.elapsed() < Duration::from_secs(10), "ack not applied");
        thread::sleep(Duration::from_millis(5));
    }
    // REQUEST_STATE_UPDATE: read and sent although unchanged.
    fake.send(Message::text(
        json!({"type": "REQUEST_STATE_UPDATE", "payload": {}}).to_string(),
    ));
    fake.msg("KEEPALIVED_UPDATE");
    // A ping at 20 s moves the deadline to 55 s; the pong goes back.
    rig.advance_ms(20_000);
    fake.ping();
    // 30 s after the first reading the unchanged reading goes out again.
    rig.advance_ms(10_000);
    fake.msg("KEEPALIVED_UPDATE");
    // "ev-2" went out at 0 s unacknowledged: offered again at 60 s, but the ping
    // deadline (55 s) comes first.
    rig.advance_ms(24_900);
    rig.stays(ConnState::Connected);
    rig.advance_ms(100);
    let at = rig.wait_scheduled();
    let st = rig.status.read().clone();
    assert!(
        st.last_error.as_deref().unwrap().contains("no ping"),
        "{st:?}"
    );
    // The ladder restarted at AUTH_SUCCESS: the first wait is 5 s + jitter.
    assert_eq!(at - rig.clock.now(), Duration::from_millis(6_500));
    rig.advance_ms(6_500);
    fake.expect_accept();
    rig.wait_state(ConnState::Connected);
    let batch = fake.msg("ACTIVITY");
    assert_eq!(batch["events"][0]["id"], "ev-2", "re-offered on reconnect");
}

#[test]
fn unacknowledged_batch_is_offered_again_after_one_minute() {
    let fake = FakeServer::start(FakeMode::Auth);
    let rig = Rig::start(fake.port, &["ev-a"]);
    rig.wait_state(ConnState::Connected);
    assert_eq!(fake.msg("ACTIVITY")["events"][0]["id"], "ev-a");
    fake.msg("KEEPALIVED_UPDATE");
    rig.advance_ms(30_000);
    fake.ping();
    // The 30 s resend, not an offer: "ev-a" is not due before 60 s.
    fake.msg("KEEPALIVED_UPDATE");
    rig.advance_ms(29_900);
    fake.ping();
    rig.advance_ms(100);
    // At 60 s: offered again, on the same connection.
    assert_eq!(fake.msg("ACTIVITY")["events"][0]["id"], "ev-a");
    assert_eq!(rig.status.read().attempts, 1);
}

/// The self-signed certificate for `localhost` in tests/fixtures/tls.
fn self_signed() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let (cert, key) = (
        dir.join("localhost.cert.pem"),
        dir.join("localhost.key.pem"),
    );
    let certs = vec![CertificateDer::from_pem_file(&cert).unwrap()];
    let key = PrivateKeyDer::from_pem_file(&key).unwrap();
    Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    )
}

#[test]
fn wss_checks_the_certificate_unless_self_signed_is_allowed_for_this_dial() {
    let cfg = self_signed();
    // Verified: the self-signed certificate is refused, nothing is upgraded.
    let fake = FakeServer::start_with(FakeMode::Auth, Some(cfg.clone()));
    let strict = Rig::start_with(&format!("https://localhost:{}", fake.port), false, &[]);
    fake.expect_accept();
    strict.wait_scheduled();
    let err = strict.status.read().last_error.clone().unwrap();
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert!(!matches!(
        fake.next(Duration::from_millis(200)),
        Some(Seen::Uri(_))
    ));
    // Allowed for this agent: the same server is accepted, in the same process (the
    // decision is per dial, not a process-wide switch).
    let fake2 = FakeServer::start_with(FakeMode::Auth, Some(cfg));
    let lax = Rig::start_with(&format!("https://localhost:{}", fake2.port), true, &[]);
    lax.wait_state(ConnState::Connected);
    assert_eq!(fake2.msg("AUTH")["capabilities"], json!(["vrrp"]));
    fake2.msg("KEEPALIVED_UPDATE");
    // And the strict one still refuses on its next attempt.
    strict.advance_ms(6_500);
    fake.expect_accept();
    let t0 = Instant::now();
    while strict.status.read().attempts < 2 || strict.status.read().state != ConnState::Disconnected
    {
        assert!(t0.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(5));
    }
    assert!(strict
        .status
        .read()
        .last_error
        .clone()
        .unwrap()
        .to_lowercase()
        .contains("certificate"));
    // The HTTP calls decide per request too: registration verifies unless allowed, the
    // reachability check always tolerates the certificate.
    use vrrp_agent::registration::serverapi::{self, Answer};
    let url = format!("https://localhost:{}", fake2.port);
    match serverapi::register(&url, "t", "h", false) {
        Answer::Nothing(e) => assert!(e.to_lowercase().contains("certificate"), "{e}"),
        Answer::Status(s, _) => panic!("a verified call got an answer {s}"),
    }
    if let Answer::Nothing(e) = serverapi::register(&url, "t", "h", true) {
        assert!(!e.to_lowercase().contains("certificate"), "{e}");
    }
    let p = serverapi::ping(&url);
    assert!(
        !p["error"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .contains("certificate"),
        "{p}"
    );
}
