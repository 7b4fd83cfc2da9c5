#!/usr/bin/env bash
# Start time to a listening socket, size and `file` output of the binaries of one
# tarball (figures in doc/performance.md). Each binary is started
# RUNS times on a free loopback port with a fresh data folder; the time is from
# the fork to the first accepted TCP connect (median and worst of RUNS). The
# server is first started on a fresh data folder (reported apart), then
# measured on that existing data, as after a restart.
#   scripts/bench-start.sh TARBALL [RUNS]     (default RUNS 20)
#   BENCH_EMULATOR=qemu-aarch64-static        run the binaries under an emulator
set -euo pipefail
tarball=${1:?usage: scripts/bench-start.sh TARBALL [RUNS]}
runs=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
home=$(echo "$work"/vrrp-monitor-*)
for b in vrrp-monitor vrrp-agent; do
  echo "$b: $(stat -c %s "$home/bin/$b") bytes"
  echo "  file: $(file -b "$home/bin/$b")"
done
python3 - "$home" "$runs" "$work" "${BENCH_EMULATOR:-}" <<'PY'
import os, socket, statistics, subprocess, sys, time
home, runs, work, emu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def start(cmd, env):
    port = free_port()
    env = dict(os.environ, **env)
    env["SVC_SERVER_PORT"] = env["SVC_CLIENT_PORT"] = str(port)
    t0 = time.perf_counter()
    p = subprocess.Popen(([emu] if emu else []) + cmd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            dt = time.perf_counter() - t0
            break
        except OSError:
            if p.poll() is not None:
                sys.exit(f"{cmd[0]} exited with {p.returncode}")
            if time.perf_counter() - t0 > 60:
                sys.exit(f"{cmd[0]}: no listening socket after 60 s")
            time.sleep(0.0005)
    p.terminate(); p.wait()
    return dt

sdata = os.path.join(work, "server"); os.makedirs(sdata)
server = {"SVC_SERVER_DATA_DIR": sdata, "SVC_SERVER_CONFIG": os.path.join(sdata, "config.yaml"),
          "SVC_ADMIN_PASSWORD": "bench-start-password"}
adata = os.path.join(work, "agent"); os.makedirs(os.path.join(adata, "proc"))
agent = {"SVC_CLIENT_CONFIG": os.path.join(adata, "config.yaml"), "SVC_CLIENT_DATA_DIR": adata,
         "SVC_PROC_DIR": os.path.join(adata, "proc")}
open(agent["SVC_CLIENT_CONFIG"], "w").write("keepalived:\n  pollInterval: 5\n")
first = start([os.path.join(home, "bin/vrrp-monitor")], server)
print(f"vrrp-monitor: first start (new database): {first*1000:.1f} ms")
for name, env in (("vrrp-monitor", server), ("vrrp-agent", agent)):
    t = sorted(start([os.path.join(home, "bin", name)], env) for _ in range(runs))
    print(f"{name}: start to listening socket: median {statistics.median(t)*1000:.1f} ms, "
          f"worst {t[-1]*1000:.1f} ms ({runs} runs)")
PY
