#!/usr/bin/env bash
# Slow and hostile clients (faults item 6): 10,000 idle TCP connections
# (reopened as the server closes them), slowloris clients and a dashboard
# WebSocket that never reads, while 50 agents report and a dashboard measures.
# Prints /api/health p50/p99/max sampled every 50 ms (target: p99 < 100 ms),
# what the server closed, the agents' figures and the server's peak threads,
# descriptors and memory. Loopback only. Beside these it runs UPGRADES
# `Connection: upgrade` requests that are no handshake (held open, reopened once
# answered) and ENDLESS headers without end, and prints the server's RSS growth
# (target: < 32 MiB).
#   scripts/bench-hostile.sh [IDLE] [SECONDS] [SLOWLORIS] [UPGRADES] [ENDLESS]
#   (default: 10000 60 20 50 10)
# The idle connections never send a byte (the kernel holds them: TCP_DEFER_ACCEPT);
# BENCH_KEPT_ALIVE=1 has each ask for /api/v1/ping first and then stay idle, so
# that every one of them is the server's to hold.
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-10000}
seconds=${2:-60}
slowloris=${3:-20}
upgrades=${4:-50}
endless=${5:-10}
[ "${BENCH_NO_BUILD:-0}" = 1 ] || cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
source scripts/lib/bench-server.sh
start_server
login_admin
if [ "${BENCH_KEPT_ALIVE:-0}" = 1 ]; then idle_kind=(--kept-alive); else idle_kind=(); fi
target/release/vrrp-load hostile "127.0.0.1:$port" --token "$token" --idle "$idle" \
  --slowloris "$slowloris" --upgrades "$upgrades" --endless "$endless" \
  --seconds "$seconds" --server-pid "$pid" \
  "${idle_kind[@]}"
echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
echo "server errors:   $(grep -c 'ERROR' "$data/server.log" || true)"
grep -h 'WARN\|ERROR' "$data/server.log" | cut -c26- | sort | uniq -c | sort -rn | head -5 || true
