#!/usr/bin/env bash
# Issue 19, fault 3: both hosts of a cluster lose the management network for
# SECS seconds (default 300) during two real failovers; then heal. Prints the state
# changes keepalived made and the server stored, the incident events and how long
# the agents took to come back. Needs root. Usage: scripts/fault-partition.sh [SECS]
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-300}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
cargo build -q --workspace --bins
VRRP_PARTITION_SECS="$secs" \
  cargo test -q -p vrrp-agent --test lab_partition -- --ignored --nocapture >"$log" 2>&1
status=$?
grep -E -A2 '^partition:|test result|panicked' "$log"
echo "elapsed: $(( $(date +%s) - start )) s (exit $status)"
exit $status
