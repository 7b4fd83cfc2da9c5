#!/usr/bin/env bash
# bench-failover.sh: failover latency of inbound mode, end to end, in the lab.
#
# Two hosts of scripts/lab with real keepalived, one release vrrp-agent in
# each (notify FIFO trigger only, poll timer off), the release vrrp-monitor in the lab's
# switch namespace, a dashboard socket. BENCH_FAILOVERS (default 50) failovers alternate
# `fault h1 link` / `unfault h1`. For every vrrp.state_changed event it measures the time
# from keepalived's own transition time (the event's occurredAt, taken by keepalived as it
# writes the notify FIFO line; millisecond resolution) to the event arriving on the
# dashboard, which the server broadcasts after storing it. Prints median and p99.
#
# Needs root, keepalived, iproute2, util-linux, curl and a Rust toolchain (it builds the
# release binaries). Usage: sudo scripts/bench-failover.sh
# Environment: CARGO_TARGET_DIR, BENCH_FAILOVERS.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "bench-failover: needs root (the lab uses namespaces)" >&2; exit 1; }
command -v keepalived >/dev/null || { echo "bench-failover: keepalived is not installed" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench-failover: curl is not installed" >&2; exit 1; }

cd "$here"
echo "bench-failover: building release binaries" >&2
cargo build --release -q -p vrrp-monitor --bin vrrp-monitor
cargo build --release -q -p vrrp-agent --bin vrrp-agent
# The measurement shares the lab tests' helpers (the vrrp-test-support crate, test-support/).
cargo bench -q -p vrrp-agent --bench failover 2>&1 |
    grep -E '^bench-failover:|panicked|FAILED' || { echo "bench-failover: failed" >&2; exit 1; }
