#!/usr/bin/env bash
# Installs, from Debian's packages, what building and testing the workspace needs and
# a fresh machine lacks: keepalived for the lab, iproute2/procps/util-linux for
# namespaces, curl for the notify script tests, Node.js and npm for the OIDC tests' identity provider, chromium and
# chromium-driver for the dashboard's browser tests (tests/browser), prometheus
# (with promtool) for the metrics tests, binutils and systemd for the tarball test,
# debootstrap, file and qemu-user-static for the static tarballs' tests (a Debian 11
# root, the aarch64 binaries); lintian, rpmlint and rpm for the packages' tests;
# schemathesis and openapi-spec-validator (PyPI, in
# target/contract-venv) for the OpenAPI contract tests; ansible-core and
# ansible-lint (PyPI, in target/ansible-venv) for the Ansible roles' test; then, through
# scripts/install-static-deps.sh, the musl targets, Zig and cargo-zigbuild for the
# static builds.
# Run by scripts/test.sh and by .ci/run before anything is compiled.
set -euo pipefail

missing=()
command -v keepalived >/dev/null 2>&1 || missing+=(keepalived)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v pgrep >/dev/null 2>&1 || missing+=(procps)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
# The tarball test: objdump (scripts/package) and systemd-analyze (the units).
command -v objdump >/dev/null 2>&1 || missing+=(binutils)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# The static tarballs' tests (tests/server/static_tarballs.rs).
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v file >/dev/null 2>&1 || missing+=(file)
command -v qemu-aarch64-static >/dev/null 2>&1 || missing+=(qemu-user-static)
# The packages' tests (tests/server/packages.rs): the .debs' and .rpms' linters, and
# rpm to install the .rpms into an empty root.
command -v lintian >/dev/null 2>&1 || missing+=(lintian)
command -v rpmlint >/dev/null 2>&1 || missing+=(rpmlint)
command -v rpm >/dev/null 2>&1 || missing+=(rpm)
# scripts/demo's dashboard forwarder.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/install-test-deps.sh: needs ${missing[*]} (apt-get install ${missing[*]}), and root for the lab tests" >&2
    exit 1
  fi
  echo "Installing ${missing[*]}..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The contract tier (tests/server/contract.rs): schemathesis and openapi-spec-validator
# from PyPI, pinned, in a venv of their own under target/ (Debian's python3 is
# "externally managed"); test-support/src/tier.rs looks for it there. Needs
# python3 with venv and pip (Debian: python3-venv, python3-pip).
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/target/contract-venv"
contract_pins=(schemathesis==4.32.5 openapi-spec-validator==0.9.0)
if ! "$venv/bin/python" -c 'import schemathesis, openapi_spec_validator' >/dev/null 2>&1; then
  # Debian's python3 makes a venv (with pip in it) only with python3-venv.
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "scripts/install-test-deps.sh: needs python3-venv and python3-pip (apt-get install python3-venv python3-pip)" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip >/dev/null
  fi
  echo "Installing ${contract_pins[*]} into $venv..."
  rm -rf "$venv"
  mkdir -p "$root/target"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${contract_pins[@]}"
fi

# The Ansible roles' lab test (agent/tests/e2e/lab_ansible.rs): ansible-core and
# ansible-lint from PyPI, pinned (the test names the same pins), in a venv of their
# own under target/ (python3's venv and pip as for the contract tier).
ansible_venv="$root/target/ansible-venv"
ansible_pins=(ansible-core==2.19.14 ansible-lint==26.10.1)
ansible_have=$'\n'$("$ansible_venv/bin/python" -m pip freeze 2>/dev/null || true)$'\n'
if [[ $ansible_have != *$'\n'"${ansible_pins[0]}"$'\n'* || $ansible_have != *$'\n'"${ansible_pins[1]}"$'\n'* ]]; then
  echo "Installing ${ansible_pins[*]} into $ansible_venv..."
  rm -rf "$ansible_venv"
  mkdir -p "$root/target"
  python3 -m venv "$ansible_venv"
  "$ansible_venv/bin/python" -m pip install --quiet --disable-pip-version-check "${ansible_pins[@]}"
fi

# The static (musl) builds: scripts/package, scripts/demo, scripts/host-guide.
"$(dirname "$0")/install-static-deps.sh"
