#!/usr/bin/env bash
# Slow and hostile clients (issue 19, faults item 6): 10,000 idle TCP connections
# (reopened as the server closes them), slowloris clients and a dashboard
# WebSocket that never reads, while 50 agents report and a dashboard measures.
# Prints /api/health p50/p99/max sampled every 50 ms (target: p99 < 100 ms),
# what the server closed, the agents' figures and the server's peak threads,
# descriptors and memory. Loopback only.
#   scripts/bench-hostile.sh [IDLE] [SECONDS] [SLOWLORIS]   (default: 10000 60 20)
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-10000}
seconds=${2:-60}
slowloris=${3:-20}
[ "${BENCH_NO_BUILD:-0}" = 1 ] || cargo build --release --quiet --bin vrrp-monitor --bin vrrp-load
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
source scripts/lib/bench-server.sh
start_server
login_admin
target/release/vrrp-load hostile "127.0.0.1:$port" --token "$token" --idle "$idle" \
  --slowloris "$slowloris" --seconds "$seconds" --server-pid "$pid"
echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
echo "server errors:   $(grep -c 'ERROR' "$data/server.log" || true)"
grep -h 'WARN\|ERROR' "$data/server.log" | cut -c26- | sort | uniq -c | sort -rn | head -5 || true
