//! A server pair in the browser: the Settings page's heartbeat card shows a failing
//! URL's error, keeps a refused interval beside its field, and shows the last
//! success once a working URL is saved; the header of a server without its
//! `ha.vip` says "standby".

use crate::harness::{free_port, Auth, Launch, ADMIN_PASSWORD};
use crate::login;
use crate::webdriver::Browser;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// Answers 200 to every request; counts them.
fn receiver() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, hits)
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_heartbeat_card_shows_failure_and_success_and_a_standby_server_says_so() {
    let closed = free_port();
    let server = Launch::new()
        .config(&format!(
            "heartbeat:\n  url: 'http://127.0.0.1:{closed}/ping/secret'\n  method: GET\n\
             ha:\n  vip: 192.0.2.222\n"
        ))
        .start();
    let admin = server.admin();
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/settings");
    b.wait("#heartbeat .heartbeat-error");
    b.wait_text("#pair-role", "standby");
    b.screenshot("settings-heartbeat-failing");

    // A refused interval: the API's text beside the field, the value kept.
    b.set_field("#heartbeat #f-interval_seconds", "5");
    b.click("#heartbeat button[type=submit]");
    b.wait_text(
        "[data-error-for=interval_seconds]",
        "interval_seconds: must be",
    );

    // A working URL: saved, beaten at once, shown as the last success.
    let (port, hits) = receiver();
    b.set_field("#heartbeat #f-interval_seconds", "60");
    b.set_field(
        "#heartbeat #f-url",
        &format!("http://127.0.0.1:{port}/hc/uuid"),
    );
    b.click("#heartbeat button[type=submit]");
    b.wait_text("#heartbeat .note", "Saved");
    // The page asks every 5 s; the beat went out when the block was saved.
    b.wait_js(
        "a last success",
        "const e = document.querySelector('#heartbeat .last-success'); return !!e && !e.textContent.includes('never')",
        serde_json::json!([]),
    );
    assert!(hits.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert!(b.find("#heartbeat .heartbeat-error").is_none());
    let saved = server
        .get("/api/v1/settings/heartbeat", Auth::Cookie(&admin))
        .body;
    assert_eq!(saved["url"], format!("http://127.0.0.1:{port}/hc/uuid"));
    assert_eq!(saved["interval_seconds"], 60);
    b.screenshot("settings-heartbeat-ok");
}
