#!/usr/bin/env bash
# Runs every test of the workspace, every tier (doc/testing.md):
#  - quick: unit tests and the real binaries on free loopback ports (plain
#    `cargo test`, any user, nothing but Rust);
#  - lab: root and real keepalived in network namespaces (scripts/lab);
#  - browser: the dashboard in headless Chromium over WebDriver;
#  - node: the OIDC tests' identity provider (Node.js);
#  - packaging: the static tarballs, in a Debian 11 root and under qemu-aarch64;
#  - prometheus: promtool and a real Prometheus reading /metrics.
# The cargo feature `test-all` turns the opt-in tiers on (test-support/src/tier.rs).
#
# On a fresh Debian machine it first installs what the build and the tiers need from
# Debian's packages (scripts/install-test-deps.sh, as root), then the OIDC tests'
# identity provider (npm's certified `oidc-provider`, pinned in
# tests/oidc/package-lock.json) from the npm registry into tests/oidc/node_modules.
# Arguments go to `cargo test` (for example a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

if [ ! -f tests/oidc/node_modules/oidc-provider/package.json ]; then
  echo "Installing the OIDC test provider (npm ci in tests/oidc)..."
  (cd tests/oidc && npm ci --no-audit --no-fund)
fi

# `cargo test --workspace` builds every member's binaries before any test runs, so
# the agent's tests find the server beside their own binary and the server's find
# the load generator (test-support's `binary`).
# --no-fail-fast: every test binary runs, so one failure does not hide the others.
cargo test --workspace --all-targets --features test-all --no-fail-fast "$@"
# The vendored HTTP server is not a member (patched upstream code, linted its
# way), but its connection register is ours: its unit tests run here.
if [ $# -eq 0 ]; then cargo test -p tiny_http --lib; fi
