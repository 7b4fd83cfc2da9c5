#!/usr/bin/env bash
# Benchmark of outbound mode, the server dialling its agents.
# 1. Memory: AGENTS outbound load agents (vrrp-load outbound, one port each on
#    127.0.0.1), registered through POST /api/v1/clients/outbound; once all are
#    online and have reported for 10 s, prints the server's resident memory
#    before and after, and memory, threads and fds per outbound client
#    (aim: < 128 KiB per client).
# 2. Reconnect: the real vrrp-agent registered outbound, stopped (SIGTERM) and
#    started again ROUNDS times; prints per round and as min/median/max the time
#    from the agent back (listening) and from the ladder step due to the session
#    authenticated (aim: within the ladder step + 100 ms), read from the server's
#    debug log. Then 3 rounds down 7 s: the 5 s step's dial fails, the agent is
#    back before the next step (10 s after that dial started). No keepalived is
#    needed: the agent reports it stopped.
# Each part runs against a fresh release server on a free port with a temporary
# data directory. Loopback only.
#   scripts/bench-outbound.sh [AGENTS] [ROUNDS]   (default: 500 10)
set -euo pipefail
cd "$(dirname "$0")/.."
agents=${1:-500}
rounds=${2:-10}
cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
cargo build --release --quiet -p vrrp-agent --bin vrrp-agent
ulimit -n 65536 2>/dev/null || true
(
  source scripts/lib/bench-server.sh
  start_server
  login_admin
  echo "== memory: $agents outbound agents"
  target/release/vrrp-load outbound "127.0.0.1:$port" --token "$token" --agents "$agents" \
    --seconds 10 --server-pid "$pid"
  echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
)
(
  # The dial thread logs each ladder dial (with the step it answers) at debug.
  BENCH_LOG_LEVEL=debug
  source scripts/lib/bench-server.sh
  start_server
  login_admin
  echo "== reconnect: the real agent, $rounds rounds"
  target/release/vrrp-load outbound-reconnect "127.0.0.1:$port" --token "$token" \
    --agent-bin target/release/vrrp-agent --server-log "$data/server.log" \
    --rounds "$rounds" --down-ms 1000
  echo "== reconnect: the real agent down past the first step, 3 rounds"
  target/release/vrrp-load outbound-reconnect "127.0.0.1:$port" --token "$token" \
    --agent-bin target/release/vrrp-agent --server-log "$data/server.log" \
    --rounds 3 --down-ms 7000
)
