//! Outbound mode's timing on a driven clock: the agent's real web server and real
//! connection thread run in-process on a `ManualClock`, and the test dials them over
//! real WebSockets as the server would. Nothing here sleeps for a spec interval: the
//! clock is advanced and the threads notice on their next short tick.

use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tungstenite::Message;
use vrrp_agent::connection::outbound;
use vrrp_agent::connection::ConnState;
use vrrp_agent::store::datadir::Identity;
use vrrp_protocol::Reading;
use vrrp_test_support::ws_timed_out;

use crate::in_process::{next, send, Got, Outbound};

const TOKEN: &str = "driven-clock-token-0123456789abcdef";

struct Rig(Outbound);

impl Deref for Rig {
    type Target = Outbound;
    fn deref(&self) -> &Outbound {
        &self.0
    }
}

impl Rig {
    /// The web server (outbound routes only) and the connection thread on one driven
    /// clock; a stand-in reader answers every trigger with a reading at once, each
    /// with its own `collectedAt`.
    fn start(identity: Option<Identity>) -> Rig {
        let mut n = 0u64;
        Rig(Outbound::start("clock-host", identity, move || {
            n += 1;
            Arc::new(Reading {
                collected_at: format!("reading-{n}"),
                ..Default::default()
            })
        }))
    }
}

#[test]
fn registration_times_out_after_10_s_of_the_agents_clock() {
    let rig = Rig::start(None);
    // The timeout starts before the upgrade is answered, so advancing right after the
    // dial counts in full.
    let mut ws = rig.dial("/ws/register");
    // Real time passes, the driven clock does not: nothing happens.
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock
        .advance(outbound::REGISTRATION_TIMEOUT - Duration::from_millis(100));
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock.advance(Duration::from_millis(100));
    assert_eq!(
        next(&mut ws, Duration::from_secs(5)),
        Got::Close(4001, "Registration timed out".into())
    );
    assert_eq!(outbound::REGISTRATION_TIMEOUT, Duration::from_secs(10));
}

#[test]
fn server_session_needs_auth_success_in_5_s_then_runs_with_the_ping_deadline() {
    let rig = Rig::start(Some(Identity {
        client_id: "c1".into(),
        auth_token: TOKEN.into(),
    }));
    let path = format!("/ws/agent?clientId=c1&token={TOKEN}");

    // AUTH goes out first; without AUTH_SUCCESS within 5 s the socket is closed and
    // no session starts.
    let mut ws = rig.dial(&path);
    let Got::Msg(k, auth) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no AUTH")
    };
    assert_eq!(k, "AUTH");
    assert_eq!(
        auth,
        json!({ "hostname": "clock-host", "version": "9.9.9-test", "capabilities": ["vrrp"] })
    );
    rig.clock.advance(Duration::from_millis(4900));
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock.advance(Duration::from_millis(100));
    assert!(matches!(
        next(&mut ws, Duration::from_secs(5)),
        Got::Close(1000, _)
    ));
    assert_eq!(rig.status.read().state, ConnState::Disconnected);

    // With AUTH_SUCCESS the connection thread runs the session: a reading at once,
    // another on REQUEST_STATE_UPDATE.
    let mut ws = rig.dial(&path);
    assert!(matches!(next(&mut ws, Duration::from_secs(5)), Got::Msg(k, _) if k == "AUTH"));
    send(&mut ws, "AUTH_SUCCESS", json!({ "clientId": "c1" }));
    let Got::Msg(k, r1) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no reading")
    };
    assert_eq!(k, "KEEPALIVED_UPDATE");
    rig.wait_state(ConnState::Connected);
    send(&mut ws, "REQUEST_STATE_UPDATE", json!({}));
    let Got::Msg(k, r2) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no second reading")
    };
    assert_eq!(k, "KEEPALIVED_UPDATE");
    assert_ne!(r1["collectedAt"], r2["collectedAt"]);

    // No ping within 35 s of the agent's clock: the agent ends the session.
    rig.clock.advance(Duration::from_secs(20));
    ws.send(Message::Ping(Vec::new().into())).unwrap();
    // The pong says the agent took the ping at 20 s of its clock.
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(5), "no pong");
        match ws.read() {
            Ok(Message::Pong(_)) => break,
            Ok(_) => {}
            Err(e) if ws_timed_out(&e) => {}
            Err(e) => panic!("socket failed: {e}"),
        }
    }
    rig.clock.advance(Duration::from_secs(20));
    // The ping at 20 s keeps it alive past 35 s ...
    loop {
        match next(&mut ws, Duration::from_millis(300)) {
            Got::Msg(k, _) => assert_eq!(k, "KEEPALIVED_UPDATE"),
            Got::Nothing => break,
            Got::Close(c, r) => panic!("closed early: {c} {r}"),
        }
    }
    // ... until 35 s after it.
    rig.clock.advance(Duration::from_secs(15));
    loop {
        match next(&mut ws, Duration::from_secs(5)) {
            Got::Msg(k, _) => assert_eq!(k, "KEEPALIVED_UPDATE"),
            Got::Close(..) => break,
            Got::Nothing => panic!("not closed after 35 s without a ping"),
        }
    }
    rig.wait_state(ConnState::Disconnected);
}
