//! The real `vrrp-monitor` registers the real `vrrp-agent` outbound: the server dials
//! the agent's `/ws/register` with the setup PIN, then `/ws/agent`, and the agent's
//! readings arrive. Both binaries are built beside each other (`cargo build
//! --workspace --bins`, as scripts/test.sh does).

use std::fs;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use vrrp_test_support::{free_port, request, server_binary, wait_for, Server};

#[test]
fn the_real_server_registers_the_agent_outbound_and_its_readings_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::new(
        &dir.path().join("server"),
        server_binary(),
        "127.0.0.1",
        &[],
    );
    server.start();
    let admin = server.admin();

    let agent_dir = dir.path().join("agent");
    let proc_dir = agent_dir.join("proc");
    fs::create_dir_all(proc_dir.join("1")).unwrap();
    fs::write(proc_dir.join("1/comm"), "init\n").unwrap();
    fs::write(
        agent_dir.join("config.yaml"),
        "keepalived:\n  pollInterval: 3600\n",
    )
    .unwrap();
    let port = free_port();
    let log = agent_dir.join("agent.log");
    let mut agent = Command::new(env!("CARGO_BIN_EXE_vrrp-agent"))
        .env_clear()
        .env("SVC_CLIENT_CONFIG", agent_dir.join("config.yaml"))
        .env("SVC_CLIENT_DATA_DIR", agent_dir.join("data"))
        .env("SVC_PROC_DIR", &proc_dir)
        .env("SVC_CLIENT_PORT", port.to_string())
        .env("LOG_LEVEL", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pin = wait_for("the setup PIN", 15, || {
        fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.split("Setup PIN: ").nth(1).map(|p| p[..9].to_string()))
    });

    let url = format!("{}/api/v1/clients/outbound", server.local_url());
    let (status, _, body) = request(
        "POST",
        &url,
        Some(&admin),
        Some(
            &json!({ "outboundTargetAddress": format!("127.0.0.1:{port}"), "registrationSecret": pin }),
        ),
    );
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().expect("client id").to_string();
    let identity: Value =
        serde_json::from_slice(&fs::read(agent_dir.join("data/identity.json")).unwrap()).unwrap();
    assert_eq!(identity["clientId"], json!(id));

    // Online, and its reading stored on the server.
    wait_for("the client online", 15, || {
        let list = server.get(&admin, "/api/v1/clients");
        list.as_array()?
            .iter()
            .find(|c| c["id"] == json!(id) && c["status"] == "online")
            .cloned()
    });
    let (status, _, state) = wait_for("the agent's reading on the server", 15, || {
        let r = request(
            "GET",
            &format!("{}/api/v1/clients/{id}/keepalived", server.local_url()),
            Some(&admin),
            None,
        );
        (r.0 == 200 && r.2.to_string().contains("\"running\":false")).then_some(r)
    });
    assert_eq!(status, 200, "{state}");
    let agent_log = fs::read_to_string(&log).unwrap();
    assert!(
        agent_log.contains("Server session from 127.0.0.1"),
        "{agent_log}"
    );
    assert!(!agent_log.contains(identity["authToken"].as_str().unwrap()));

    // A second create against the registered agent: 503 naming "Already registered".
    let (status, _, body) = request(
        "POST",
        &url,
        Some(&admin),
        Some(
            &json!({ "outboundTargetAddress": format!("127.0.0.1:{port}"), "registrationSecret": pin }),
        ),
    );
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("Could not establish connection to client."),
        "{body}"
    );

    let _ = agent.kill();
    let _ = agent.wait();
    server.stop();
}
