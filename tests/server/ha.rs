//! A server pair's webhook rule on one server: while it does not
//! hold `ha.vip` it records events but sends no webhook; when the VIP arrives
//! (the test hook stands in for keepalived moving it) it sends the events of
//! the last `ha.handover_seconds` it had not sent, then every new one; when the
//! VIP leaves it stops again. `GET /api/v1/ha` says active or standby.

use crate::harness::{Auth, Launch};
use crate::heartbeat::Receiver;
use serde_json::json;
use std::time::Duration;

#[test]
fn only_the_vip_holder_sends_webhooks_and_a_new_holder_sends_the_window() {
    let receiver = Receiver::start(200);
    let launch = Launch::new().env("SVC_TEST_HOOKS", "1").config(
        // TEST-NET-1: on no interface of this machine, so the server starts standby.
        "ha:\n  vip: 192.0.2.222\n  handover_seconds: 30\n",
    );
    let (server, clock) = launch.start_in_process();
    let admin = server.admin();
    let role = |server: &crate::harness::Server| {
        server.get("/api/v1/ha", Auth::Bearer(&admin)).body["role"].clone()
    };
    assert_eq!(role(&server), "standby");
    let hook = server.post(
        "/api/v1/webhooks",
        Auth::Bearer(&admin),
        &json!({
            "name": "pair",
            "url": format!("http://127.0.0.1:{}/hook", receiver.port),
            "minLevel": "trace",
            "bodyTemplate": "{\"id\": \"{{event.id}}\", \"kind\": \"{{event.kind}}\"}",
        })
        .to_string(),
    );
    assert_eq!(hook.status, 201, "{:?}", hook.body);

    // Standby: an event older than the window and one inside it, none sent.
    let _old = server.register_agent(&admin, "pair-old");
    clock.advance(chrono::Duration::seconds(40));
    let _new = server.register_agent(&admin, "pair-new");
    receiver.assert_quiet(0, Duration::from_millis(800));
    let stored = server.get("/api/v1/activity?limit=50", Auth::Bearer(&admin));
    assert!(
        stored.body.to_string().contains("pair-new"),
        "recorded as always"
    );

    // The VIP arrives: the window's event goes out, the older one does not.
    let forced = server.post(
        "/api/v1/test-hooks/ha/vip",
        Auth::Bearer(&admin),
        r#"{"held": true}"#,
    );
    assert_eq!(forced.status, 200, "{:?}", forced.body);
    let hits = receiver.wait_for(1);
    receiver.assert_quiet(1, Duration::from_millis(500));
    assert_eq!(hits[0].body["kind"], "client.registered", "{:?}", hits[0]);
    assert_eq!(role(&server), "active");

    // Active: live events are sent at once.
    let _live = server.register_agent(&admin, "pair-live");
    receiver.wait_for(2);

    // The VIP leaves: nothing more.
    server.post(
        "/api/v1/test-hooks/ha/vip",
        Auth::Bearer(&admin),
        r#"{"held": false}"#,
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while role(&server) != "standby" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    let _later = server.register_agent(&admin, "pair-later");
    receiver.assert_quiet(2, Duration::from_millis(800));
}

#[test]
fn without_a_vip_the_server_is_active_and_the_hook_is_off() {
    let (server, _clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let ha = server.get("/api/v1/ha", Auth::Bearer(&admin)).body;
    assert_eq!(ha["role"], "active");
    assert_eq!(ha["configured"], false);
    let a = server.post(
        "/api/v1/test-hooks/ha/vip",
        Auth::Bearer(&admin),
        r#"{"held": false}"#,
    );
    assert_eq!(a.status, 404);
}
