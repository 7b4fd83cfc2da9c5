#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, the server's and the agent's
# integration tests (real binaries on free ports), and the agent's tests against
# real keepalived in network namespaces (../shared/lab/vrrp-lab.sh, needs root).
#
# On a fresh Debian machine it first installs what the build and the tests need from
# Debian's packages (scripts/install-test-deps.sh: OpenSSL headers for the agent's
# HTTPS listener, keepalived for the lab, iproute2/procps/util-linux for namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

# End-to-end tests start binaries of other packages (the agent's tests start the
# server): build every binary first, so each finds the others beside its own.
cargo build --workspace --bins
cargo test --workspace --all-targets "$@"
