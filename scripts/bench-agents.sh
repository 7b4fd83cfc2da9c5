#!/usr/bin/env bash
# Benchmark of the agent side of the server. For each size, a
# fresh server and that many simulated agents (the real agent protocol, one
# reading per agent per second, the agent's reconnect ladder) print:
#   - readings stored per second, reading-to-dashboard latency (p50, p99),
#     the server's resident memory, memory per agent connection, threads and
#     descriptors, the cluster list's answer time, /api/health latency;
#   - then the server is restarted (SIGTERM, start again on the same data) with
#     every agent connected: the time until all are authenticated again (the
#     target is 30 s), failed attempts, /api/health p99 meanwhile (target < 1 s),
#     and the steady figures of the restarted server.
# The agents form clusters of two (each pair its own VIP; `--clusters`), as VRRP
# fleets do; BENCH_TOPOLOGY=flat puts every agent into the same two clusters of
# N members (the issue-4 figures; the evaluator's worst case, not a fleet).
# Loopback only; the load generator runs on the same machine.
#   scripts/bench-agents.sh [SIZES...] (default: 200 1000 2000)
#   BENCH_SECONDS=15 (steady window)  BENCH_RESTART=0 (skip the restart)
#   BENCH_NO_BUILD=1 (use the binaries as built)
#   VRRP_MONITOR_BIN=path (measure another server build, e.g. main's, for "before")
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(200 1000 2000); fi
[ "${BENCH_NO_BUILD:-0}" = 1 ] || cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
for n in "${sizes[@]}"; do
  (
  source scripts/lib/bench-server.sh
  start_server
  login_admin
  echo "== $n agents"
  restart=()
  topology=(--clusters)
  if [ "${BENCH_TOPOLOGY:-pairs}" = flat ]; then topology=(); fi
  if [ "${BENCH_RESTART:-1}" = 1 ]; then restart=(--restart-cmd "$(restart_command)"); fi
  target/release/vrrp-load agents "127.0.0.1:$port" --token "$token" --agents "$n" \
    --seconds "${BENCH_SECONDS:-15}" --server-pid "$pid" "${topology[@]}" "${restart[@]}" || true
  echo "server warnings: $(grep -c 'WARN' "$data"/server*.log | awk -F: '{s+=$NF} END {print s+0}')"
  echo "server errors:   $(grep -c 'ERROR' "$data"/server*.log | awk -F: '{s+=$NF} END {print s+0}')"
  grep -h 'ERROR' "$data"/server*.log | sort | uniq -c | sort -rn | head -3 || true
  # What the warnings said (times and ids cut, so like ones count together).
  grep -h 'WARN' "$data"/server*.log | sed -E 's/^[^ ]+ +//; s/[0-9a-f-]{36}/<id>/g; s/[0-9]+/N/g' |
    sort | uniq -c | sort -rn | head -3 || true
  )
done
