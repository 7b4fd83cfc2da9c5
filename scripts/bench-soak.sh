#!/usr/bin/env bash
# Soak: agents in clusters of two for a long run, a failover storm
# every minute (10% of the clusters swap MASTER and BACKUP), two dashboards and
# one webhook receiver subscribed to vrrp.master_changed. Prints the server's
# resident memory, threads and descriptors at the checkpoint minute and at the
# end (target: within 5% of each other), and checks that every failover yielded
# exactly one vrrp.master_changed (at the receiver, per cluster, and in the
# activity list). Loopback only; exits non-zero when a check fails.
#   scripts/bench-soak.sh [AGENTS] [MINUTES] [CHECKPOINT_MINUTE]   (default: 2000 30 5)
#   e.g. scripts/bench-soak.sh 2000 6 1   a short run that shows it works
set -euo pipefail
cd "$(dirname "$0")/.."
agents=${1:-2000}
minutes=${2:-30}
checkpoint=${3:-5}
[ "${BENCH_NO_BUILD:-0}" = 1 ] || cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
source scripts/lib/bench-server.sh
start_server
login_admin
echo "== soak: $agents agents, $minutes minutes, checkpoint at minute $checkpoint"
status=0
target/release/vrrp-load soak "127.0.0.1:$port" --token "$token" --agents "$agents" \
  --minutes "$minutes" --checkpoint "$checkpoint" --server-pid "$pid" || status=$?
echo "server warnings: $(grep -c 'WARN' "$data/server.log" || true)"
echo "server errors:   $(grep -c 'ERROR' "$data/server.log" || true)"
exit $status
