#!/usr/bin/env bash
# The dashboard under the issue's scale: 1,000 clusters of two agents each (the
# load generator over the real agent protocol, 500 readings per second), 50,000
# stored activity events, headless Chromium with a fresh profile.
#
# Prints: bytes of the first load, time to interactive (navigation start until
# the overview shows every cluster with the socket's snapshot applied), and the
# page's main-thread busy time per second while the readings flow (Chromium's
# Performance.getMetrics over chromedriver). Needs chromium and chromedriver
# (scripts/test.sh installs them). Release build; takes a few minutes.
#
# The 2,000 agents connect at a bounded rate (BENCH_CONNECT_PER_SECOND, default
# 100/s): a connect storm is the server's connection path, not the
# dashboard's figure. BENCH_AGENTS changes the fleet size.
set -euo pipefail
cd "$(dirname "$0")/.."
for cmd in chromium chromedriver; do
  command -v "$cmd" >/dev/null || { echo "bench-dashboard: $cmd is missing (apt-get install chromium chromium-driver)" >&2; exit 1; }
done
# 2,000 agent connections: one socket and thread each, in the server and the load generator.
ulimit -n 65536 2>/dev/null || true
cargo build --release --bins
cargo test --release --features test-browser --test browser bench_dashboard -- --ignored --nocapture 2>&1 |
  grep -E '^(  |stored|connect ramp|vrrp-load: (registered|connected)|---|first load|time to|messages|main thread|overview ->|cluster detail)|panicked|FAILED|error'
