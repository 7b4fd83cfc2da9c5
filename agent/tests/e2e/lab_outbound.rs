//! Outbound mode end to end with real keepalived: three hosts of
//! scripts/lab, the real server in the lab's switch namespace
//! dialling the real agents on the management network (203.0.113.1N:3011).
//!
//! h1 is registered with its setup PIN (plain ws), h2 with a registration secret
//! from its environment, h3 speaks TLS with a self-signed certificate the test
//! makes (refused until the server allows self-signed agent certificates).
//! Every 503 reason is produced for real on the way; then readings and a real
//! failover arrive, an agent restarted is redialled by the server's ladder,
//! `reconnect` and a changed address redial at once, and the sealed token is
//! nowhere in the server's database files.
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl, openssl.

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

fn mgmt(host: &str) -> String {
    let n: u8 = host.trim_start_matches('h').parse().unwrap();
    format!("203.0.113.{}", 10 + n)
}

fn create(server: &Server, admin: &str, address: &str, secret: &str) -> (u16, Value) {
    let (s, _, b) = request(
        "POST",
        &format!("{}/api/v1/clients/outbound", server.local_url()),
        Some(admin),
        Some(&json!({ "outboundTargetAddress": address, "registrationSecret": secret })),
    );
    (s, b)
}

fn error_of(b: &Value) -> String {
    b["error"].as_str().unwrap_or_default().to_string()
}

fn pin_of(a: &HostAgent, nth: usize) -> String {
    wait_for("a setup PIN", 15, || {
        a.log()
            .lines()
            .filter_map(|l| l.split("Setup PIN: ").nth(1).map(|p| p.trim().to_string()))
            .nth(nth)
    })
}

fn client(server: &Server, admin: &str, id: &str) -> Value {
    server
        .get(admin, "/api/v1/clients")
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn connected_count(server: &Server, admin: &str, id: &str) -> usize {
    server
        .get(admin, "/api/v1/activity")
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "client.connected" && a["clientId"] == id)
        .count()
}

fn online(server: &Server, admin: &str, id: &str) -> bool {
    client(server, admin, id)["status"] == "online"
}

/// A self-signed certificate for `ip`, made with openssl in `dir`.
fn self_signed(dir: &std::path::Path, ip: &str) -> (String, String) {
    let (cert, key) = (dir.join("agent-cert.pem"), dir.join("agent-key.pem"));
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", &format!("/CN={ip}")])
        .args(["-addext", &format!("subjectAltName=IP:{ip}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert.display().to_string(), key.display().to_string())
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_server_registers_and_keeps_dialling_three_agents() {
    let (lab, mut server) = lab_with_server(3, "vout");
    server.start();
    let admin = server.admin();

    let mut h1 = HostAgent::new(&lab, "h1");
    let mut h2 = HostAgent::new(&lab, "h2");
    let mut h3 = HostAgent::new(&lab, "h3");
    let (cert, key) = self_signed(&h3.dir, &mgmt("h3"));
    fs::write(
        h3.dir.join("config.yaml"),
        format!("{CONFIG}tls:\n  cert: {cert}\n  key: {key}\n"),
    )
    .unwrap();

    // --- Nothing listening yet: the underlying error, at once.
    let t0 = Instant::now();
    let (s, b) = create(&server, &admin, &mgmt("h1"), "K7QM-3XRD");
    assert_eq!(s, 503, "{b}");
    assert!(
        error_of(&b).starts_with("Could not establish connection to client. ")
            && error_of(&b).contains("203.0.113.11"),
        "{b}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));

    h1.start(&lab);
    let pin = pin_of(&h1, 0);

    // --- A plain agent dialled as wss://.
    let (s, b) = create(&server, &admin, &format!("wss://{}", mgmt("h1")), &pin);
    assert_eq!(s, 503, "{b}");

    // --- Wrong PINs: the reason, and a new PIN after five.
    for attempt in 1..=5 {
        let (s, b) = create(&server, &admin, &mgmt("h1"), "AAAA-AAAA");
        assert_eq!(s, 503, "attempt {attempt}: {b}");
        assert!(error_of(&b).contains("Invalid secret"), "{b}");
    }
    let pin = pin_of(&h1, 1);

    // --- The right PIN: a client, dialled, online.
    let (s, b) = create(&server, &admin, &mgmt("h1"), &pin);
    assert_eq!(s, 200, "{b}");
    let id1 = b["id"].as_str().unwrap().to_string();
    assert_eq!(
        b["hostname"],
        mgmt("h1"),
        "hostname defaults to the address"
    );
    wait_for("h1 online", 15, || {
        online(&server, &admin, &id1).then_some(())
    });
    assert_eq!(client(&server, &admin, &id1)["connectionMode"], "outbound");

    // --- Identity present: the agent refuses a second registration.
    let (s, b) = create(&server, &admin, &mgmt("h1"), &pin);
    assert_eq!(s, 503, "{b}");
    assert!(error_of(&b).contains("delete identity.json"), "{b}");

    // --- h2's management port detached: the network's own error, passed on.
    lab.run(&["isolate", "h2"]);
    let (s, b) = create(&server, &admin, &mgmt("h2"), "K7QM-3XRD");
    assert_eq!(s, 503, "{b}");
    assert!(error_of(&b).contains("203.0.113.12:3011"), "{b}");
    lab.run(&["heal", "h2"]);

    // --- A host that takes the connection and never answers: the 10 s timeout.
    let silent = std::net::TcpListener::bind("203.0.113.254:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let t0 = Instant::now();
    let (s, b) = create(
        &server,
        &admin,
        &format!("203.0.113.254:{silent_port}"),
        "K7QM-3XRD",
    );
    assert_eq!(s, 503, "{b}");
    assert!(error_of(&b).contains("no answer within 10 s"), "{b}");
    assert!(t0.elapsed() >= Duration::from_secs(9), "{:?}", t0.elapsed());
    drop(silent);

    // --- h2 with a registration secret from its environment.
    let secret = "a-registration-secret-for-h2";
    fs::write(h2.dir.join("secret"), secret).unwrap();
    h2.env.push((
        "SVC_REGISTRATION_SECRET_FILE".into(),
        h2.dir.join("secret").display().to_string(),
    ));
    h2.start(&lab);
    let (s, b) = create(
        &server,
        &admin,
        &format!("ws://{}:3011", mgmt("h2")),
        secret,
    );
    assert_eq!(s, 200, "{b}");
    let id2 = b["id"].as_str().unwrap().to_string();
    wait_for("h2 online", 15, || {
        online(&server, &admin, &id2).then_some(())
    });
    wait_for("the secret's removal asked for", 10, || {
        h2.log().contains("SVC_REGISTRATION_SECRET").then_some(())
    });

    // --- h3 speaks TLS: dialled as plaintext it fails; as wss:// its
    // self-signed certificate is refused until the server allows it.
    h3.start(&lab);
    let pin3 = pin_of(&h3, 0);
    let (s, b) = create(&server, &admin, &mgmt("h3"), &pin3);
    assert_eq!(s, 503, "plain against TLS: {b}");
    let (s, b) = create(&server, &admin, &format!("wss://{}", mgmt("h3")), &pin3);
    assert_eq!(s, 503, "{b}");
    assert!(error_of(&b).to_lowercase().contains("certificate"), "{b}");
    server.stop();
    let config = server.dir.join("data/config.yaml");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(
        &config,
        format!("{text}\nsecurity:\n  allow_self_signed_agent_certificates: true\n"),
    )
    .unwrap();
    server.start();
    let admin = server.admin();
    wait_for("h1 and h2 redialled after the server's restart", 20, || {
        (online(&server, &admin, &id1) && online(&server, &admin, &id2)).then_some(())
    });
    let (s, b) = create(&server, &admin, &format!("wss://{}", mgmt("h3")), &pin3);
    assert_eq!(s, 200, "{b}");
    let id3 = b["id"].as_str().unwrap().to_string();
    wait_for("h3 online over wss", 15, || {
        online(&server, &admin, &id3).then_some(())
    });

    // --- Readings of all three, and a real failover reported.
    wait_for("three readings", 20, || {
        (server
            .get(&admin, "/api/v1/keepalived/states")
            .as_array()
            .unwrap()
            .len()
            == 3)
            .then_some(())
    });
    lab.run(&["failover", "h1"]);
    wait_for("h2's takeover reported", 30, || {
        server
            .get(&admin, "/api/v1/activity")
            .as_array()
            .unwrap()
            .iter()
            .any(|a| {
                a["kind"] == "vrrp.state_changed"
                    && a["clientId"] == id2
                    && a["data"]["to"] == "MASTER"
            })
            .then_some(())
    });
    lab.run(&["start", "h1"]);

    // --- An agent restarted: the server's ladder dials it again (5 s step).
    let before = connected_count(&server, &admin, &id2);
    h2.kill(nix::sys::signal::Signal::SIGTERM);
    wait_for("h2 offline", 10, || {
        (!online(&server, &admin, &id2)).then_some(())
    });
    h2.start(&lab);
    let back = Instant::now();
    wait_for("h2 redialled", 20, || {
        online(&server, &admin, &id2).then_some(())
    });
    println!(
        "h2 back online {:?} after its agent restarted",
        back.elapsed()
    );
    assert!(connected_count(&server, &admin, &id2) > before);

    // --- reconnect: closes and dials at once.
    let before = connected_count(&server, &admin, &id1);
    let (s, _, b) = request(
        "POST",
        &format!("{}/api/v1/clients/{id1}/reconnect", server.local_url()),
        Some(&admin),
        None,
    );
    assert_eq!((s, b), (200, json!({ "status": "reconnecting" })));
    wait_for("h1 reconnected at once", 3, || {
        (connected_count(&server, &admin, &id1) > before && online(&server, &admin, &id1))
            .then_some(())
    });

    // --- A changed address (h1's VRRP-side address): dialled at once.
    let before = connected_count(&server, &admin, &id1);
    let (s, _, b) = request(
        "PUT",
        &format!("{}/api/v1/clients/{id1}", server.local_url()),
        Some(&admin),
        Some(&json!({ "outboundTargetAddress": "192.0.2.11:3011" })),
    );
    assert_eq!(s, 200, "{b}");
    wait_for("h1 dialled at its new address", 3, || {
        (connected_count(&server, &admin, &id1) > before && online(&server, &admin, &id1))
            .then_some(())
    });
    assert_eq!(
        client(&server, &admin, &id1)["outboundTargetAddress"],
        "192.0.2.11:3011"
    );

    // --- The auth token is nowhere in the server's database files.
    let identity: Value =
        serde_json::from_str(&fs::read_to_string(h1.dir.join("data/identity.json")).unwrap())
            .unwrap();
    let token = identity["authToken"].as_str().expect("h1's token");
    for entry in fs::read_dir(server.dir.join("data")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = fs::read(&path).unwrap_or_default();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "the token is in {}",
            path.display()
        );
    }
    assert!(
        !server.log_text().contains(token),
        "the token is in the log"
    );

    // --- Deleted: closed with 4000, never dialled again.
    let (s, _, _) = request(
        "DELETE",
        &format!("{}/api/v1/clients/{id3}", server.local_url()),
        Some(&admin),
        None,
    );
    assert_eq!(s, 200);
    wait_for("h3's agent sees the close", 10, || {
        // h3 speaks HTTPS only.
        let (_, body) = lab.curl(
            "h3",
            &["-k", "https://127.0.0.1:3011/api/status/connection"],
        );
        let status: Value = serde_json::from_str(&body).ok()?;
        (status["connected"] == false).then_some(())
    });
    assert!(
        client(&server, &admin, &id3).is_null(),
        "the deleted client is gone"
    );
}
