#!/usr/bin/env bash
# Benchmark of webhooks: render time per event of the largest ready-made
# template (context, compile and render, as delivery does it), and events per second
# a running server delivers to a receiver on loopback. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
source scripts/lib/bench-server.sh
start_server
login_admin
target/release/vrrp-load webhooks "127.0.0.1:$port" --token "$token" --events "${EVENTS:-2000}" --burst "${BURST:-50}"
