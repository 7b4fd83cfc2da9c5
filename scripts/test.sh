#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, the server's and the agent's
# integration tests (real binaries on free ports), and the agent's tests against
# real keepalived in network namespaces (../shared/lab/vrrp-lab.sh, needs root).
#
# On a fresh Debian machine it first installs what the tests need from Debian's
# packages: keepalived for the lab, iproute2/procps/util-linux for namespaces,
# Node.js and npm for the OIDC tests, whose identity provider (npm's certified
# `oidc-provider`, pinned in tests/oidc/package-lock.json) comes from the npm
# registry into tests/oidc/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v keepalived >/dev/null 2>&1 || missing+=(keepalived)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v pgrep >/dev/null 2>&1 || missing+=(procps)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh: needs ${missing[*]} (apt-get install ${missing[*]}), and root for the lab tests" >&2
    exit 1
  fi
  echo "Installing ${missing[*]}..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f tests/oidc/node_modules/oidc-provider/package.json ]; then
  echo "Installing the OIDC test provider (npm ci in tests/oidc)..."
  (cd tests/oidc && npm ci --no-audit --no-fund)
fi

# End-to-end tests start binaries of other packages (the agent's tests start the
# server): build every binary first, so each finds the others beside its own.
cargo build --workspace --bins
cargo test --workspace --all-targets "$@"
