//! The password fingerprint over real sockets, both directions: the connection thread
//! dials a fake server that speaks the real protocol (inbound), or the agent's web
//! server takes a socket the test dials as the server would (outbound), on a
//! `ManualClock`. A server whose AUTH_SUCCESS carries `fingerprintKey` gets each
//! reading with `authFingerprint` = `AuthPassword::fingerprint(key)` of the instance's
//! password; a server without a key (an older one) gets the same reading without it;
//! two servers get two fingerprints; the password itself reaches no server.

use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use tungstenite::WebSocket;
use vrrp_agent::clock::ManualClock;
use vrrp_agent::connection::ConnState;
use vrrp_agent::reader::{ReadingNote, TriggerSource};
use vrrp_agent::store::datadir::Identity;
use vrrp_agent::store::queue::Queue;
use vrrp_protocol::{AuthPassword, Reading, VrrpInstance, VrrpState};

use crate::in_process::{self, next, send, target, FakeServer, Got, Inbound};

const PASSWORD: &str = "s3cr3t51";
const KEY_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const KEY_B: &str = "ffeeddccbbaa99887766554433221100";

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn fingerprint(password: &str, key_hex: &str) -> String {
    AuthPassword::new(password).fingerprint(&bytes(key_hex))
}

/// A reading with a PASS instance (its password) and an instance without one.
fn reading(password: &str) -> Arc<Reading> {
    Arc::new(Reading {
        collected_at: "2026-11-21T00:00:00.000Z".into(),
        running: true,
        instances: vec![
            VrrpInstance {
                name: "VI_1".into(),
                state: VrrpState::Master,
                vrid: Some(51),
                auth_type: Some("pass".into()),
                auth_password: Some(AuthPassword::new(password)),
                ..Default::default()
            },
            VrrpInstance {
                name: "VI_2".into(),
                state: VrrpState::Master,
                vrid: Some(52),
                auth_type: Some("none".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    })
}

/// One inbound connection thread dialling `port`, its readings from `current`.
fn inbound(port: u16, client_id: &str, current: Arc<Mutex<Arc<Reading>>>) -> Inbound {
    Inbound::start(
        std::sync::Arc::new(ManualClock::starting_now()),
        target(&format!("http://127.0.0.1:{port}"), client_id, false),
        "fp-host",
        Queue::default(),
        move || current.lock().clone(),
    )
}

fn fingerprint_of(update: &Value, instance: usize) -> Option<&str> {
    update["instances"][instance]
        .get("authFingerprint")
        .and_then(Value::as_str)
}

/// `update` with the first instance's `authFingerprint` taken out.
fn without_fingerprint(update: &Value) -> Value {
    let mut stripped = update.clone();
    stripped["instances"][0]
        .as_object_mut()
        .unwrap()
        .remove("authFingerprint");
    stripped
}

#[test]
fn each_server_gets_its_own_fingerprint_and_an_older_server_none() {
    let current = Arc::new(Mutex::new(reading(PASSWORD)));
    let a = FakeServer::answering(
        json!({"clientId": "ca", "lastSyncTime": null, "fingerprintKey": KEY_A}),
    );
    let b = FakeServer::answering(
        json!({"clientId": "cb", "lastSyncTime": null, "fingerprintKey": KEY_B}),
    );
    // An older server: AUTH_SUCCESS as it always was.
    let old = FakeServer::answering(json!({"clientId": "co", "lastSyncTime": null}));
    // A server whose key is not hex: as an older one.
    let odd = FakeServer::answering(
        json!({"clientId": "cx", "lastSyncTime": null, "fingerprintKey": "not hex"}),
    );
    let conns: Vec<Inbound> = [(&a, "ca"), (&b, "cb"), (&old, "co"), (&odd, "cx")]
        .iter()
        .map(|(s, id)| inbound(s.port, id, current.clone()))
        .collect();
    for c in &conns {
        c.wait_state(ConnState::Connected);
    }
    let ua = a.msg("KEEPALIVED_UPDATE");
    let ub = b.msg("KEEPALIVED_UPDATE");
    let uo = old.msg("KEEPALIVED_UPDATE");
    let ux = odd.msg("KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ua, 0),
        Some(fingerprint(PASSWORD, KEY_A).as_str())
    );
    assert_eq!(
        fingerprint_of(&ub, 0),
        Some(fingerprint(PASSWORD, KEY_B).as_str())
    );
    assert_ne!(fingerprint_of(&ua, 0), fingerprint_of(&ub, 0));
    // No password, no fingerprint; no key, no fingerprint.
    assert_eq!(fingerprint_of(&ua, 1), None);
    assert_eq!(fingerprint_of(&uo, 0), None);
    assert_eq!(fingerprint_of(&ux, 0), None);
    // Nothing else differs: the reading is the one reading, the fingerprint is per
    // connection.
    assert_eq!(without_fingerprint(&ua), uo);
    assert_eq!(uo, ux);
    assert_eq!(ua["instances"][0]["authType"], "pass");
    assert!(current.lock().instances[0].auth_fingerprint.is_none());
    for u in [&ua, &ub, &uo, &ux] {
        assert!(!u.to_string().contains(PASSWORD), "{u}");
    }

    // The password changes and nothing else: every server gets the reading again, with
    // the fingerprint of the new password under its own key.
    let changed = reading("n3w-pass");
    *current.lock() = changed.clone();
    for c in &conns {
        c.inbox.note(ReadingNote {
            reading: changed.clone(),
            sources: vec![TriggerSource::Poll],
            actions: Vec::new(),
        });
    }
    let ua2 = a.msg("KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ua2, 0),
        Some(fingerprint("n3w-pass", KEY_A).as_str())
    );
    let ub2 = b.msg("KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ub2, 0),
        Some(fingerprint("n3w-pass", KEY_B).as_str())
    );
    // A server without a key sees the same changed reading: the change is in the
    // reading, not in the fingerprint.
    let uo2 = old.msg("KEEPALIVED_UPDATE");
    assert_eq!(uo2, uo);
    // The same reading once more: unchanged, so not sent before its 30 s.
    for c in &conns {
        c.inbox.note(ReadingNote {
            reading: changed.clone(),
            sources: vec![TriggerSource::Poll],
            actions: Vec::new(),
        });
    }
    a.expect_no_msg("KEEPALIVED_UPDATE");
}

const TOKEN: &str = "fingerprint-outbound-token-0123456789";

/// Outbound: the agent's web server (its `/ws/agent`) and its connection thread.
struct Outbound(in_process::Outbound);

impl Outbound {
    fn start(current: Arc<Mutex<Arc<Reading>>>) -> Outbound {
        let identity = Identity {
            client_id: "c1".into(),
            auth_token: TOKEN.into(),
        };
        Outbound(in_process::Outbound::start(
            "fp-host",
            Some(identity),
            move || current.lock().clone(),
        ))
    }

    /// Dials `/ws/agent` as the server does, answers AUTH with `auth_success`, and
    /// gives the first KEEPALIVED_UPDATE.
    fn session(&self, auth_success: Value) -> (WebSocket<TcpStream>, Value) {
        let mut ws = self.0.dial(&format!("/ws/agent?clientId=c1&token={TOKEN}"));
        let t0 = Instant::now();
        let update = loop {
            assert!(t0.elapsed() < Duration::from_secs(10), "no reading");
            match next(&mut ws, Duration::from_millis(20)) {
                Got::Msg(k, _) if k == "AUTH" => {
                    send(&mut ws, "AUTH_SUCCESS", auth_success.clone())
                }
                Got::Msg(k, update) if k == "KEEPALIVED_UPDATE" => break update,
                Got::Msg(..) | Got::Nothing => {}
                Got::Close(c, r) => panic!("socket closed: {c} {r}"),
            }
        };
        self.0.wait_state(ConnState::Connected);
        (ws, update)
    }
}

#[test]
fn outbound_the_server_that_dialled_gets_the_fingerprint_under_its_key() {
    let current = Arc::new(Mutex::new(reading(PASSWORD)));
    let agent = Outbound::start(current);
    let (mut ws, keyed) = agent.session(json!({"clientId": "c1", "fingerprintKey": KEY_A}));
    assert_eq!(
        fingerprint_of(&keyed, 0),
        Some(fingerprint(PASSWORD, KEY_A).as_str())
    );
    assert_eq!(fingerprint_of(&keyed, 1), None);
    assert!(!keyed.to_string().contains(PASSWORD));
    let _ = ws.close(None);
    // The server dials again, now as an older server: the next session has no key.
    let (_ws, plain) = agent.session(json!({"clientId": "c1"}));
    assert_eq!(fingerprint_of(&plain, 0), None);
    assert_eq!(without_fingerprint(&keyed), plain);
}
