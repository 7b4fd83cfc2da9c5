//! Hostile input, against the real binary over raw sockets: no input
//! freezes the API or ends the process, and what was stored before is still
//! there after each attack.
//!
//! Upgrade requests that are no WebSocket handshake, request heads without end,
//! slow bodies, control characters in names, a NUL in a stored user name,
//! requests from another origin, and the headers every answer carries.

use crate::harness::{Auth, Server, Ws};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn raw(server: &Server, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// The status of the answer waiting on `s`, if one comes within `wait`.
fn status_of(s: &mut TcpStream, wait: Duration) -> Option<u16> {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let line = String::from_utf8_lossy(&head);
    line.split(' ').nth(1)?.parse().ok()
}

/// Whether the server closed `s` (EOF or reset) within `wait`, answers skipped.
fn closes_within(s: &mut TcpStream, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return true,
        }
    }
    false
}

fn health_within(server: &Server, limit: Duration) {
    let t = Instant::now();
    let answer = server.get("/api/health", Auth::None);
    let took = t.elapsed();
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert!(took < limit, "health took {took:?}");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Something stored before an attack, to read back after it.
fn store_a_user(server: &Server, admin: &str, name: &str) {
    let created = server.post(
        "/api/v1/users",
        Auth::Cookie(admin),
        &json!({ "username": name, "password": "a-long-password-1" }).to_string(),
    );
    assert_eq!(created.status, 201, "{:?}", created.body);
}

fn user_names(server: &Server, admin: &str) -> Vec<String> {
    let list = server.get("/api/v1/users", Auth::Cookie(admin));
    assert_eq!(list.status, 200, "{:?}", list.body);
    list.body
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn upgrade_requests_that_are_no_handshake_are_refused_and_hold_no_worker() {
    let server = Server::start();
    let admin = server.admin();
    store_a_user(&server, &admin, "kept-before-upgrades");
    // Three per HTTP worker: on the old code each held a worker reading the
    // socket "to its end" and health got no answer at all.
    let mut conns: Vec<TcpStream> = (0..12)
        .map(|_| raw(&server, b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n\r\n"))
        .chain((0..12).map(|_| {
            raw(
                &server,
                b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n",
            )
        }))
        .collect();
    health_within(&server, Duration::from_secs(1));
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(
            status_of(c, Duration::from_secs(5)),
            Some(400),
            "connection {i}"
        );
    }
    health_within(&server, Duration::from_secs(1));
    assert!(user_names(&server, &admin).contains(&"kept-before-upgrades".to_owned()));
}

#[test]
fn request_heads_are_at_most_16_kib_and_endless_ones_cost_no_memory() {
    let server = Server::start();
    let admin = server.admin();
    store_a_user(&server, &admin, "kept-before-heads");
    // Just below the limit: served.
    let pad = "a".repeat(15 * 1024);
    let mut ok = raw(
        &server,
        format!("GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Pad: {pad}\r\n\r\n").as_bytes(),
    );
    assert_eq!(status_of(&mut ok, Duration::from_secs(5)), Some(200));
    // Above it: 431, and the connection closes (the rest is never read).
    let pad = "a".repeat(17 * 1024);
    let mut big = raw(
        &server,
        format!("GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Pad: {pad}\r\n\r\n").as_bytes(),
    );
    assert_eq!(status_of(&mut big, Duration::from_secs(5)), Some(431));
    assert!(closes_within(&mut big, Duration::from_secs(5)));

    // Ten headers without end, 8 MiB each offered as fast as the server takes
    // them: refused early, the server's memory barely moves.
    let before = rss_kib(server.pid());
    let port = server.port();
    let senders: Vec<_> = (0..10)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                let _ = s.write_all(b"GET /api/v1/ping HTTP/1.1\r\nX-Endless: ");
                let chunk = vec![b'b'; 64 * 1024];
                let mut sent = 0usize;
                while sent < 8 * 1024 * 1024 {
                    if s.write_all(&chunk).is_err() {
                        break;
                    }
                    sent += chunk.len();
                }
                sent
            })
        })
        .collect();
    for s in senders {
        let sent = s.join().unwrap();
        assert!(
            sent < 8 * 1024 * 1024,
            "an endless header was taken whole ({sent} bytes)"
        );
    }
    let grown = rss_kib(server.pid()).saturating_sub(before);
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    health_within(&server, Duration::from_secs(1));
    assert!(user_names(&server, &admin).contains(&"kept-before-heads".to_owned()));
}

#[test]
fn slow_bodies_hold_no_worker() {
    let server = Server::start();
    let admin = server.admin();
    store_a_user(&server, &admin, "kept-before-bodies");
    // Bodies that never finish, two per worker: a declared length, and chunks.
    let _slow: Vec<TcpStream> = (0..8)
        .map(|_| {
            raw(
                &server,
                b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"user",
            )
        })
        .chain((0..8).map(|_| {
            raw(
                &server,
                b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n{\"user\r\n",
            )
        }))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    health_within(&server, Duration::from_secs(1));
    // A body declared larger than 1 MiB is refused by its length, unread.
    let mut huge = raw(
        &server,
        b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n",
    );
    assert_eq!(status_of(&mut huge, Duration::from_secs(5)), Some(413));
    // And one that claims more than memory holds, two per worker: refused by
    // its length, never allocated, never drained (the connection just ends).
    let mut absurd: Vec<TcpStream> = (0..16)
        .map(|_| {
            raw(
                &server,
                b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{}",
            )
        })
        .collect();
    for (i, c) in absurd.iter_mut().enumerate() {
        assert_eq!(
            status_of(c, Duration::from_secs(5)),
            Some(413),
            "connection {i}"
        );
        assert!(
            closes_within(c, Duration::from_secs(5)),
            "connection {i} stayed open"
        );
    }
    health_within(&server, Duration::from_secs(1));
    assert!(user_names(&server, &admin).contains(&"kept-before-bodies".to_owned()));
}

#[test]
fn names_and_comments_with_control_characters_are_refused() {
    let server = Server::start();
    let admin = server.admin();
    let post = |path: &str, body: serde_json::Value| {
        server.post(path, Auth::Cookie(&admin), &body.to_string())
    };
    for name in ["nul\u{0}user", "two\nlines", "bell\u{7}"] {
        let a = post(
            "/api/v1/users",
            json!({ "username": name, "password": "a-long-password-1" }),
        );
        assert_eq!(a.status, 400, "{name:?}: {:?}", a.body);
        assert_eq!(a.error(), "username: must not contain control characters");
    }
    let a = post(
        "/api/v1/webhooks",
        json!({ "name": "chat\r\nX", "url": "http://127.0.0.1:9/x", "bodyTemplate": "{}" }),
    );
    assert_eq!(a.status, 400, "{:?}", a.body);
    assert_eq!(a.error(), "name: must not contain control characters");
    let ends_at = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let a = post(
        "/api/v1/silences",
        json!({ "matcher": { "kind": "vrrp.*" }, "endsAt": ends_at, "comment": "fix\u{0}" }),
    );
    assert_eq!(a.status, 400, "{:?}", a.body);
    assert_eq!(a.error(), "comment: must not contain control characters");
    let agent = server.register_agent(&admin, "lb-names");
    let path = format!("/api/v1/clients/{}", agent.id);
    for (field, value) in [("displayName", "a\u{1b}[31m"), ("site", "dc\n1")] {
        let a = server.put(
            &path,
            Auth::Cookie(&admin),
            &json!({ field: value }).to_string(),
        );
        assert_eq!(a.status, 400, "{field}: {:?}", a.body);
        assert_eq!(
            a.error(),
            format!("{field}: must not contain control characters")
        );
    }
    // Nothing of it was stored; a clean name still is.
    assert!(!user_names(&server, &admin)
        .iter()
        .any(|n| n.contains("user")));
    let fine = server.put(
        &path,
        Auth::Cookie(&admin),
        &json!({ "site": "dc-1" }).to_string(),
    );
    assert_eq!(fine.status, 200, "{:?}", fine.body);
}

#[test]
fn a_nul_in_a_stored_user_name_costs_no_process() {
    let server = Server::start();
    let admin = server.admin();
    store_a_user(&server, &admin, "nuluser");
    // Stored before the rule existed (or by hand): the API no longer takes it.
    server
        .sql("UPDATE users SET username = 'nul' || char(0) || 'user' WHERE username = 'nuluser';");
    let token = server.login("nul\u{0}user", "a-long-password-1");
    // On the old code the thread name `ws-dash:nul\0user` panicked and the
    // process exited.
    let mut dash = server.dashboard(&token);
    dash.expect("CLIENTS_UPDATE");
    health_within(&server, Duration::from_secs(1));
    assert!(server
        .thread_names()
        .iter()
        .any(|n| n.starts_with("ws-dash:") && !n.contains("nul")));
    assert!(user_names(&server, &admin).len() >= 2);
}

#[test]
fn another_origin_may_not_change_anything_or_read_the_feed() {
    let server = Server::start();
    let admin = server.admin();
    let own = format!("http://127.0.0.1:{}", server.port());
    let tokens = |headers: &[(&str, &str)]| {
        server.request(
            "POST",
            "/api/v1/tokens",
            Auth::Cookie(&admin),
            headers,
            Some("{}"),
        )
    };
    // Another port of the same host is same-site, not same-origin.
    let foreign = tokens(&[("origin", "http://127.0.0.1:1")]);
    assert_eq!(foreign.status, 403, "{:?}", foreign.body);
    assert_eq!(foreign.error(), "origin: not this server's origin");
    assert_eq!(tokens(&[("sec-fetch-site", "same-site")]).status, 403);
    assert_eq!(tokens(&[("origin", "null")]).status, 403);
    // The server's own origin, and scripts that send none, still work.
    assert_eq!(tokens(&[("origin", own.as_str())]).status, 200);
    assert_eq!(tokens(&[("sec-fetch-site", "same-origin")]).status, 200);
    assert_eq!(tokens(&[]).status, 200);

    // A `no-cors` text/plain POST (all another page can send without asking).
    let mut plain = raw(
        &server,
        format!(
            "POST /api/v1/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: svc_session={admin}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        )
        .as_bytes(),
    );
    assert_eq!(status_of(&mut plain, Duration::from_secs(5)), Some(415));
    let list = server.get("/api/v1/tokens", Auth::Cookie(&admin));
    assert_eq!(list.status, 200, "{:?}", list.body);
    let listed = list.body.as_array().map_or_else(
        || list.body["tokens"].as_array().map_or(0, Vec::len),
        Vec::len,
    );
    assert_eq!(
        listed, 3,
        "only the same-origin and script tokens: {:?}",
        list.body
    );

    // The live feed: the upgrade from another origin is refused.
    use tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://127.0.0.1:{}/ws/dashboard", server.port())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("cookie", format!("svc_session={admin}").parse().unwrap());
    request
        .headers_mut()
        .insert("origin", "http://127.0.0.1:1".parse().unwrap());
    let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    match tungstenite::client::client(request, stream) {
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(resp))) => {
            assert_eq!(resp.status().as_u16(), 403)
        }
        Err(e) => panic!("unexpected failure: {e}"),
        Ok(_) => panic!("a foreign origin got the live feed"),
    }
    let cookie = format!("svc_session={admin}");
    let mut same = Ws::connect(
        server.port(),
        "/ws/dashboard",
        &[("cookie", cookie.as_str()), ("origin", own.as_str())],
    );
    same.expect("CLIENTS_UPDATE");
}

#[test]
fn every_answer_says_no_referrer() {
    let server = Server::start();
    for path in ["/api/health", "/api/v1/nothing-here", "/login"] {
        let a = server.get(path, Auth::None);
        assert_eq!(a.header("referrer-policy"), Some("no-referrer"), "{path}");
    }
    // The answers tiny_http writes itself: too large a head, a request line
    // it cannot read, a header without a colon, a version above 1.1.
    let big = format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "a".repeat(20_000));
    for (request, status) in [
        (big.as_str(), "431"),
        ("NONSENSE\r\n\r\n", "400"),
        ("GET / HTTP/1.1\r\nno colon here\r\n\r\n", "400"),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", "505"),
    ] {
        let mut s = raw(&server, request.as_bytes());
        let mut text = String::new();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.read_to_string(&mut text);
        assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{text}");
        assert!(
            text.to_ascii_lowercase()
                .contains("\r\nreferrer-policy: no-referrer\r\n"),
            "{status}: {text}"
        );
    }
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
}

/// A one-request HTTP answerer on loopback: answers every request with
/// `answer` and counts the requests it saw.
fn answerer(answer: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

#[test]
fn webhooks_follow_no_redirect_and_reach_no_numeric_or_link_local_host() {
    use std::sync::atomic::Ordering;
    let server = Server::start();
    let admin = server.admin();
    let (internal, internal_seen) = answerer(
        "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\ninternal secret".into(),
    );
    let location = format!("http://127.0.0.1:{internal}/secret");
    let (redirector, _) = answerer(format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ));
    let hook = json!({ "name": "chat", "url": format!("http://127.0.0.1:{redirector}/hook"), "bodyTemplate": "{}" });
    let a = server.post(
        "/api/v1/webhooks/test",
        Auth::Cookie(&admin),
        &hook.to_string(),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["ok"], false, "{:?}", a.body);
    assert_eq!(a.body["status"], 302, "{:?}", a.body);
    let error = a.body["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("302") && error.contains(&location),
        "{error}"
    );
    assert!(
        !a.body.to_string().contains("internal secret"),
        "{:?}",
        a.body
    );
    assert_eq!(
        internal_seen.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );

    // Stored before the refusals, read back after them.
    let stored = server.post("/api/v1/webhooks", Auth::Cookie(&admin), &hook.to_string());
    assert_eq!(stored.status, 201, "{:?}", stored.body);
    for url in [
        "http://2130706433/x",
        "http://0x7f000001/x",
        "http://127.1/x",
        "http://0177.0.0.1/x",
    ] {
        let a = server.post(
            "/api/v1/webhooks",
            Auth::Cookie(&admin),
            &json!({ "name": "n", "url": url, "bodyTemplate": "{}" }).to_string(),
        );
        assert_eq!(a.status, 400, "{url}: {:?}", a.body);
        assert!(
            a.error().starts_with("url: ") && a.error().contains("dotted quad"),
            "{url}: {}",
            a.error()
        );
    }
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/x",
    ] {
        let a = server.post(
            "/api/v1/webhooks",
            Auth::Cookie(&admin),
            &json!({ "name": "n", "url": url, "bodyTemplate": "{}" }).to_string(),
        );
        assert_eq!(a.status, 400, "{url}: {:?}", a.body);
        assert!(a.error().contains("link-local"), "{url}: {}", a.error());
        // The test endpoint, which saves nothing, does not send there either.
        let t = server.post(
            "/api/v1/webhooks/test",
            Auth::Cookie(&admin),
            &json!({ "name": "n", "url": url, "bodyTemplate": "{}" }).to_string(),
        );
        assert_eq!(t.status, 400, "{url}: {:?}", t.body);
        assert!(t.error().contains("link-local"), "{:?}", t.body);
    }
    let list = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(names, ["chat"]);
}

#[test]
fn link_local_webhook_targets_only_from_webhooks_allowed_networks() {
    let launch = crate::harness::Launch::new()
        .config("webhooks:\n  allowed_networks: ['169.254.169.254/32', 'fe80::/64']\n");
    let server = launch.start();
    let admin = server.admin();
    for (url, status) in [
        ("http://169.254.169.254/hook", 201),
        ("http://[fe80::1]/hook", 201),
        ("http://169.254.1.1/hook", 400),
    ] {
        let a = server.post(
            "/api/v1/webhooks",
            Auth::Cookie(&admin),
            &json!({ "name": "n", "url": url, "bodyTemplate": "{}" }).to_string(),
        );
        assert_eq!(a.status, status, "{url}: {:?}", a.body);
    }
    // A bad entry stops the start, naming the entry.
    let (status, lines) = crate::harness::Launch::new()
        .config("webhooks:\n  allowed_networks: ['not-a-network']\n")
        .run_to_exit();
    assert!(!status.success());
    let text = serde_json::Value::Array(lines).to_string();
    assert!(text.contains("webhooks.allowed_networks[0]"), "{text}");
}

#[test]
fn a_stop_closes_agent_and_dashboard_sockets_with_1001() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-stop");
    let mut agent_ws = server.connect_agent(&agent);
    let mut dashboard = server.dashboard(&admin);
    dashboard.expect("CLIENTS_UPDATE");
    server.signal(15);
    let shutting_down = crate::harness::Ending::Close(1001, "Server shutting down".into());
    assert_eq!(agent_ws.ending(), shutting_down);
    assert_eq!(dashboard.ending(), shutting_down);
    let (status, launch) = server.stop();
    assert!(status.success(), "{status:?}");
    // What was stored is there after the restart, and no disconnect was
    // recorded for a stop the agents did not cause.
    let server = launch.start();
    let admin = server.admin();
    let clients = server.get("/api/v1/clients", Auth::Cookie(&admin));
    assert!(
        clients.body.to_string().contains(&agent.id),
        "{:?}",
        clients.body
    );
    let activity = server
        .get("/api/v1/activity", Auth::Cookie(&admin))
        .body
        .to_string();
    assert!(!activity.contains("client.disconnected"), "{activity}");
}

#[test]
fn user_text_cannot_forge_a_log_line() {
    let server = crate::harness::Launch::new()
        .env("LOG_FORMAT", "pretty")
        .start();
    let admin = server.admin();
    let forged = "2026-01-01T00:00:00.000Z ERROR [forged] the database is gone";
    let agent = server.register_agent(&admin, &format!("lb-1\n{forged}"));
    drop(server.connect_agent(&agent));
    assert!(server.wait_log("disconnected"), "{}", server.log_text());
    let log = server.log_text();
    assert!(!log.lines().any(|l| l.starts_with(forged)), "{log}");
    assert!(log.contains(&format!("lb-1\\n{forged}")), "{log}");
    // The name is stored as given: escaping is the log's business only.
    let clients = server
        .get("/api/v1/clients", Auth::Cookie(&admin))
        .body
        .to_string();
    assert!(clients.contains("lb-1\\n2026"), "{clients}");
}

#[test]
fn a_nul_in_a_stored_webhook_name_costs_no_process() {
    use std::sync::atomic::Ordering;
    let server = Server::start();
    let admin = server.admin();
    let (target, seen) =
        answerer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".into());
    let hook = json!({ "name": "chat", "url": format!("http://127.0.0.1:{target}/hook"),
                       "bodyTemplate": "{\"k\": \"{{event.kind}}\"}", "minLevel": "trace" });
    let created = server.post("/api/v1/webhooks", Auth::Cookie(&admin), &hook.to_string());
    assert_eq!(created.status, 201, "{:?}", created.body);
    // Stored before the rule (or by hand): on the old code the thread name
    // `webhook:chat\0x` panicked on the recording thread and ended the process.
    server.sql("UPDATE webhooks SET name = 'chat' || char(0) || 'x';");
    let agent = server.register_agent(&admin, "lb-hook");
    let _ws = server.connect_agent(&agent);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "no delivery: {}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    health_within(&server, Duration::from_secs(1));
    assert!(server
        .thread_names()
        .iter()
        .any(|n| n.starts_with("webhook:") && !n.contains("chat")));
    let list = server.get("/api/v1/webhooks", Auth::Cookie(&admin));
    assert_eq!(
        list.body.as_array().map(Vec::len),
        Some(1),
        "{:?}",
        list.body
    );
}

#[test]
fn an_http_2_request_line_is_answered_505_and_holds_no_thread() {
    let server = Server::start();
    let threads_before = server.thread_names().len();
    // On the code before, each of these hung one of tiny_http's connection
    // threads forever (its 505 waited for a writer that was never released).
    let mut conns: Vec<TcpStream> = (0..20)
        .map(|_| raw(&server, b"GET /api/health HTTP/2.0\r\nHost: x\r\n\r\n"))
        .collect();
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(
            status_of(c, Duration::from_secs(5)),
            Some(505),
            "connection {i}"
        );
        assert!(
            closes_within(c, Duration::from_secs(5)),
            "connection {i} stayed open"
        );
    }
    health_within(&server, Duration::from_secs(1));
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.thread_names().len() > threads_before + 5 {
        assert!(
            Instant::now() < deadline,
            "threads stayed: {:?}",
            server.thread_names()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
