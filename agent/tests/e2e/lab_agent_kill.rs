//! Fault: the agent killed with SIGKILL at random moments during real failovers.
//! Every state change keepalived made on the host (its own notify FIFO log, kept by
//! the lab) must be in the server's activity list exactly once: the restarted agent
//! derives what it missed from its baseline on disk, with the same ids.
//!
//! CI runs a few rounds; `scripts/fault-kill-agent.sh` runs 50
//! (`VRRP_AGENT_KILL_ROUNDS`) and prints the counts.
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl.

use std::time::Duration;

use vrrp_test_support::changes::*;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn every_state_change_arrives_once_across_agent_kill9_rounds() {
    let rounds: usize = std::env::var("VRRP_AGENT_KILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let (lab, mut server) = lab_with_server(2, "vak"); // h1 130 MASTER, h2 120
    server.start();
    let admin = server.admin();
    let mut h2 = HostAgent::new(&lab, "h2");
    h2.log_level = "info";
    h2.start(&lab);
    let client = register(&lab, &server, &admin, &h2);
    lab.wait_state("h2", "VI_1", "BACKUP");
    lab.wait_state("h2", "VI_2", "BACKUP");
    // Give the agent's first reading (which reports nothing) time to become the baseline.
    wait_for("the first reading", 20, || {
        h2.get(&lab, "/api/status/keepalived")["collected"]
            .as_bool()
            .filter(|c| *c)
    });
    let (_, from_line) = keepalived_changes(&lab, "h2", 0);
    let mut seed = std::env::var("VRRP_AGENT_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("agent kill9: {rounds} rounds, seed {seed}");
    for round in 0..rounds {
        let (cmd, h2_state) = if round % 2 == 0 {
            ("failover", "MASTER") // keepalived on h1 stops: h2 takes over
        } else {
            ("start", "BACKUP") // h1 comes back with the higher priority
        };
        lab.run(&[cmd, "h1"]);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(seed % 3000));
        h2.kill(nix::sys::signal::Signal::SIGKILL);
        h2.start(&lab);
        lab.wait_state("h2", "VI_1", h2_state);
        lab.wait_state("h2", "VI_2", h2_state);
        let (want, _) = keepalived_changes(&lab, "h2", from_line);
        wait_for(
            &format!("round {round}: the server has every change"),
            30,
            || (server_changes(&server, &admin, &client).0 == want).then_some(()),
        );
    }
    // Nothing more arrives late (a duplicate would show here).
    std::thread::sleep(Duration::from_secs(2));
    let (want, _) = keepalived_changes(&lab, "h2", from_line);
    let (got, duplicate_ids) = server_changes(&server, &admin, &client);
    let made: usize = want.values().sum();
    let stored: usize = got.values().sum();
    eprintln!(
        "agent kill9: {rounds} rounds; keepalived made {made} state changes on h2, the server \
         stored {stored}; duplicate ids {duplicate_ids}"
    );
    assert_eq!(got, want, "each change once");
    assert_eq!(duplicate_ids, 0);
    assert!(
        made >= 2 * rounds,
        "two instances change every round: {made}"
    );
}
