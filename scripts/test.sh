#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, the server's and the agent's
# integration tests (real binaries on free ports), and the agent's tests against
# real keepalived in network namespaces (../shared/lab/vrrp-lab.sh, needs root).
#
# On a fresh Debian machine it first installs what the build and the tests need from
# Debian's packages (scripts/install-test-deps.sh: keepalived for the lab,
# iproute2/procps/util-linux for namespaces,
# Node.js and npm for the OIDC tests), then the OIDC tests' identity provider (npm's
# certified `oidc-provider`, pinned in tests/oidc/package-lock.json) from the npm
# registry into tests/oidc/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

if [ ! -f tests/oidc/node_modules/oidc-provider/package.json ]; then
  echo "Installing the OIDC test provider (npm ci in tests/oidc)..."
  (cd tests/oidc && npm ci --no-audit --no-fund)
fi

# End-to-end tests start binaries of other packages (the agent's tests start the
# server): build every binary first, so each finds the others beside its own.
cargo build --workspace --bins
cargo test --workspace --all-targets "$@"
