#!/usr/bin/env bash
# Issue 19, fault 2: the agent killed with SIGKILL at a random moment of each of
# ROUNDS real failovers (default 50) in the lab. Prints how many state changes
# keepalived made and how many the server stored (each must be there once).
# Needs root. Usage: scripts/fault-kill-agent.sh [ROUNDS]  (VRRP_AGENT_KILL_SEED=n repeats a run)
set -uo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-50}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
cargo build -q --workspace --bins
VRRP_AGENT_KILL_ROUNDS="$rounds" \
  cargo test -q -p vrrp-agent --test lab_agent_kill -- --nocapture >"$log" 2>&1
status=$?
grep -E '^agent kill9:|test result|panicked' "$log"
echo "elapsed: $(( $(date +%s) - start )) s (exit $status)"
exit $status
