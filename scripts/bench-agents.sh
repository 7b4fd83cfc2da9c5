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
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  password=bench-password-123
  SVC_SERVER_DATA_DIR="$data" SVC_SERVER_PORT="$port" SVC_ADMIN_PASSWORD="$password" LOG_LEVEL=warn \
    target/release/vrrp-monitor 2>"$data/server.log" &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/api/v1/ping" >/dev/null && break; sleep 0.05; done
  token=$(curl -s -i -X POST "http://127.0.0.1:$port/api/login" -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$password\"}" | sed -n 's/^set-cookie: svc_session=\([^;]*\).*/\1/ip')
  echo "== $n agents"
  target/release/vrrp-load agents "127.0.0.1:$port" --token "$token" --agents "$n" --seconds 15 --server-pid "$pid" || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
  rm -rf "$data"
done
