# Sourced by scripts/fault-*.sh: runs one fault test and prints what it reports.
# run_fault_test PREFIX COMMAND...   runs COMMAND with its output kept aside, then
# prints the test's own lines (those starting with "PREFIX:"), its result line and
# any panic with the two lines after it, the elapsed time, and returns its status.
run_fault_test() {
  local prefix="$1"
  shift
  local log start status
  log=$(mktemp)
  start=$(date +%s)
  "$@" >"$log" 2>&1
  status=$?
  grep -E -A2 "^$prefix:|test result|panicked" "$log"
  echo "elapsed: $(( $(date +%s) - start )) s (exit $status)"
  rm -f "$log"
  return $status
}
