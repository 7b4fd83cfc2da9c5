# Shared by the benchmarks (source it after building the release binaries).
#   start_server   a release server on a free loopback port with a temporary data
#                  directory; sets port, pid, data; stops it and removes the data on exit;
#                  logs at warn unless BENCH_LOG_LEVEL says otherwise
#   login_admin    logs in as the first-run administrator; sets token
password=bench-password-123

start_server() {
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  SVC_SERVER_DATA_DIR="$data" SVC_SERVER_PORT="$port" SVC_ADMIN_PASSWORD="$password" LOG_LEVEL="${BENCH_LOG_LEVEL:-warn}" \
    target/release/vrrp-monitor 2>"$data/server.log" &
  pid=$!
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/api/v1/ping" >/dev/null && return; sleep 0.05; done
  echo "the benchmark server did not start: $(cat "$data/server.log")" >&2
  exit 1
}

login_admin() {
  token=$(curl -s -i -X POST "http://127.0.0.1:$port/api/login" -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$password\"}" | sed -n 's/^set-cookie: svc_session=\([^;]*\).*/\1/ip')
  [ -n "$token" ] || { echo "login to the benchmark server failed" >&2; exit 1; }
}
