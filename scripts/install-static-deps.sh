#!/usr/bin/env bash
# Installs what the static (musl) builds need and a fresh machine lacks: the Rust
# targets x86_64-unknown-linux-musl and aarch64-unknown-linux-musl (rustup), Zig as
# the C compiler and linker for both targets (the `ziglang` wheel from PyPI, in a
# virtual environment of its own), and cargo-zigbuild (crates.io), which drives
# cargo with Zig for the C parts: the bundled SQLite, ring and jemalloc; and
# cargo-deb and cargo-generate-rpm (crates.io), with which scripts/package makes
# the .deb and .rpm packages from those static binaries.
# Versions are pinned here. Idempotent; run by scripts/install-test-deps.sh, and by
# scripts/lib/static-build before each build.
#
# Zig lives in VRRP_ZIG_HOME (default /var/cache/vrrp-monitor/zig, or
# ~/.cache/vrrp-monitor/zig when /var/cache is not writable); scripts/lib/static-build
# puts its bin/ first on PATH.
set -euo pipefail

ZIGLANG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
CARGO_DEB_VERSION=3.8.0
GENERATE_RPM_VERSION=0.21.1
targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)

zig_home() {
  if [ -n "${VRRP_ZIG_HOME:-}" ]; then
    echo "$VRRP_ZIG_HOME"
  elif mkdir -p /var/cache/vrrp-monitor 2>/dev/null && [ -w /var/cache/vrrp-monitor ]; then
    echo /var/cache/vrrp-monitor/zig
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/vrrp-monitor/zig"
  fi
}

installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done

home=$(zig_home)
if [ "$("$home/bin/zig" version 2>/dev/null)" != "$ZIGLANG_VERSION" ]; then
  echo "Installing Zig $ZIGLANG_VERSION (PyPI: ziglang) into $home..."
  rm -rf "$home"
  if ! python3 -m venv "$home" 2>/dev/null; then
    # Debian's python3 keeps venv (and its pip) in a package of its own.
    [ "$(id -u)" -eq 0 ] || { echo "scripts/install-static-deps.sh: needs python3-venv" >&2; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$home"
    python3 -m venv "$home"
  fi
  "$home/bin/python3" -m pip install -q --disable-pip-version-check "ziglang==$ZIGLANG_VERSION"
  pkg=$("$home/bin/python3" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')
  ln -sf "$pkg/zig" "$home/bin/zig"
  [ "$("$home/bin/zig" version)" = "$ZIGLANG_VERSION" ]
fi

if ! cargo install --list | grep -qx "cargo-zigbuild v$ZIGBUILD_VERSION:"; then
  echo "Installing cargo-zigbuild $ZIGBUILD_VERSION (crates.io)..."
  cargo install --locked --quiet cargo-zigbuild --version "$ZIGBUILD_VERSION"
fi

# The packagers of scripts/package.
installed_tools=$(cargo install --list)
if ! grep -qx "cargo-deb v$CARGO_DEB_VERSION:" <<<"$installed_tools"; then
  echo "Installing cargo-deb $CARGO_DEB_VERSION (crates.io)..."
  cargo install --locked --quiet cargo-deb --version "$CARGO_DEB_VERSION"
fi
if ! grep -qx "cargo-generate-rpm v$GENERATE_RPM_VERSION:" <<<"$installed_tools"; then
  echo "Installing cargo-generate-rpm $GENERATE_RPM_VERSION (crates.io)..."
  cargo install --locked --quiet cargo-generate-rpm --version "$GENERATE_RPM_VERSION"
fi
