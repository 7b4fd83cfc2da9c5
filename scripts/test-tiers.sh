#!/usr/bin/env bash
# Runs the test tiers one after another and prints how long each took: the
# figures in doc/testing.md. Together they are every test scripts/test.sh runs
# (which runs them in one cargo invocation instead); run as root after
# scripts/install-test-deps.sh. Usage: scripts/test-tiers.sh [TIER...]
# TIER: quick lab browser node packaging prometheus contract (default: all, in that order).
set -euo pipefail
cd "$(dirname "$0")/.."

tiers=("$@")
[ ${#tiers[@]} -gt 0 ] || tiers=(quick lab browser node packaging prometheus contract)

# One build serves every opted-in tier: the features only decide what is ignored.
all=(--workspace --all-targets --features test-all)

run_tier() {
  case "$1" in
    quick) cargo test --workspace --all-targets ;;
    lab)
      cargo test "${all[@]}" -p vrrp-agent --test e2e -- lab demo host_guide
      cargo test "${all[@]}" -p vrrp-monitor --test server -- full_disk:: ;;
    browser) cargo test "${all[@]}" -p vrrp-monitor --test browser ;;
    node) cargo test "${all[@]}" -p vrrp-monitor --test server -- oidc:: ;;
    packaging) cargo test "${all[@]}" -p vrrp-monitor --test server -- static_tarballs:: package:: ;;
    prometheus) cargo test "${all[@]}" -p vrrp-monitor --test server -- metrics:: ;;
    contract) cargo test "${all[@]}" -p vrrp-monitor --test server -- contract:: ;;
    *) echo "unknown tier $1 (quick lab browser node packaging prometheus contract)" >&2; return 2 ;;
  esac
}

# Build first, so that the times are the tests' own.
cargo build --workspace --all-targets --quiet
cargo build "${all[@]}" --quiet

declare -A took
failed=0
for t in "${tiers[@]}"; do
  start=$(date +%s)
  if ! run_tier "$t"; then failed=$((failed + 1)); fi
  took[$t]=$(( $(date +%s) - start ))
done
echo
echo "tier         seconds"
for t in "${tiers[@]}"; do printf '%-12s %7s\n' "$t" "${took[$t]}"; done
[ "$failed" -eq 0 ]
