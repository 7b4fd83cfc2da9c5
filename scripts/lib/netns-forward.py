#!/usr/bin/env python3
"""Forwards TCP from this machine's network namespace into another one.

Usage: netns-forward.py LISTEN_PORT NETNS TARGET_HOST TARGET_PORT

The listening socket is opened here (the machine's namespace); then the process
enters NETNS (setns), so every upstream connection is made from inside it. Used
by scripts/demo to show the dashboard of a server that runs in the lab's switch
namespace. One thread pair per connection; WebSockets pass through unchanged.
"""
import ctypes, os, socket, sys, threading

CLONE_NEWNET = 0x40000000

def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

def main():
    port, netns, host, target_port = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(64)
    fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        sys.exit(f"setns {netns}: {os.strerror(ctypes.get_errno())}")
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((host, target_port), timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()

if __name__ == "__main__":
    main()
