#!/usr/bin/env bash
# Benchmark of activity cleanup: stores 1,000,000 old activity events,
# runs the notification cleanup while an agent keeps sending events, and prints the
# cleanup time and the longest time an event waited for its acknowledgement
# (the ingest stall). Loopback only.   scripts/bench-cleanup.sh [EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
source scripts/lib/bench-server.sh
start_server
python3 - "$data/vrrp-monitor.db" "$events" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
n = int(sys.argv[2])
db.execute("BEGIN")
db.executemany("INSERT INTO activity (id, occurred_at, received_at, source, kind, level) VALUES (?, ?, ?, 'agent', 'vrrp.state_changed', 'info')",
               ((f"old-{i}", f"2025-01-01T00:00:{i % 60:02d}.000Z", "2025-01-01T00:00:00.000Z") for i in range(n)))
db.commit()
print(f"stored {n} old activity events")
PY
login_admin
curl -s -X PUT "http://127.0.0.1:$port/api/v1/settings/cleanup" -H "cookie: svc_session=$token" \
  -H 'content-type: application/json' -d '{"notification_retention_count": "500"}' >/dev/null
target/release/vrrp-load activity "127.0.0.1:$port" --token "$token" --seconds 25 --every-ms 5 > "$data/probe.out" &
probe=$!
sleep 1
start=$(date +%s.%N)
result=$(curl -s -X POST "http://127.0.0.1:$port/api/v1/settings/cleanup/notifications" -H "cookie: svc_session=$token")
end=$(date +%s.%N)
echo "cleanup answer: $result"
python3 -c "print(f'cleanup time: {$end - $start:.2f} s')"
# The probe covers 25 s from just before the cleanup: its stall figure spans it.
wait $probe
cat "$data/probe.out"
