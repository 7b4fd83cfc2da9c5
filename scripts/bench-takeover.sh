#!/usr/bin/env bash
# bench-takeover.sh: how long after the master-down interval the server stores
# vrrp.master_changed, for three ways of losing a master.
#
# Two hosts of scripts/lab with real keepalived (advert_int 1 s, so a
# master-down interval of 4 s), one release vrrp-agent in each (the lab tests' config:
# poll every 5 s plus the notify FIFO), the release vrrp-monitor in the lab's switch
# namespace, a dashboard socket. For each scenario, BENCH_TAKEOVERS (default 10) times:
# VI_1 is taken from h1 (graceful: `failover h1`, SIGTERM; kill: `failover h1 --kill`,
# SIGKILL; link: `fault h1 link`), the time from h2's own takeover (the event's
# occurredAt, keepalived's last transition) to the stored vrrp.master_changed
# (receivedAt) and to its arrival on the dashboard is taken, minus the 4 s interval;
# then h1 gets it back. Prints median, p99, min and max per scenario.
#
# Needs root, keepalived, iproute2, util-linux, curl and a Rust toolchain (it builds the
# release binaries). Usage: sudo scripts/bench-takeover.sh
# Environment: BENCH_TAKEOVERS, BENCH_SCENARIOS (comma-separated subset of
# graceful,kill,link), CARGO_TARGET_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "bench-takeover: needs root (the lab uses namespaces)" >&2; exit 1; }
command -v keepalived >/dev/null || { echo "bench-takeover: keepalived is not installed" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench-takeover: curl is not installed" >&2; exit 1; }

cd "$here"
echo "bench-takeover: building release binaries" >&2
cargo build --release -q -p vrrp-monitor --bin vrrp-monitor
cargo build --release -q -p vrrp-agent --bin vrrp-agent
# The measurement shares the lab tests' helpers (the vrrp-test-support crate, test-support/).
cargo bench -q -p vrrp-agent --bench takeover 2>&1 |
    grep -E '^bench-takeover:|panicked|FAILED' || { echo "bench-takeover: failed" >&2; exit 1; }
