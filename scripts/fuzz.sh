#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer, nightly toolchain) of every parser
# that reads outside input: keepalived's three dump formats, the webhook template
# compiler and renderer, agent->server and server->agent WebSocket messages, REST
# bodies with the settings and webhook validators, the agent's config file, and
# the raw HTTP request path both binaries share (`http_request`: request line,
# headers, Content-Length and chunked bodies through the patched tiny_http).
# Runs each target SECS seconds (default 1800, the issue's figure), merges what
# it found into fuzz/corpus/<target> (minimised), and prints per target: runs,
# coverage, corpus size and crashes. A crash leaves its input in
# fuzz/artifacts/<target>/; once fixed, keep it there: tests/fuzz_replay.rs replays
# the corpus and the artifacts in every CI run.
# Usage: scripts/fuzz.sh [SECS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-1800}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(dump_data dump_stats dump_json template agent_message server_message rest_body agent_config http_request)
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q nightly || { echo "needs a nightly toolchain (rustup toolchain install nightly)"; exit 2; }
cd fuzz
cargo +nightly fuzz build -O || exit 1
status=0
for t in "${targets[@]}"; do
  log=$(mktemp)
  mkdir -p "corpus/$t"
  # New inputs land in the corpus folder itself; cmin then keeps only those that
  # add coverage, so the committed corpus stays small.
  cargo +nightly fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  # What `cargo fuzz cmin` does, without rebuilding, and smaller: a set cover of
  # the edges (hit counts ignored), so the corpus in git covers the same edges
  # with the fewest inputs (18,078 files became 1,992 this way).
  rm -rf "min/$t" && mkdir -p "min/$t"
  if "target/x86_64-unknown-linux-gnu/release/$t" -set_cover_merge=1 -use_counters=0 "min/$t" "corpus/$t" >/dev/null 2>&1; then
    rm -rf "corpus/$t" && mv "min/$t" "corpus/$t"
  fi
  rm -rf "min/$t"
  crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  echo "$t: ${secs} s, ${runs:-?} runs, coverage ${cov:-?}, corpus $(ls "corpus/$t" | wc -l) files, crashes $crashes (exit $rc)"
  [ "$rc" -eq 0 ] || { status=1; grep -m5 -E 'panicked|ERROR|SUMMARY' "$log"; }
  rm -f "$log"
done
exit $status
