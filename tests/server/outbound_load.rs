//! The load generator's outbound mode (`vrrp-load outbound`, used by
//! scripts/bench-outbound.sh) against the real server: its agents register
//! through `POST /api/v1/clients/outbound` over the real `/ws/register`, are
//! dialled on `/ws/agent` with the identity they were issued, report readings
//! the server stores, and take a redial (the API's reconnect) as a real agent
//! does.

use crate::harness::{Auth, Launch, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const AGENTS: usize = 5;

fn outbound_clients(server: &Server, admin: &str) -> Vec<Value> {
    let list = server.get("/api/v1/clients", Auth::Cookie(admin));
    assert_eq!(list.status, 200, "{:?}", list.body);
    list.body
        .as_array()
        .expect("a list of clients")
        .iter()
        .filter(|c| c["connectionMode"] == "outbound")
        .cloned()
        .collect()
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    vrrp_test_support::wait_until(what, 15, done);
}

#[test]
fn outbound_load_agents_register_report_and_take_a_redial() {
    let server = Launch::new().start();
    let admin = server.admin();
    let mut load = Command::new(crate::harness::load_binary())
        .args([
            "outbound",
            &format!("127.0.0.1:{}", server.port()),
            "--token",
            &admin,
            "--agents",
            &AGENTS.to_string(),
            "--seconds",
            "4",
            "--interval-ms",
            "200",
            "--server-pid",
            &server.pid().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vrrp-load starts");
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = load.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut output = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("vrrp-load reports its agents online");
        output.push(line.clone());
        if line.starts_with("online:") {
            break;
        }
    }
    assert_eq!(
        output.last().unwrap().split(" (").next(),
        Some(format!("online: {AGENTS} of {AGENTS}").as_str()),
        "{output:?}"
    );

    // The server's view: every agent outbound, online, under the host name it
    // was registered with, at its own port on loopback.
    let clients = outbound_clients(&server, &admin);
    assert_eq!(clients.len(), AGENTS, "{clients:?}");
    let mut names: Vec<&str> = clients
        .iter()
        .map(|c| c["hostname"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["out-0", "out-1", "out-2", "out-3", "out-4"]);
    let mut targets: Vec<&str> = clients
        .iter()
        .map(|c| c["outboundTargetAddress"].as_str().unwrap())
        .collect();
    targets.sort();
    targets.dedup();
    assert_eq!(targets.len(), AGENTS, "one address each: {targets:?}");
    assert!(
        clients.iter().all(|c| c["status"] == "online"),
        "{clients:?}"
    );

    // Each one's readings arrive and are stored: the session passed AUTH.
    for c in &clients {
        let id = c["id"].as_str().unwrap();
        wait_until(&format!("a reading of {id}"), || {
            let state = server.get(
                &format!("/api/v1/clients/{id}/keepalived"),
                Auth::Cookie(&admin),
            );
            state.status == 200 && state.body.to_string().contains("192.0.2.100/24")
        });
    }

    // A redial: the server closes the session and dials at once; the load agent
    // checks the identity again and the session authenticates again.
    let id = clients[0]["id"].as_str().unwrap().to_owned();
    let answer = server.post(
        &format!("/api/v1/clients/{id}/reconnect"),
        Auth::Cookie(&admin),
        "",
    );
    assert!(
        (200..300).contains(&answer.status),
        "{} {:?}",
        answer.status,
        answer.body
    );
    let connected = format!("({id}) connected (outbound)");
    wait_until("the second session's AUTH", || {
        server.log_text().matches(&connected).count() == 2
    });

    let status = load.wait().unwrap();
    output.extend(lines.try_iter());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut load.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{output:?}\n{stderr}");
    let text = output.join("\n");
    assert!(
        text.contains("sessions ended by the server:    1\n"),
        "{text}\n{stderr}"
    );
    assert!(
        text.contains("dials refused by the agents:     0"),
        "{text}"
    );
    assert!(text.contains("memory per outbound client:"), "{text}");
    let per_client = text
        .lines()
        .find_map(|l| l.strip_prefix("server threads:"))
        .expect("a thread figure");
    assert!(per_client.contains("per client"), "{per_client}");
}
