#!/usr/bin/env bash
# Benchmark of the availability figures: stores the cluster history of
# CLUSTERS clusters (default 1,000) over DAYS days (default 400) with one failover
# per cluster per day (a 5 s time without master, as its own incident, then the
# other host master: two intervals a day), then times
# GET /api/v1/keepalived/clusters/availability over the whole window on a release
# server (loopback). The rows are written beside the server and read by a restart
# (the server holds the history in memory from the table at start). Prints the
# rows stored, the restart, the answer's latency, the server's RSS and the load.
#   scripts/bench-availability.sh [CLUSTERS] [DAYS]
set -euo pipefail
cd "$(dirname "$0")/.."
clusters=${1:-1000}
days=${2:-400}
cargo build --release --quiet -p vrrp-monitor -p vrrp-load --bins
source scripts/lib/bench-server.sh
start_server
now_ms=$(python3 -c 'import time; print(int(time.time()*1000))')
python3 - "$data/vrrp-monitor.db" "$clusters" "$days" "$now_ms" <<'PY'
import sqlite3, sys, json, uuid
db = sqlite3.connect(sys.argv[1], timeout=30)
clusters, days, now = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
day = 86_400_000
start = now - days * day
def rows():
    for c in range(clusters):
        key = f"dc-{c % 7}|{c % 255 + 1}|10.{c // 256}.{c % 256}.0/24"
        hosts = [[str(uuid.uuid4()), f"lb-{c}-a"], [str(uuid.uuid4()), f"lb-{c}-b"]]
        for d in range(days):
            t = start + d * day
            yield (key, t, t + 5_000, json.dumps([]), "no-master", f"inc-{c}-{d}")
            last = d == days - 1
            yield (key, t + 5_000, now if last else t + day, json.dumps([hosts[d % 2]]), "ok", None)
db.execute("BEGIN")
db.executemany("INSERT INTO cluster_history (key, from_ms, to_ms, open, masters, health, incident_id) VALUES (?, ?, ?, 0, ?, ?, ?)", rows())
db.commit()
n = db.execute("SELECT COUNT(*) FROM cluster_history").fetchone()[0]
print(f"stored {n} history intervals ({clusters} clusters x {days} days, one failover a day)")
PY
# The server holds the history in memory, read from the table at start: the rows
# written beside it are read by a restart, as after any stop.
restart=$(restart_command)
rss() { awk '/VmRSS/ {print $2, $3}' "/proc/$pid/status"; }
started=$(date +%s%N)
pid=$($restart)
echo "restart reading the history into memory: $(( ($(date +%s%N) - started) / 1000000 )) ms until it answered; server RSS $(rss)"
# With BENCH_LOG_LEVEL=info the server says how long the reading took.
grep -o '[0-9]* cluster history intervals held in memory (read in [0-9]* ms)' "$data/server-restarted.log" || true
login_admin
from=$(python3 -c "import datetime; print((datetime.datetime.fromtimestamp($now_ms/1000, datetime.timezone.utc) - datetime.timedelta(days=$days)).strftime('%Y-%m-%dT%H:%M:%S.000Z'))")
to=$(python3 -c "import datetime; print(datetime.datetime.fromtimestamp($now_ms/1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.000Z'))")
path="/api/v1/keepalived/clusters/availability?from=$from&to=$to"
curl -s "http://127.0.0.1:$port$path" -H "cookie: svc_session=$token" -o "$data/answer.json"
python3 - "$data/answer.json" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))['clusters']
f = c[0]
print(f"answer: {len(c)} clusters, {os.path.getsize(sys.argv[1])} bytes; first: masterChanges {f['masterChanges']}, "
      f"incidents {f['incidents']['count']} ({f['incidents']['totalSeconds']} s), oneMasterShare {f['oneMasterShare']:.6f}")
PY
# The server's own CPU time (user + system) per answer: on a shared machine the
# latency also holds the time other processes had the cores.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' "/proc/$pid/stat"; }
requests=${BENCH_REQUESTS:-20}
echo "availability over $days days, one request at a time:"
cpu_before=$(cpu_ms)
target/release/vrrp-load http "127.0.0.1:$port" "$path" --token "$token" --connections 1 --requests "$requests"
echo "server CPU per answer: $(awk -v a="$cpu_before" -v b="$(cpu_ms)" -v n="$requests" 'BEGIN {printf "%.1f", (b - a) / n}') ms"
# The same answer fetched by curl, a new connection each: a second view of the
# latency from another client.
echo "curl, 10 requests (ms, sorted): $(for _ in $(seq 10); do
  curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port$path" -H "cookie: svc_session=$token"
done | sort -n | awk '{printf "%.1f ", $1 * 1000}')"
echo "server RSS after: $(rss); load average: $(cat /proc/loadavg)"
