#!/usr/bin/env bash
# Benchmark of the agent side of the server (issue 4): for 200, 1,000 and 2,000
# simultaneous agents, each sending a reading every second over the real agent
# protocol, prints readings stored per second, reading-to-dashboard latency
# (median, p99), the server's resident memory, memory per agent connection and
# thread count. Each size runs against a fresh server. Loopback only.
#   scripts/bench-agents.sh [SIZES...] (default: 200 1000 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(200 1000 2000); fi
cargo build --release --quiet --bin vrrp-monitor --bin vrrp-load
ulimit -n 65536 2>/dev/null || true
for n in "${sizes[@]}"; do
  (
  source scripts/lib/bench-server.sh
  start_server
  login_admin
  echo "== $n agents"
  target/release/vrrp-load agents "127.0.0.1:$port" --token "$token" --agents "$n" --seconds 15 --server-pid "$pid" || true
  echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
  )
done
