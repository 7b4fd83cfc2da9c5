//! The load generator's command line as a benchmark script meets it. Also makes
//! `cargo test` build the `vrrp-load` binary, which the server's load tests start.

use std::process::Command;

#[test]
fn an_unknown_command_fails_with_a_usage_naming_every_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_vrrp-load"))
        .arg("no-such-command")
        .output()
        .expect("vrrp-load runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("vrrp-load: usage: vrrp-load COMMAND"),
        "{err}"
    );
    for command in [
        "http",
        "idle",
        "agents",
        "activity",
        "outbound",
        "outbound-reconnect",
        "hostile",
        "soak",
        "evaluator",
        "webhooks",
    ] {
        assert!(
            err.contains(&format!(" {command}")),
            "{command} missing: {err}"
        );
    }
}
