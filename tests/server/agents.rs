//! The server side of agents over real HTTP and WebSocket: tokens, registration,
//! the agent socket's stages, readings, activity, clients and the dashboard feed.

use crate::harness::*;
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

#[test]
fn registration_tokens() {
    let server = Server::start();
    let admin = server.admin();
    let a = server.post(
        "/api/v1/tokens",
        Auth::Cookie(&admin),
        &json!({ "displayName": "x".repeat(101) }).to_string(),
    );
    assert_eq!(
        (a.status, a.error()),
        (400, "displayName: must be at most 100 characters")
    );
    let a = server.post(
        "/api/v1/tokens",
        Auth::Cookie(&admin),
        r#"{"inboundAllowedIp": "10.0.0.0/40"}"#,
    );
    assert_eq!(
        (a.status, a.error()),
        (
            400,
            "inboundAllowedIp: must be an IPv4 address or CIDR network"
        )
    );
    assert_eq!(server.post("/api/v1/tokens", Auth::None, "{}").status, 401);
    let a = server.post(
        "/api/v1/tokens",
        Auth::Cookie(&admin),
        r#"{"displayName": "edge-1", "inboundAllowedIp": "192.0.2.0/24"}"#,
    );
    assert_eq!(a.status, 200);
    let token = a.body["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 32);
    assert_eq!(a.body["displayName"], "edge-1");
    assert_eq!(a.body["inboundAllowedIp"], "192.0.2.0/24");
    let expires =
        chrono::DateTime::parse_from_rfc3339(a.body["expiresAt"].as_str().unwrap()).unwrap();
    let left = expires.timestamp() - chrono::Utc::now().timestamp();
    assert!((1790..=1800).contains(&left), "30 minutes: {left}");

    let list = server.get("/api/v1/tokens", Auth::Cookie(&admin)).body;
    let row = &list[0];
    let hash = row["tokenHash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64);
    assert!(
        !list.to_string().contains(&token),
        "the token itself is never listed"
    );
    for (camel, snake) in [
        ("tokenHash", "token_hash"),
        ("createdAt", "created_at"),
        ("expiresAt", "expires_at"),
        ("usedAt", "used_at"),
        ("displayName", "display_name"),
        ("inboundAllowedIp", "allowed_ip"),
    ] {
        assert_eq!(row[camel], row[snake], "{camel} and {snake}");
        assert!(row.get(camel).is_some());
    }
    let a = server.delete("/api/v1/tokens/nope", Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.body.clone()),
        (404, json!({ "error": "Token not found" }))
    );
    assert_eq!(
        server
            .delete(&format!("/api/v1/tokens/{hash}"), Auth::Cookie(&admin))
            .status,
        200
    );
    assert_eq!(
        server.get("/api/v1/tokens", Auth::Cookie(&admin)).body,
        json!([])
    );
}

#[test]
fn registration_rules() {
    let server = Server::start();
    let admin = server.admin();
    let a = server.post("/api/v1/register", Auth::None, r#"{"hostname": "h"}"#);
    assert_eq!((a.status, a.error()), (400, "token: is required"));
    assert_eq!(
        server
            .post(
                "/api/v1/register",
                Auth::None,
                r#"{"token": "0123456789abcdef0123456789abcdef"}"#
            )
            .status,
        403
    );

    // A token without name or address: the hostname names it, the source address binds it.
    let plain = server.post("/api/v1/tokens", Auth::Cookie(&admin), "").body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = server.post(
        "/api/v1/register",
        Auth::None,
        &json!({ "token": plain, "hostname": "lb-1", "clientId": "mine" }).to_string(),
    );
    assert_eq!(a.status, 200);
    let first = a.body["clientId"].as_str().unwrap().to_owned();
    assert_ne!(first, "mine", "a clientId in the body is ignored");
    assert_eq!(a.body["token"].as_str().unwrap().len(), 128);
    let a = server.post(
        "/api/v1/register",
        Auth::None,
        &json!({ "token": plain, "hostname": "lb-1" }).to_string(),
    );
    assert_eq!(a.status, 403, "a used token");

    let named = server
        .post(
            "/api/v1/tokens",
            Auth::Cookie(&admin),
            r#"{"displayName": "edge", "inboundAllowedIp": "192.0.2.7"}"#,
        )
        .body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = server.post(
        "/api/v1/register",
        Auth::None,
        &json!({ "token": named }).to_string(),
    );
    let second = a.body["clientId"].as_str().unwrap().to_owned();

    let expired = server.post("/api/v1/tokens", Auth::Cookie(&admin), "").body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    server.sql("UPDATE registration_tokens SET expires_at = '2020-01-01T00:00:00.000Z' WHERE used_at IS NULL");
    assert_eq!(
        server
            .post(
                "/api/v1/register",
                Auth::None,
                &json!({ "token": expired }).to_string()
            )
            .status,
        403
    );

    let clients = server.get("/api/v1/clients", Auth::Cookie(&admin)).body;
    let find = |id: &str| {
        clients
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    let c1 = find(&first);
    assert_eq!(
        (c1["hostname"].as_str(), c1["displayName"].as_str()),
        (Some("lb-1"), Some("lb-1"))
    );
    assert_eq!(c1["inboundAllowedIp"], "127.0.0.1");
    assert_eq!(
        (c1["connectionMode"].as_str(), c1["status"].as_str()),
        (Some("inbound"), Some("offline"))
    );
    assert!(
        c1["capabilities"].is_null() && c1["inboundLastIp"].is_null() && c1["lastSeen"].is_null()
    );
    assert!(chrono::NaiveDateTime::parse_from_str(
        c1["createdAt"].as_str().unwrap(),
        "%Y-%m-%d %H:%M:%S"
    )
    .is_ok());
    let c2 = find(&second);
    assert_eq!(
        (
            c2["hostname"].as_str(),
            c2["displayName"].as_str(),
            c2["inboundAllowedIp"].as_str()
        ),
        (Some("unknown"), Some("edge"), Some("192.0.2.7"))
    );
    let used: Vec<Value> = server
        .get("/api/v1/tokens", Auth::Cookie(&admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["usedAt"].is_null())
        .cloned()
        .collect();
    assert_eq!(used.len(), 2);
    let activity = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let registered: Vec<&Value> = activity
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "client.registered")
        .collect();
    assert_eq!(registered.len(), 2);
    let e = registered
        .iter()
        .find(|e| e["clientId"] == first.as_str())
        .unwrap();
    assert_eq!(
        (e["source"].as_str(), e["level"].as_str()),
        (Some("server"), Some("info"))
    );
    assert_eq!(
        e["data"],
        json!({ "hostname": "lb-1", "clientName": "lb-1" })
    );
}

#[test]
fn agent_socket_authentication_stages() {
    let server = Launch::new()
        .config("security:\n  allowed_networks: ['127.0.0.0/8']\n")
        .start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let port = server.port();
    let close = |path: &str| Ws::connect(port, path, &[]).ending();
    assert_eq!(
        close("/ws/agent"),
        Ending::Close(4001, "Authentication required".into())
    );
    assert_eq!(
        close(&format!("/ws/agent?clientId={}", agent.id)),
        Ending::Close(4001, "Authentication required".into())
    );
    assert_eq!(
        close(&format!("/ws/agent?clientId={}&token=wrong", agent.id)),
        Ending::Close(4003, "Invalid credentials".into())
    );
    let other = server.register_agent(&admin, "lb-2");
    assert_eq!(
        close(&format!(
            "/ws/agent?clientId={}&token={}",
            other.id, agent.token
        )),
        Ending::Close(4003, "Invalid credentials".into())
    );
    // The token may come as a bearer header.
    let mut ws = Ws::connect(
        port,
        &format!("/ws/agent?clientId={}", agent.id),
        &[("authorization", &format!("Bearer {}", agent.token))],
    );
    ws.send("AUTH", json!({ "hostname": "h", "version": "1" }));
    ws.expect("AUTH_SUCCESS");
    drop(ws);

    // A first message that is not AUTH, and an AUTH that does not parse.
    let mut ws = server.agent_socket(&agent);
    ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    assert_eq!(ws.expect("AUTH_FAILURE"), json!({}));
    assert_eq!(ws.ending(), Ending::Close(4003, "Forbidden".into()));
    let mut ws = server.agent_socket(&agent);
    ws.send_raw("not json");
    assert_eq!(ws.expect("AUTH_FAILURE"), json!({}));
    let mut ws = server.agent_socket(&agent);
    ws.send("AUTH", json!({ "hostname": 5 }));
    assert_eq!(ws.ending(), Ending::Close(4000, "Invalid payload".into()));

    // The client's own allowed address.
    let a = server.put(
        &format!("/api/v1/clients/{}", agent.id),
        Auth::Cookie(&admin),
        r#"{"inboundAllowedIp": "192.0.2.0/24"}"#,
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        server.agent_socket(&agent).ending(),
        Ending::Close(4003, "IP address mismatch".into())
    );
    let clients = server.get("/api/v1/clients", Auth::Cookie(&admin)).body;
    let row = clients
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == agent.id.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        row["inboundLastIp"], "127.0.0.1",
        "written by the earlier accepted connection only"
    );

    // An outbound client's token is refused on /ws/agent.
    server.sql(&format!(
        "UPDATE clients SET connection_mode = 'outbound' WHERE id = '{}'",
        other.id
    ));
    assert_eq!(
        server.agent_socket(&other).ending(),
        Ending::Close(4003, "Access denied".into())
    );
}

#[test]
fn allowed_networks_refuse_other_sources() {
    let server = Launch::new()
        .config("security:\n  allowed_networks: ['10.0.0.0/8']\n")
        .start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    assert_eq!(
        server.agent_socket(&agent).ending(),
        Ending::Close(4003, "Access denied".into())
    );
    let row = server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0].clone();
    assert!(
        row["inboundLastIp"].is_null(),
        "not written before the address check passed"
    );
}

#[test]
fn connect_replace_disconnect_and_presence() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    let first = server.connect_agent(&agent);
    // The activity comes at once; the client list is coalesced over 100 ms.
    let appended = dash.expect("ACTIVITY_APPENDED");
    let clients = dash.expect("CLIENTS_UPDATE");
    let row = clients
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == agent.id.as_str())
        .unwrap();
    assert_eq!(row["status"], "online");
    assert_eq!(row["capabilities"], json!(["vrrp"]));
    assert_eq!(row["version"], "1.2.3");
    assert_eq!(row["inboundLastIp"], "127.0.0.1");
    assert!(row["lastSeen"].is_string());
    assert_eq!(appended[0]["kind"], "client.connected");
    assert_eq!(appended[0]["level"], "trace");
    assert_eq!(
        appended[0]["data"],
        json!({ "connectionMode": "inbound", "version": "1.2.3", "clientName": "lb-1" })
    );

    // A second connection replaces the first; the client stays online.
    let mut first = first;
    let mut second = server.agent_socket(&agent);
    second.send(
        "AUTH",
        json!({ "hostname": "h", "version": "1.2.4", "capabilities": [] }),
    );
    second.expect("AUTH_SUCCESS");
    assert_eq!(
        first.ending(),
        Ending::Close(4000, "Replaced by new connection".into())
    );
    std::thread::sleep(Duration::from_millis(300));
    let row = server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0].clone();
    assert_eq!(
        (row["status"].as_str(), row["capabilities"].clone()),
        (Some("online"), json!([]))
    );
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let row = server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0].clone();
        if row["status"] == "offline" {
            assert!(row["capabilities"].is_null());
            break;
        }
        assert!(Instant::now() < deadline, "still online: {row}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The disconnect is recorded just after the client is shown offline.
    let kinds_now = || -> Vec<String> {
        let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut kinds = kinds_now();
    while !kinds.iter().any(|k| k == "client.disconnected") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        kinds = kinds_now();
    }
    // Long enough for a wrong second disconnect (the replaced socket) to show up.
    std::thread::sleep(Duration::from_millis(300));
    let kinds = kinds_now();
    assert_eq!(
        kinds.iter().filter(|k| *k == "client.disconnected").count(),
        1,
        "the replaced socket is no disconnect: {kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| *k == "client.connected").count(), 2);
    // The disconnect says which version of the agent went away.
    let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let gone = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "client.disconnected")
        .unwrap();
    assert_eq!(gone["data"]["version"], "1.2.4", "the last AUTH's: {gone}");
}

#[test]
fn readings_are_stored_loosely_and_the_last_good_one_stays() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let path = format!("/api/v1/clients/{}/keepalived", agent.id);
    assert_eq!(
        server.get(&path, Auth::Cookie(&admin)).status,
        404,
        "no reading yet"
    );
    assert_eq!(
        server
            .get("/api/v1/clients/nope/keepalived", Auth::Cookie(&admin))
            .status,
        404
    );
    let mut ws = server.connect_agent(&agent);
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    let mut r = reading(&[("VI_1", "MASTER"), ("VI_2", "SOMETHING_NEW")]);
    r["futureField"] = json!({ "kept": true });
    ws.send("KEEPALIVED_UPDATE", r);
    let pushed = dash.expect("KEEPALIVED_STATE_UPDATE");
    assert_eq!(pushed["clientId"], agent.id.as_str());
    assert!(pushed["receivedAt"].is_string());
    let stored = server.get(&path, Auth::Cookie(&admin)).body;
    assert_eq!(stored, pushed);
    assert_eq!(stored["futureField"], json!({ "kept": true }));
    assert_eq!(stored["instances"][1]["state"], "UNKNOWN");
    assert_eq!(stored["instances"][0]["stats"]["advertisements_sent"], 3);
    assert!(stored.get("lastKnownInstances").is_none());

    // Malformed readings are discarded; the last good one stays.
    ws.send("KEEPALIVED_UPDATE", json!({ "running": "maybe" }));
    ws.send("KEEPALIVED_UPDATE", json!("nonsense"));
    ws.send("SOMETHING_NEW", json!({}));
    // keepalived stopped: the last-known instances (without counters) come along.
    ws.send(
        "KEEPALIVED_UPDATE",
        json!({ "collectedAt": "2026-11-21T08:01:00.000Z", "running": false, "instances": [] }),
    );
    let stopped = dash.expect("KEEPALIVED_STATE_UPDATE");
    assert_eq!(stopped["running"], false);
    assert_eq!(stopped["lastKnownInstances"][0]["name"], "VI_1");
    assert!(stopped["lastKnownInstances"][0].get("stats").is_none());
    // Running and readable with no instances clears them.
    ws.send(
        "KEEPALIVED_UPDATE",
        json!({ "collectedAt": "2026-11-21T08:02:00.000Z", "running": true, "instances": [] }),
    );
    let empty = dash.expect("KEEPALIVED_STATE_UPDATE");
    assert!(empty.get("lastKnownInstances").is_none());
    ws.send(
        "KEEPALIVED_UPDATE",
        json!({ "collectedAt": "2026-11-21T08:03:00.000Z", "running": false }),
    );
    let again = dash.expect("KEEPALIVED_STATE_UPDATE");
    assert!(
        again.get("lastKnownInstances").is_none(),
        "cleared stays cleared"
    );
    let states = server
        .get("/api/v1/keepalived/states", Auth::Cookie(&admin))
        .body;
    assert_eq!(states.as_array().unwrap().len(), 1);
    assert_eq!(states[0]["collectedAt"], "2026-11-21T08:03:00.000Z");
}

#[test]
fn refresh_asks_a_connected_agent_and_refuses_an_offline_one() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let path = format!("/api/v1/clients/{}/keepalived/refresh", agent.id);
    assert_eq!(
        server
            .post(
                "/api/v1/clients/nope/keepalived/refresh",
                Auth::Cookie(&admin),
                ""
            )
            .status,
        404
    );
    let a = server.post(&path, Auth::Cookie(&admin), "");
    assert_eq!((a.status, a.error()), (409, "Client is offline"));
    let mut ws = server.connect_agent(&agent);
    let a = server.post(&path, Auth::Cookie(&admin), "");
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "status": "requested" }))
    );
    assert_eq!(ws.expect("REQUEST_STATE_UPDATE"), json!({}));
}

#[test]
fn activity_ingest_acks_dedups_and_broadcasts_first_stores_only() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    let batch = json!({ "events": [
        { "id": "e1", "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "vrrp.state_changed", "level": "warning",
          "correlationId": null, "subject": { "instanceName": "VI_1", "vrid": 51, "interface": "eth0" },
          "data": { "from": "MASTER", "to": "BACKUP" }, "clientId": "forged", "source": "server" },
        { "id": "e2", "occurredAt": "2026-11-21T08:05:00.000Z", "kind": "keepalived.custom_thing", "level": "shouting", "subject": {}, "data": {} },
        { "id": "bad", "occurredAt": "not a time", "kind": "x" },
        { "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "no id" }
    ]});
    ws.send("ACTIVITY", batch.clone());
    let mut ack = ws.expect("ACTIVITY_ACK")["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    ack.sort();
    assert_eq!(ack, ["bad", "e1", "e2"]);
    // (The agent's own client.connected event may come first.)
    let appended = loop {
        let a = dash.expect("ACTIVITY_APPENDED");
        if a[0]["kind"] != "client.connected" {
            break a;
        }
    };
    let ids: Vec<&str> = appended
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["e1", "e2"]);
    assert_eq!(
        appended[0]["clientId"],
        agent.id.as_str(),
        "taken from the connection"
    );
    assert_eq!(appended[0]["source"], "agent");
    assert_eq!(
        appended[1]["level"], "info",
        "an unknown level reads as info"
    );

    // The same batch again: acknowledged, nothing stored or broadcast twice.
    ws.send("ACTIVITY", batch);
    assert_eq!(
        ws.expect("ACTIVITY_ACK")["ids"].as_array().unwrap().len(),
        3
    );
    dash.assert_no("ACTIVITY_APPENDED", Duration::from_millis(500));
    // An envelope without events gets no ack.
    ws.send("ACTIVITY", json!({ "evts": [] }));
    ws.assert_no("ACTIVITY_ACK", Duration::from_millis(500));

    let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let agent_events: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "agent")
        .collect();
    assert_eq!(agent_events.len(), 2);
    assert_eq!(agent_events[0]["id"], "e2", "newest first by occurredAt");
    assert_eq!(
        agent_events[1]["subject"],
        json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" })
    );
    assert_eq!(agent_events[1]["seen"], false);
    // The spec's eleven fields, plus the composed texts the dashboard shows
    // (`message` and `detail` from the one composer).
    let keys: Vec<&str> = agent_events[1]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "occurredAt",
            "receivedAt",
            "source",
            "clientId",
            "kind",
            "level",
            "correlationId",
            "subject",
            "data",
            "seen",
            "message",
            "detail"
        ],
        "{keys:?}"
    );
}

#[test]
fn seen_state_is_per_user_and_only_turned_ids_are_sent_to_that_user() {
    let server = Server::start();
    let admin = server.admin();
    server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "bob", "password": "bob-password"}"#,
    );
    let bob = server.login("bob", "bob-password");
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send(
        "ACTIVITY",
        json!({ "events": [
            { "id": "a", "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "k", "level": "info" },
            { "id": "b", "occurredAt": "2026-11-21T08:01:00.000Z", "kind": "k", "level": "info" }
        ]}),
    );
    ws.expect("ACTIVITY_ACK");
    let mut admin_dash = server.dashboard(&admin);
    admin_dash.expect("ACTIVITY_UPDATE");
    let mut bob_dash = server.dashboard(&bob);
    bob_dash.expect("ACTIVITY_UPDATE");
    for (body, error) in [
        ("{}", "ids: is required"),
        (r#"{"ids": []}"#, "ids: must not be empty"),
        (r#"{"ids": "a"}"#, "ids: must be a list of strings"),
    ] {
        let a = server.post("/api/v1/activity/seen", Auth::Cookie(&admin), body);
        assert_eq!((a.status, a.error()), (400, error));
    }
    let a = server.post(
        "/api/v1/activity/seen",
        Auth::Cookie(&admin),
        r#"{"ids": ["a", "unknown"]}"#,
    );
    assert_eq!((a.status, a.body.clone()), (200, json!({ "ok": true })));
    assert_eq!(admin_dash.expect("ACTIVITY_SEEN"), json!({ "ids": ["a"] }));
    bob_dash.assert_no("ACTIVITY_SEEN", Duration::from_millis(400));
    // Marking again changes nothing and sends nothing.
    server.post(
        "/api/v1/activity/seen",
        Auth::Cookie(&admin),
        r#"{"ids": ["a"]}"#,
    );
    admin_dash.assert_no("ACTIVITY_SEEN", Duration::from_millis(400));
    let seen_by = |token: &str, id: &str| {
        let list = server.get("/api/v1/activity", Auth::Cookie(token)).body;
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()["seen"]
            .as_bool()
            .unwrap()
    };
    assert!(seen_by(&admin, "a") && !seen_by(&admin, "b"));
    assert!(!seen_by(&bob, "a"));
    // A new dashboard gets the user's seen state.
    let mut again = server.dashboard(&admin);
    let list = again.expect("ACTIVITY_UPDATE");
    assert_eq!(
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == "a")
            .unwrap()["seen"],
        true
    );

    let a = server.delete("/api/v1/activity", Auth::Cookie(&bob));
    assert_eq!((a.status, a.body.clone()), (200, json!({ "ok": true })));
    assert_eq!(admin_dash.expect("ACTIVITY_UPDATE"), json!([]));
    assert_eq!(
        server.get("/api/v1/activity", Auth::Cookie(&admin)).body,
        json!([])
    );
}

#[test]
fn dashboard_authentication_and_on_connect_order() {
    let server = Server::start();
    let admin = server.admin();
    let port = server.port();
    assert_eq!(
        Ws::connect(port, "/ws/dashboard", &[]).ending(),
        Ending::Close(4001, "Unauthorized".into())
    );
    assert_eq!(
        Ws::connect(port, &format!("/ws/dashboard?token={admin}"), &[]).ending(),
        Ending::Close(4001, "Unauthorized".into()),
        "no token in the query"
    );
    assert_eq!(
        Ws::connect(port, "/ws/dashboard", &[("cookie", "svc_session=forged")]).ending(),
        Ending::Close(4001, "Invalid Token".into())
    );
    let a1 = server.register_agent(&admin, "lb-1");
    let a2 = server.register_agent(&admin, "lb-2");
    for a in [&a1, &a2] {
        let mut ws = server.connect_agent(a);
        ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
        let deadline = Instant::now() + Duration::from_secs(5);
        while server
            .get(
                &format!("/api/v1/clients/{}/keepalived", a.id),
                Auth::Cookie(&admin),
            )
            .status
            != 200
        {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut dash = server.dashboard(&admin);
    let mut types = Vec::new();
    for _ in 0..5 {
        let m = dash.next(Duration::from_secs(5)).unwrap().unwrap();
        types.push(m["type"].as_str().unwrap().to_owned());
        if m["type"] == "CLIENTS_UPDATE" {
            assert_eq!(m["payload"].as_array().unwrap().len(), 2);
        }
    }
    assert_eq!(
        types,
        [
            "CLIENTS_UPDATE",
            "CLUSTERS_UPDATE",
            "KEEPALIVED_STATE_UPDATE",
            "KEEPALIVED_STATE_UPDATE",
            "ACTIVITY_UPDATE"
        ]
    );
}

#[test]
fn revoked_sessions_close_dashboards_with_4001_and_your_own_change_with_4002() {
    let server = Server::start();
    let admin = server.admin();
    server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "bob", "password": "bob-password"}"#,
    );
    let bob = server.login("bob", "bob-password");
    let mut bob_dash = server.dashboard(&bob);
    bob_dash.expect("ACTIVITY_UPDATE");
    let mut admin_dash = server.dashboard(&admin);
    admin_dash.expect("ACTIVITY_UPDATE");
    let bob_id = server.get("/api/v1/me", Auth::Cookie(&bob)).body["id"]
        .as_i64()
        .unwrap();
    server.put(
        &format!("/api/v1/users/{bob_id}"),
        Auth::Cookie(&admin),
        r#"{"password": "changed-by-admin"}"#,
    );
    assert_eq!(
        bob_dash.ending(),
        Ending::Close(4001, "Invalid Token".into())
    );
    let a = server.put(
        "/api/v1/users/1",
        Auth::Cookie(&admin),
        r#"{"password": "admin-new-password"}"#,
    );
    assert_eq!(
        admin_dash.ending(),
        Ending::Close(4002, "Session renewed".into())
    );
    let fresh = a.cookie("svc_session").unwrap();
    let mut again = server.dashboard(&fresh);
    again.expect("ACTIVITY_UPDATE");
    assert_eq!(
        server.dashboard(&admin).ending(),
        Ending::Close(4001, "Invalid Token".into()),
        "the old cookie is stale"
    );
}

#[test]
fn clients_update_and_delete() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let path = format!("/api/v1/clients/{}", agent.id);
    let put = |body: &str| server.put(&path, Auth::Cookie(&admin), body);
    let cases = [
        ("{}", "body: at least one of displayName, site, inboundAllowedIp, outboundTargetAddress is required"),
        (&*json!({ "site": "s".repeat(101) }).to_string(), "site: must be at most 100 characters"),
        (r#"{"inboundAllowedIp": "2001:db8::1"}"#, "inboundAllowedIp: must be an IPv4 address or CIDR network"),
        (r#"{"outboundTargetAddress": "10.0.0.1:3011"}"#, "outboundTargetAddress: not used by an inbound client"),
        (r#"{"displayName": 5}"#, "displayName: must be a string"),
    ];
    for (body, error) in cases {
        let a = put(body);
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }
    assert_eq!(
        server
            .put(
                "/api/v1/clients/nope",
                Auth::Cookie(&admin),
                r#"{"site": "x"}"#
            )
            .status,
        404
    );
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    let a =
        put(r#"{"site": "  dc-1  ", "displayName": "edge", "inboundAllowedIp": "127.0.0.0/8"}"#);
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "success": true }))
    );
    let row = dash.expect("CLIENTS_UPDATE")[0].clone();
    assert_eq!(
        (
            row["site"].as_str(),
            row["displayName"].as_str(),
            row["inboundAllowedIp"].as_str()
        ),
        (Some("dc-1"), Some("edge"), Some("127.0.0.0/8"))
    );
    assert!(row["updatedAt"].is_string());
    put(r#"{"displayName": "edge-2"}"#);
    let row = dash.expect("CLIENTS_UPDATE")[0].clone();
    assert_eq!(row["site"], "dc-1", "omitting a field keeps it");
    put(r#"{"site": null, "inboundAllowedIp": null}"#);
    let row = dash.expect("CLIENTS_UPDATE")[0].clone();
    assert!(row["site"].is_null() && row["inboundAllowedIp"].is_null());

    let mut ws = server.connect_agent(&agent);
    ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    dash.expect("KEEPALIVED_STATE_UPDATE");
    let a = server.delete(&path, Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "status": "deleted" }))
    );
    assert_eq!(ws.ending(), Ending::Close(4000, "Client deleted".into()));
    assert_eq!(server.delete(&path, Auth::Cookie(&admin)).status, 404);
    assert_eq!(
        server
            .get(&format!("{path}/keepalived"), Auth::Cookie(&admin))
            .status,
        404
    );
    assert_eq!(
        server
            .get("/api/v1/keepalived/states", Auth::Cookie(&admin))
            .body,
        json!([])
    );
    assert_eq!(
        server.get("/api/v1/clients", Auth::Cookie(&admin)).body,
        json!([])
    );
}

#[test]
fn a_dashboard_that_stops_reading_is_dropped_without_delaying_the_others() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    // A dashboard that never reads again after its first messages.
    let mut stalled = server.dashboard(&admin);
    stalled.expect("ACTIVITY_UPDATE");
    let mut live = server.dashboard(&admin);
    live.expect("ACTIVITY_UPDATE");
    let padding = "x".repeat(16 * 1024);
    let mut waits = Vec::with_capacity(1500);
    for i in 0..1500 {
        let mut r = reading(&[("VI_1", "MASTER")]);
        r["padding"] = json!(padding);
        r["seq"] = json!(i);
        let sent = Instant::now();
        ws.send("KEEPALIVED_UPDATE", r);
        let got = live.expect("KEEPALIVED_STATE_UPDATE");
        assert_eq!(got["seq"], i);
        waits.push(sent.elapsed());
    }
    waits.sort();
    // A broadcast held up by the stalled socket would wait for its heartbeat (30 s)
    // or a full write buffer; a busy machine only adds scheduling delays, so the
    // bounds are on the typical wait and leave the slowest room for a loaded CI.
    let (median, slowest) = (waits[waits.len() / 2], waits[waits.len() - 1]);
    assert!(
        median < Duration::from_millis(250) && slowest < Duration::from_secs(5),
        "the live dashboard waited {median:?} typically, {slowest:?} at worst"
    );
    // 24 MB were offered to the stalled one: it was dropped, not buffered without end.
    assert!(server.wait_log("not keeping up"), "{}", server.log_text());
    let ended = loop {
        match stalled.next(Duration::from_secs(10)) {
            Some(Ok(_)) => continue,
            Some(Err(e)) => break e,
            None => panic!("the stalled dashboard was never closed"),
        }
    };
    assert!(
        matches!(ended, Ending::Dropped | Ending::Close(..)),
        "{ended:?}"
    );
}

#[test]
fn clusters_group_the_readings_of_connected_agents() {
    let server = Server::start();
    let admin = server.admin();
    let a = server.register_agent(&admin, "lb-a");
    let b = server.register_agent(&admin, "lb-b");
    let mut wa = server.connect_agent(&a);
    let mut wb = server.connect_agent(&b);
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    dash.expect("KEEPALIVED_STATE_UPDATE");
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    dash.expect("KEEPALIVED_STATE_UPDATE");
    let clusters = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body;
    assert_eq!(clusters.as_array().unwrap().len(), 1, "{clusters}");
    let c = &clusters[0];
    assert_eq!(
        (c["key"].as_str(), c["vrid"].as_u64(), c["health"].as_str()),
        (Some("|51|192.0.2.0/24"), Some(51), Some("ok"))
    );
    assert_eq!(c["networks"], json!(["192.0.2.0/24"]));
    assert_eq!(c["vips"], json!(["192.0.2.100/24"]));
    assert_eq!(c["members"].as_array().unwrap().len(), 2);
    assert!(c["members"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["online"] == true && m["reporting"] == true));
    // keepalived stops on b: it stays in with its last-known instance, not reporting.
    wb.send(
        "KEEPALIVED_UPDATE",
        json!({ "collectedAt": "2026-11-21T08:05:00.000Z", "running": false }),
    );
    dash.expect("KEEPALIVED_STATE_UPDATE");
    let c = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body[0]
        .clone();
    assert_eq!(c["health"], "degraded");
    let mb = c["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["clientId"] == b.id.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        (mb["online"].as_bool(), mb["reporting"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(mb["instance"]["state"], "BACKUP");
    // a goes offline as well: no live member.
    drop(wa);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let c = server
            .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
            .body[0]
            .clone();
        if c["health"] == "unknown" {
            let ma = c["members"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["clientId"] == a.id.as_str())
                .unwrap()
                .clone();
            assert_eq!(
                (ma["online"].as_bool(), ma["reporting"].as_bool()),
                (Some(false), Some(false)),
                "an offline host's keepalived is not claimed to report: {ma}"
            );
            assert_eq!(ma["instance"]["state"], "MASTER", "its last report");
            break;
        }
        assert!(Instant::now() < deadline, "{c}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A site splits what the network joined.
    server.put(
        &format!("/api/v1/clients/{}", a.id),
        Auth::Cookie(&admin),
        r#"{"site": "dc-2"}"#,
    );
    let keys: Vec<String> = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.contains(&"dc-2|51|192.0.2.0/24".to_owned()));
}

#[test]
fn malformed_frames_end_only_the_socket_that_sent_them() {
    let server = Server::start();
    let admin = server.admin();
    let bad = server.register_agent(&admin, "lb-bad");
    let good = server.register_agent(&admin, "lb-good");
    let mut healthy = server.connect_agent(&good);

    // A binary frame and a text frame that is no JSON are dropped; the socket stays.
    let mut ws = server.connect_agent(&bad);
    ws.ws
        .send(tungstenite::Message::Binary(vec![0, 159, 146, 150].into()))
        .unwrap();
    ws.send_raw("{\"type\": \"KEEPALIVED_UPDATE\", \"payload\": ");
    ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while server
        .get(
            &format!("/api/v1/clients/{}/keepalived", bad.id),
            Auth::Cookie(&admin),
        )
        .status
        != 200
    {
        assert!(
            Instant::now() < deadline,
            "the socket stopped working after junk frames"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // A message beyond the 4 MiB limit ends that socket.
    let huge = format!(
        "{{\"type\": \"X\", \"payload\": \"{}\"}}",
        "x".repeat(5 * 1024 * 1024)
    );
    let _ = ws.ws.send(tungstenite::Message::text(huge));
    assert!(matches!(ws.ending(), Ending::Close(..) | Ending::Dropped));

    // Bytes that are no WebSocket frame at all, right after the handshake.
    let mut raw = server.agent_socket(&bad);
    raw.ws.get_mut().write_all(&[0xff; 64]).unwrap();
    assert!(matches!(raw.ending(), Ending::Close(..) | Ending::Dropped));

    // The other agent never noticed.
    healthy.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while server
        .get(
            &format!("/api/v1/clients/{}/keepalived", good.id),
            Auth::Cookie(&admin),
        )
        .status
        != 200
    {
        assert!(Instant::now() < deadline, "the healthy agent was affected");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
    assert!(
        !server.log_text().contains("panicked"),
        "no thread panicked"
    );
}

/// Registers an agent with `X-Forwarded-For: forwarded`; returns it.
fn register_forwarded(server: &Server, admin: &str, forwarded: &str) -> Agent {
    let t = server.post("/api/v1/tokens", Auth::Cookie(admin), "{}");
    let token = t.body["token"].as_str().unwrap().to_owned();
    let r = server.request(
        "POST",
        "/api/v1/register",
        Auth::None,
        &[
            ("X-Forwarded-For", forwarded),
            ("Content-Type", "application/json"),
        ],
        Some(&json!({ "token": token, "hostname": "behind-proxy" }).to_string()),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    Agent {
        id: r.body["clientId"].as_str().unwrap().to_owned(),
        token: r.body["token"].as_str().unwrap().to_owned(),
    }
}

fn client_row(server: &Server, admin: &str, id: &str) -> Value {
    server
        .get("/api/v1/clients", Auth::Cookie(admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .unwrap()
}

#[test]
fn an_agent_behind_a_trusted_proxy_is_known_by_its_forwarded_address_everywhere() {
    let server = Launch::new()
        .config(
            "security:\n  trusted_proxies: ['127.0.0.0/8']\n  allowed_networks: ['192.0.2.0/24']\n",
        )
        .start();
    let admin = server.admin();
    let agent = register_forwarded(&server, &admin, "192.0.2.50");
    assert_eq!(
        client_row(&server, &admin, &agent.id)["inboundAllowedIp"],
        "192.0.2.50"
    );
    // Through the proxy: the allowed networks and the client's address pass on
    // the forwarded address, and the session stays.
    let path = format!("/ws/agent?clientId={}&token={}", agent.id, agent.token);
    let mut ws = Ws::connect(server.port(), &path, &[("X-Forwarded-For", "192.0.2.50")]);
    ws.send(
        "AUTH",
        json!({ "hostname": "behind-proxy", "version": "1.2.3", "capabilities": ["vrrp"] }),
    );
    assert_eq!(ws.expect("AUTH_SUCCESS")["clientId"], agent.id.as_str());
    ws.assert_no("nothing", Duration::from_secs(1));
    let row = client_row(&server, &admin, &agent.id);
    assert_eq!(row["status"], "online");
    assert_eq!(row["inboundLastIp"], "192.0.2.50");
    drop(ws);
    // Another forwarded address is not this client's.
    let other = Ws::connect(server.port(), &path, &[("X-Forwarded-For", "192.0.2.51")]).ending();
    assert_eq!(other, Ending::Close(4003, "IP address mismatch".into()));
}

#[test]
fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
    let server = Launch::new().start();
    let admin = server.admin();
    let agent = register_forwarded(&server, &admin, "192.0.2.50");
    assert_eq!(
        client_row(&server, &admin, &agent.id)["inboundAllowedIp"],
        "127.0.0.1"
    );
    let path = format!("/ws/agent?clientId={}&token={}", agent.id, agent.token);
    let mut ws = Ws::connect(server.port(), &path, &[("X-Forwarded-For", "192.0.2.50")]);
    ws.send(
        "AUTH",
        json!({ "hostname": "h", "version": "1.2.3", "capabilities": ["vrrp"] }),
    );
    ws.expect("AUTH_SUCCESS");
    assert_eq!(
        client_row(&server, &admin, &agent.id)["inboundLastIp"],
        "127.0.0.1"
    );
}

/// A reading as a current agent sends it on a busy host: every optional field of
/// an instance, trackers and sync groups. The agent's socket thread parses it on
/// its own (small) stack.
#[test]
fn a_reading_with_every_field_is_stored_and_the_socket_thread_survives() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    let instance = |name: &str, state: &str| {
        json!({
            "name": name, "state": state, "wantedState": "BACKUP", "interface": "eth0", "vrid": 51,
            "priority": 120, "effectivePriority": 120, "advertInterval": 1.0,
            "vips": ["192.0.2.100/24 dev eth0 scope global set"], "excludedVips": ["192.0.2.200/24"],
            "syncGroup": "SG_1", "lastTransition": "2026-11-29T10:00:00.000Z",
            "stats": { "advertisements_received": 10, "advertisements_sent": 3, "became_master": 1 },
            "tracked": [
                { "kind": "script", "name": "chk_lab", "state": "GOOD", "weight": 0 },
                { "kind": "interface", "name": "trk0", "state": "UP", "weight": 0 }
            ],
            "trackerFaults": 0, "unicastPeers": ["192.0.2.12", "192.0.2.13"], "masterRouter": "192.0.2.11",
            "vrrpVersion": 2, "authType": "pass", "authFingerprint": "00112233445566778899aabbccddeeff",
            "preempt": true, "preemptDelay": 0.0, "acceptMode": true, "masterAdvertInterval": 1.0,
            "usesUnicast": true, "sourceAddress": "192.0.2.12", "configFaults": 0
        })
    };
    let mut r = reading(&[]);
    r["instances"] = json!([instance("VI_1", "BACKUP"), instance("VI_2", "FAULT")]);
    r["syncGroups"] = json!([{ "name": "SG_1", "state": "BACKUP", "instances": ["VI_1", "VI_2"] }]);
    for _ in 0..3 {
        ws.send("KEEPALIVED_UPDATE", r.clone());
    }
    let path = format!("/api/v1/clients/{}/keepalived", agent.id);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stored = server.get(&path, Auth::Cookie(&admin));
        if stored.status == 200 {
            assert_eq!(stored.body["instances"][0]["sourceAddress"], "192.0.2.12");
            assert_eq!(
                stored.body["instances"][0]["authFingerprint"],
                "00112233445566778899aabbccddeeff"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no reading stored");
        std::thread::sleep(Duration::from_millis(50));
    }
    ws.assert_no("a closed socket", Duration::from_millis(500));
    assert_eq!(
        server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0]["status"],
        "online"
    );
}

#[test]
fn every_agent_of_a_server_gets_the_same_fingerprint_key_and_no_secret() {
    let server = Server::start();
    let admin = server.admin();
    let key = |agent: &Agent| {
        let mut ws = server.agent_socket(agent);
        ws.send(
            "AUTH",
            json!({ "hostname": "h", "version": "1", "capabilities": ["vrrp"] }),
        );
        ws.expect("AUTH_SUCCESS")["fingerprintKey"]
            .as_str()
            .expect("a key")
            .to_owned()
    };
    let (a, b) = (
        server.register_agent(&admin, "lb-1"),
        server.register_agent(&admin, "lb-2"),
    );
    let (ka, kb) = (key(&a), key(&b));
    assert_eq!(ka, kb, "one key per server");
    assert_eq!(ka.len(), 64);
    assert!(ka.chars().all(|c| c.is_ascii_hexdigit()));
    let config = std::fs::read_to_string(server.launch.config_path()).unwrap_or_default();
    assert!(
        !config.is_empty() && !config.contains(&ka),
        "the key is not a stored secret"
    );
}
