#!/usr/bin/env bash
# bench-agent.sh: the vrrp-agent against real keepalived in a host of the lab (scripts/lab).
#
# Prints
#   1. the time from a trigger to a parsed reading over BENCH_READINGS (default 200)
#      readings, median and p99: as the agent measures it (trigger received -> dumps
#      signalled, complete and parsed; from its debug log) and end to end as a client sees
#      it (notify POST sent -> new reading visible on /api/status/keepalived);
#   2. the agent's resident memory (VmRSS, VmHWM);
#   3. its CPU time per hour at the default 5 s poll, measured over BENCH_CPU_SECONDS
#      (default 120), plus what the dumps cost keepalived itself.
#
# Needs root, keepalived, iproute2, util-linux, curl, and a Rust toolchain (it builds the
# release binary). Usage: sudo scripts/bench-agent.sh
# Environment: CARGO_TARGET_DIR, BENCH_READINGS, BENCH_CPU_SECONDS.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
LAB=$here/scripts/lab
READINGS=${BENCH_READINGS:-200}
CPU_SECONDS=${BENCH_CPU_SECONDS:-120}
TOKEN=bench-notify-token-0123456789
PORT=3011

[ "$(id -u)" = 0 ] || { echo "bench-agent: needs root (the lab uses namespaces)" >&2; exit 1; }
command -v keepalived >/dev/null || { echo "bench-agent: keepalived is not installed" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench-agent: curl is not installed" >&2; exit 1; }

# Hosts have a private /tmp: the binary, config and data live under /var/tmp.
export LAB_PREFIX="vab$(($$ % 100000))"
work="/var/tmp/vrrp-agent-bench-$LAB_PREFIX"
export LAB_STATE="$work/lab-state" LAB_FIFO_READER=0
agent_pid=""

cleanup() {
    [ -n "$agent_pid" ] && kill -KILL "$agent_pid" 2>/dev/null || true
    bash "$LAB" down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "== building the release binary" >&2
(cd "$here" && cargo build --release -q -p vrrp-agent)
target=${CARGO_TARGET_DIR:-$here/target}
mkdir -p "$work"
cp "$target/release/vrrp-agent" "$work/vrrp-agent"

echo "== starting a 1-host lab ($LAB_PREFIX)" >&2
bash "$LAB" up 1 >/dev/null 2>&1

in_host() { ip netns exec "$LAB_PREFIX-h1" "$@"; }
status() { in_host curl -s -m 3 "http://127.0.0.1:$PORT/api/status/keepalived"; }
collected_at() { status | sed -n 's/.*"collectedAt":"\([^"]*\)".*/\1/p'; }

find_agent_pid() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/exe" 2>/dev/null)" = "$work/vrrp-agent" ] || continue
        tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SVC_CLIENT_DATA_DIR=$work/data" && { echo "${p#/proc/}"; return 0; }
    done
    return 1
}

start_agent() { # config-text log-level
    printf '%s' "$1" >"$work/config.yaml"
    rm -f "$work/agent.log"
    SVC_CLIENT_CONFIG="$work/config.yaml" SVC_CLIENT_DATA_DIR="$work/data" LOG_LEVEL=$2 \
        bash "$LAB" exec h1 "$work/vrrp-agent" >>"$work/agent.log" 2>&1 &
    local i
    for i in $(seq 100); do
        agent_pid=$(find_agent_pid || true)
        [ -n "$agent_pid" ] && [ -n "$(collected_at)" ] && return 0
        sleep 0.1
    done
    echo "bench-agent: the agent did not start" >&2; cat "$work/agent.log" >&2; exit 1
}

stop_agent() {
    kill -TERM "$agent_pid"
    local i
    for i in $(seq 100); do kill -0 "$agent_pid" 2>/dev/null || break; sleep 0.05; done
    agent_pid=""
    wait || true
}

now_ns() { date +%s%N; }

percentiles() { # file -> "median p99 min max"
    sort -n "$1" | awk '{v[NR]=$1} END {
        m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
        i = int(NR * 0.99 + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR
        printf "%.2f %.2f %.2f %.2f", m, v[i], v[1], v[NR] }'
}

# ---- 1. latency: notify-triggered readings, one at a time (no coalescing)
start_agent "keepalived:
  pollInterval: 0
  notifyToken: $TOKEN
" debug
echo "== $READINGS readings through the notify endpoint" >&2
: >"$work/e2e.ms"
for i in $(seq "$READINGS"); do
    before=$(collected_at)
    t0=$(now_ns)
    code=$(in_host curl -s -m 3 -o /dev/null -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $TOKEN" --data "bench $i" \
        "http://127.0.0.1:$PORT/api/keepalived/notify")
    [ "$code" = 202 ] || { echo "bench-agent: notify answered $code" >&2; exit 1; }
    for _ in $(seq 1000); do
        [ "$(collected_at)" != "$before" ] && break
        sleep 0.002
    done
    t1=$(now_ns)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }' >>"$work/e2e.ms"
done
# The agent's own figure: trigger received -> complete dumps parsed.
sed -n 's/.*reading took [0-9.]* ms (\([0-9.]*\) ms after the trigger).*/\1/p' "$work/agent.log" |
    tail -n "$READINGS" >"$work/agent.ms"
n_agent=$(wc -l <"$work/agent.ms")
errors=$(grep -c 'error=Some' "$work/agent.log" || true)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$agent_pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$agent_pid/status")
read -r a_med a_p99 a_min a_max <<<"$(percentiles "$work/agent.ms")"
read -r e_med e_p99 e_min e_max <<<"$(percentiles "$work/e2e.ms")"
stop_agent

# ---- 2. CPU at the default 5 s poll (no other trigger), info logging
start_agent "" info
ticks=$(getconf CLK_TCK)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime, in ticks
ka_pids=$(bash "$LAB" pids h1 | awk '$1 == "keepalived" || $1 == "vrrp" { print $2 }')
ka_cpu() { local p s=0; for p in $ka_pids; do s=$((s + $(cpu_of "$p"))); done; echo $s; }
echo "== CPU over $CPU_SECONDS s at the default 5 s poll" >&2
c0=$(cpu_of "$agent_pid"); k0=$(ka_cpu); t0=$(now_ns)
sleep "$CPU_SECONDS"
c1=$(cpu_of "$agent_pid"); k1=$(ka_cpu); t1=$(now_ns)
rss2=$(awk '/^VmRSS/ {print $2}' "/proc/$agent_pid/status")
stop_agent
cpu_h=$(awk -v c=$((c1 - c0)) -v k="$ticks" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", c / k * 3600 / ((b - a) / 1e9) }')
ka_h=$(awk -v c=$((k1 - k0)) -v k="$ticks" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", c / k * 3600 / ((b - a) / 1e9) }')

cat <<EOF
vrrp-agent benchmark ($(keepalived --version 2>&1 | head -1), $(nproc) CPUs, $(uname -r))
trigger -> parsed reading, agent-measured ($n_agent readings, $errors with errors):
    median $a_med ms   p99 $a_p99 ms   (min $a_min, max $a_max)
trigger -> reading visible on /api/status/keepalived, client-measured ($READINGS readings, incl. curl start-up):
    median $e_med ms   p99 $e_p99 ms   (min $e_min, max $e_max)
resident memory: ${rss} KiB after the readings (peak ${hwm} KiB), ${rss2} KiB after ${CPU_SECONDS} s of polling
CPU time at the default 5 s poll: ${cpu_h} s per hour (agent), ${ka_h} s per hour (keepalived writing the dumps)
EOF
