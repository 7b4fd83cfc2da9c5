#!/usr/bin/env bash
# Fault 3: both hosts of a cluster lose the management network for
# SECS seconds (default 300) during two real failovers; then heal. Prints the state
# changes keepalived made and the server stored, the incident events and how long
# the agents took to come back. Needs root. Usage: scripts/fault-partition.sh [SECS]
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fault-test.sh
cargo build -q --workspace --bins || exit 1
run_fault_test partition env VRRP_PARTITION_SECS="${1:-300}" \
  cargo test -q -p vrrp-agent --features test-lab --test e2e lab_partition:: -- --ignored --nocapture
