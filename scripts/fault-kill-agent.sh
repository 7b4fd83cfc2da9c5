#!/usr/bin/env bash
# Fault 2: the agent killed with SIGKILL at a random moment of each of
# ROUNDS real failovers (default 50) in the lab. Prints how many state changes
# keepalived made and how many the server stored (each must be there once).
# Needs root. Usage: scripts/fault-kill-agent.sh [ROUNDS]  (VRRP_AGENT_KILL_SEED=n repeats a run)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fault-test.sh
cargo build -q --workspace --bins || exit 1
run_fault_test "agent kill9" env VRRP_AGENT_KILL_ROUNDS="${1:-50}" \
  cargo test -q -p vrrp-agent --features test-lab --test e2e lab_agent_kill:: -- --nocapture
