//! One function per fuzz target: feeds the bytes to a parser that reads outside
//! input and asserts what must hold for any input (beyond not panicking).
//! Included by path into `tests/fuzz_replay.rs`, which replays `fuzz/corpus/`.

use serde_json::{json, Value};

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Every VIP a parsed dump keeps is an address (the parser's rule).
fn vips_are_addresses(dump: &vrrp_agent::keepalived::parse::ParsedDump) {
    for i in &dump.instances {
        for v in &i.vips {
            assert_eq!(
                vrrp_agent::keepalived::parse::vip_of(v),
                Some(v.as_str()),
                "a kept VIP is an address: {v:?}"
            );
        }
    }
}

/// Unicast peers and the master router a parsed dump keeps are addresses:
/// nothing else of those lines, whatever the input, reaches a reading.
fn peers_are_addresses(dump: &vrrp_agent::keepalived::parse::ParsedDump) {
    for i in &dump.instances {
        for p in i.unicast_peers.iter().chain(&i.master_router) {
            assert!(
                p.parse::<std::net::IpAddr>().is_ok(),
                "a kept peer or master router is an address: {p:?}"
            );
        }
    }
}

/// keepalived's text data dump (`keepalived.data`).
pub fn dump_data(data: &[u8]) {
    if let Some(t) = text(data) {
        if let Ok(dump) = vrrp_agent::keepalived::parse::parse_data(t) {
            vips_are_addresses(&dump);
            peers_are_addresses(&dump);
        }
    }
}

/// keepalived's statistics dump (`keepalived.stats`).
pub fn dump_stats(data: &[u8]) {
    if let Some(t) = text(data) {
        let _ = vrrp_agent::keepalived::parse::parse_stats(t);
    }
}

/// keepalived's JSON dump (`keepalived.json`).
pub fn dump_json(data: &[u8]) {
    if let Some(t) = text(data) {
        if let Ok(dump) = vrrp_agent::keepalived::parse::parse_json(t) {
            vips_are_addresses(&dump);
        }
    }
}

/// A webhook body template: compiled as the API does at save time, then rendered
/// for a sample event; a template that compiles always renders to JSON.
pub fn template(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Ok(compiled) = vrrp_monitor::webhooks::template::compile(t) else {
        return;
    };
    let ctx = json!({
        "event": { "id": "e1", "kind": "vrrp.master_changed", "level": "warning",
                   "message": "lb-2 is now MASTER of VRID 51", "detail": "<b>&\"quoted\"</b>",
                   "occurredAt": "2026-11-25T08:00:00.000Z", "clientId": "c1",
                   "subject": { "instanceName": "VI_1", "vrid": 51 },
                   "data": { "from": "BACKUP", "to": "MASTER", "list": [1, 2, 3] } },
        "client": { "name": "lb-2", "site": null },
        "server": { "url": "http://localhost:3010" }
    });
    let rendered: Value = compiled.render(&ctx);
    // Must serialise (what the delivery sends).
    let _ = serde_json::to_vec(&rendered).expect("a rendered body serialises");
}

/// A frame from an agent, as the server's session reads it: the envelope, then an
/// ACTIVITY batch (every event with an id is acknowledged or refused, never lost
/// silently) or a reading.
pub fn agent_message(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Some((kind, payload)) = vrrp_monitor::agents::session::message(t) else {
        return;
    };
    match kind.as_str() {
        "ACTIVITY" => {
            let now = chrono::Utc::now();
            if let Some(entries) = vrrp_monitor::activity::parse_batch(&payload, "client", now) {
                // One outcome per event, never more.
                assert!(entries.len() <= payload["events"].as_array().map_or(0, Vec::len));
            }
        }
        _ => {
            let _ = serde_json::from_value::<vrrp_protocol::Reading>(payload);
        }
    }
}

/// A frame from the server, as the agent's connection session reads it, after a
/// complete AUTH exchange: must never panic whatever arrives.
pub fn server_message(data: &[u8]) {
    use vrrp_agent::connection::session::{Ctx, Session};
    let Some(t) = text(data) else { return };
    let queue = parking_lot::Mutex::new(vrrp_agent::store::queue::Queue::default());
    let ctx = Ctx {
        now: std::time::Instant::now(),
        utc: chrono::Utc::now(),
        queue: &queue,
        server: "fuzz-client",
    };
    let (mut session, _) = Session::start(&ctx);
    let _ = session.on_text(
        r#"{"type":"AUTH_SUCCESS","payload":{"lastSyncTime":null}}"#,
        &ctx,
    );
    for frame in t.split('\n') {
        let _ = session.on_text(frame, &ctx);
    }
}

/// A REST body as the HTTP layer parses it, then the validators of the settings
/// and webhook routes: a refusal always names a field.
pub fn rest_body(data: &[u8]) {
    let Ok(body) = vrrp_monitor::http::api::validate::Body::parse(data) else {
        return;
    };
    if let Err((field, message)) = vrrp_monitor::config::settings::validate_update(body.object()) {
        assert!(!field.is_empty() && !message.is_empty());
    }
    let _ = vrrp_monitor::webhooks::store::validate(body.object());
}

/// The agent's config file (YAML or JSON) as loaded at start.
pub fn agent_config(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let env = std::collections::HashMap::new();
    let _ = vrrp_agent::config::load(&env, Some(t), std::path::Path::new("/nonexistent/agent"));
}

/// The raw HTTP request path both binaries share (the patched tiny_http under
/// `vendor/`: request line, headers, Content-Length and chunked bodies,
/// keep-alive sequences, upgrades): the bytes arrive on a socket as from a
/// client. Whatever arrives, no request's head passes the 16 KiB cap and no
/// body is read past its framing.
pub fn http_request(data: &[u8]) {
    // Bounded so one input stays quick: the cap itself is what must hold.
    if data.len() > 64 * 1024 {
        return;
    }
    for r in tiny_http::fuzz_parse(data).into_iter().flatten() {
        let (method, url, body) = r;
        assert!(
            method.len() + url.len() <= tiny_http::MAX_HEAD,
            "a head past the cap was served"
        );
        assert!(body.len() <= data.len(), "a body longer than the input");
    }
}
