#!/usr/bin/env bash
# Benchmark of cluster evaluation (issue 6): the evaluator's cost per reading with
# 1,000 clusters of 2 members, and the time to build GET /api/v1/keepalived/clusters
# at that size with 2,000 agents connected over the real agent protocol (the
# figure is the whole HTTP round trip, the client's parsing of ~1,000 clusters included).
# (The lab figure, keepalived's takeover to the stored vrrp.master_changed, is not
# measured yet.) Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin vrrp-monitor --bin vrrp-load
ulimit -n 65536 2>/dev/null || true
echo "== evaluator, in-process"
target/release/vrrp-load evaluator --clusters 1000 --readings 5000
echo "== cluster list, 2,000 agents in 1,000 pairs"
source scripts/lib/bench-server.sh
start_server
login_admin
target/release/vrrp-load agents "127.0.0.1:$port" --token "$token" --agents 2000 --seconds 5 --interval-ms 3000 \
  --server-pid "$pid" --clusters | grep -E "cluster list|connected"
