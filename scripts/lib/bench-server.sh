# Shared by the benchmarks (source it after building the release binaries).
#   start_server     a release server on a free loopback port with a temporary data
#                    directory; sets port, pid, data; stops it and removes the data on exit;
#                    logs at warn unless BENCH_LOG_LEVEL says otherwise
#   login_admin      logs in as the first-run administrator; sets token
#   restart_command  a shell command that stops the server (SIGTERM), starts it again
#                    on the same port and data, waits until it answers and prints its
#                    pid (for `vrrp-load agents --restart-cmd`)
password=bench-password-123
# The server binary to measure (another build, e.g. main's, for before/after figures).
server_bin=${VRRP_MONITOR_BIN:-target/release/vrrp-monitor}

# Starts the server in the background on $port/$data; prints its pid.
launch_server() {
  local log=$1
  SVC_SERVER_DATA_DIR="$data" SVC_SERVER_PORT="$port" SVC_ADMIN_PASSWORD="$password" LOG_LEVEL="${BENCH_LOG_LEVEL:-warn}" \
    nohup "$server_bin" 2>"$log" >/dev/null &
  echo $! >"$data/pid"
}

wait_until_up() {
  for _ in $(seq 400); do curl -sf "http://127.0.0.1:$port/api/v1/ping" >/dev/null && return; sleep 0.05; done
  echo "the benchmark server did not start: $(cat "$data"/server*.log)" >&2
  exit 1
}

start_server() {
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  launch_server "$data/server.log"
  pid=$(cat "$data/pid")
  trap 'kill "$(cat "$data/pid")" 2>/dev/null; sleep 0.5; rm -rf "$data"' EXIT
  wait_until_up
}

restart_command() {
  local root
  root=$(pwd)
  cat >"$data/restart.sh" <<SCRIPT
set -e
cd "$root"
data="$data"; port="$port"; password="$password"; server_bin="$server_bin"
$(declare -f launch_server wait_until_up)
old=\$(cat "\$data/pid")
kill -TERM "\$old"
# Gone, or a zombie: its parent (the benchmark's shell) is busy running the load.
while kill -0 "\$old" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/\$old/status" 2>/dev/null; do sleep 0.02; done
# A process with thousands of threads is a zombie before its last thread has
# closed the descriptors: wait until the port can be bound again.
for _ in \$(seq 500); do
  python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1])))' "\$port" 2>/dev/null && break
  sleep 0.02
done
launch_server "\$data/server-restarted.log"
wait_until_up
cat "\$data/pid"
SCRIPT
  echo "bash $data/restart.sh"
}

login_admin() {
  token=$(curl -s -i -X POST "http://127.0.0.1:$port/api/login" -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$password\"}" | sed -n 's/^set-cookie: svc_session=\([^;]*\).*/\1/ip')
  [ -n "$token" ] || { echo "login to the benchmark server failed" >&2; exit 1; }
}
