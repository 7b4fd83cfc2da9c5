#!/usr/bin/env bash
# Benchmark of cluster evaluation, three figures:
#  1. the evaluator's cost per reading with 1,000 clusters of 2 members (in-process,
#     median and p99);
#  2. the time to build GET /api/v1/keepalived/clusters at that size, with 2,000
#     agents connected over the real agent protocol and reporting (the figure is
#     the whole HTTP round trip over loopback, the client's parsing of ~1,000
#     clusters included);
#  3. in the lab (scripts/lab, real keepalived, real agents, the
#     server in the lab's switch namespace): the time from keepalived's own takeover
#     to the stored and broadcast vrrp.master_changed, minus the spec's master-down
#     interval. Needs root and keepalived; skipped with a note otherwise.
#     The lab part is the link-fault scenario of scripts/bench-takeover.sh, which
#     also measures a graceful stop and kill -9.
# Environment: BENCH_TAKEOVERS (default 10), BENCH_SCENARIOS (default link).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
ulimit -n 65536 2>/dev/null || true
echo "== evaluator, in-process"
target/release/vrrp-load evaluator --clusters 1000 --readings 5000
echo "== cluster list, 2,000 agents in 1,000 pairs"
(
  source scripts/lib/bench-server.sh
  start_server
  login_admin
  target/release/vrrp-load agents "127.0.0.1:$port" --token "$token" --agents 2000 --seconds 5 --interval-ms 3000 \
    --server-pid "$pid" --clusters | grep -E "cluster list|connected"
)
echo "== takeover in the lab, real keepalived"
if [ "$(id -u)" != 0 ] || ! command -v keepalived >/dev/null; then
  echo "skipped: the lab needs root and keepalived (apt-get install -y keepalived)"
  exit 0
fi
cargo build --release -q -p vrrp-agent --bin vrrp-agent
BENCH_SCENARIOS=${BENCH_SCENARIOS:-link} cargo bench -q -p vrrp-agent --bench takeover 2>&1 |
  grep -E '^bench-takeover:|panicked|FAILED' || { echo "bench-takeover: failed" >&2; exit 1; }
