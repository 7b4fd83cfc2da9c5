#!/usr/bin/env bash
# Benchmark of the server foundation. Prints the server's resident memory
# after start, after 10,000 authenticated GET /api/v1/me over 20 concurrent
# keep-alive connections, the requests per second, and what idle connections cost.
# Traffic goes to loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${BENCH_NO_BUILD:-0}" = 1 ] || cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
source scripts/lib/bench-server.sh
start_server
rss() { awk '/^VmRSS/ {printf "%.1f MiB", $2/1024}' "/proc/$pid/status"; }
threads() { ls "/proc/$pid/task" | wc -l; }
echo "resident memory after start:    $(rss) ($(threads) threads)"
login_admin
echo "resident memory after a login:  $(rss) ($(threads) threads)"
target/release/vrrp-load http "127.0.0.1:$port" /api/v1/me --token "$token" --connections 20 --requests 10000
echo "resident memory after the load: $(rss) ($(threads) threads)"
before=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
target/release/vrrp-load idle "127.0.0.1:$port" --connections 500 --hold-ms 1000 >/dev/null &
loader=$!
sleep 0.8
after=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
echo "500 idle connections held:      $(threads) threads, +$(( (after - before) )) KiB resident ($(( (after - before) * 1024 / 500 )) bytes each)"
wait $loader
target/release/vrrp-load idle "127.0.0.1:$port" --connections 3000 --hold-ms 2500
echo "after 3000 idle connections:    $(rss), $(threads) threads; health: $(curl -s -o /dev/null -w '%{http_code} in %{time_total}s' "http://127.0.0.1:$port/api/health")"
