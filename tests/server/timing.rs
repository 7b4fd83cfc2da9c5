//! Time-driven behaviour of the sockets, with the server run in-process on a
//! clock the test moves: no test waits for a spec interval.

use crate::harness::*;
use chrono::Duration as Span;
use serde_json::json;
use std::time::Duration;

#[test]
fn an_agent_that_sends_no_auth_within_5_s_is_closed() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.agent_socket(&agent);
    clock.advance(Span::milliseconds(4900));
    assert!(
        ws.next(Duration::from_millis(1200)).is_none(),
        "still open just before 5 s"
    );
    clock.advance(Span::milliseconds(100));
    assert_eq!(
        ws.ending(),
        Ending::Close(4001, "Authentication timed out".into())
    );
    // One that does send AUTH in time stays.
    let mut ok = server.agent_socket(&agent);
    clock.advance(Span::seconds(4));
    ok.send("AUTH", json!({ "hostname": "h", "version": "1" }));
    ok.expect("AUTH_SUCCESS");
    clock.advance(Span::seconds(10));
    assert!(
        ok.next(Duration::from_millis(1200)).is_none(),
        "authenticated: no window any more"
    );
}

#[test]
fn sockets_that_answer_pings_stay_and_a_silent_one_is_terminated() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut agent_ws = server.connect_agent(&agent);
    let mut silent = server.dashboard(&admin);
    silent.expect("ACTIVITY_UPDATE");
    let mut alive = server.dashboard(&admin);
    alive.expect("ACTIVITY_UPDATE");
    // Three heartbeats: the ones that read (and so answer pings) stay.
    for _ in 0..3 {
        clock.advance(Span::seconds(30));
        // Reading lets tungstenite answer the ping with a pong.
        let _ = alive.next(Duration::from_millis(1200));
        let _ = agent_ws.next(Duration::from_millis(100));
    }
    // The dashboard that never read never answered: terminated without a close frame.
    assert_eq!(silent.ending(), Ending::Dropped);
    alive
        .ws
        .send(tungstenite::Message::Ping(Vec::new().into()))
        .unwrap();
    let online = server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0]["status"].clone();
    assert_eq!(
        online, "online",
        "the agent that answered pings is still connected"
    );
}
