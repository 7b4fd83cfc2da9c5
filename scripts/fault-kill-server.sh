#!/usr/bin/env bash
# Fault 1: the server killed with SIGKILL at random moments during
# ingest, ROUNDS times (default 100). Prints how many acknowledged events were
# stored, missing or stored twice, the unclean starts, and the integrity checks.
# Usage: scripts/fault-kill-server.sh [ROUNDS]   (VRRP_KILL9_SEED=n repeats a run)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fault-test.sh
run_fault_test kill9 env VRRP_KILL9_ROUNDS="${1:-100}" \
  cargo test -q -p vrrp-monitor --test server kill9:: -- --nocapture
