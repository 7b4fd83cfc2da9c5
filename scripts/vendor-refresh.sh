#!/usr/bin/env bash
# Refreshes the dashboard's vendored ES modules under static/vendor/ from the npm
# registry (`npm pack`, no install, no Node at run or build time) and checks every
# file's SHA-256 against the committed list static/vendor/VENDOR.txt.
#
#   scripts/vendor-refresh.sh          fetch, compare with VENDOR.txt, fail on a difference
#   scripts/vendor-refresh.sh --write  fetch, copy into static/vendor/, rewrite VENDOR.txt
#
# The file names carry the version, so the server may cache them for a year.
# To upgrade a package: change its version below, run with --write, update the
# import map in static/index.html (and the stylesheet link for uPlot's CSS),
# review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."

# package@version  path inside the package  file under static/vendor/
FILES=(
  "preact@11.2.0 dist/preact.mjs preact-11.2.0.mjs"
  "preact@11.2.0 hooks/dist/hooks.mjs preact-hooks-11.2.0.mjs"
  "preact@11.2.0 LICENSE preact-11.2.0.LICENSE"
  "htm@3.1.1 dist/htm.mjs htm-3.1.1.mjs"
  "htm@3.1.1 LICENSE htm-3.1.1.LICENSE"
  "@preact/signals@2.11.4 dist/signals.mjs signals-2.11.4.mjs"
  "@preact/signals@2.11.4 LICENSE signals-2.11.4.LICENSE"
  "@preact/signals-core@1.14.5 dist/signals-core.mjs signals-core-1.14.5.mjs"
  "@preact/signals-core@1.14.5 LICENSE signals-core-1.14.5.LICENSE"
  "uplot@1.6.32 dist/uPlot.esm.js uPlot-1.6.32.esm.js"
  "uplot@1.6.32 dist/uPlot.min.css uPlot-1.6.32.min.css"
  "uplot@1.6.32 LICENSE uPlot-1.6.32.LICENSE"
)

write=false
[ "${1:-}" = "--write" ] && write=true
command -v npm >/dev/null || { echo "vendor-refresh: npm is needed to fetch packages" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A unpacked
list="$work/VENDOR.txt"
{
  echo "# Vendored ES modules of the dashboard, written by scripts/vendor-refresh.sh --write."
  echo "# file  package@version  path-in-package  sha256"
} >"$list"
status=0
for entry in "${FILES[@]}"; do
  read -r spec inner target <<<"$entry"
  if [ -z "${unpacked[$spec]:-}" ]; then
    dir="$work/$(echo "$spec" | tr '/@' '__')"
    mkdir -p "$dir"
    tarball=$(cd "$dir" && npm pack --silent "$spec" | tail -n1)
    tar xzf "$dir/$tarball" -C "$dir"
    unpacked[$spec]="$dir/package"
  fi
  src="${unpacked[$spec]}/$inner"
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  printf '%s  %s  %s  %s\n' "$target" "$spec" "$inner" "$sum" >>"$list"
  committed=$(awk -v f="$target" '$1 == f { print $4 }' static/vendor/VENDOR.txt 2>/dev/null || true)
  if $write; then
    cp "$src" "static/vendor/$target"
    echo "wrote  $target  $sum"
  elif [ "$committed" != "$sum" ]; then
    echo "DIFFERS $target: registry $sum, committed ${committed:-none}"
    status=1
  else
    have=$(sha256sum "static/vendor/$target" | cut -d' ' -f1)
    if [ "$have" != "$sum" ]; then
      echo "DIFFERS $target: file in static/vendor/ is $have, registry and list say $sum"
      status=1
    else
      echo "ok     $target  $sum"
    fi
  fi
done
if $write; then
  cp "$list" static/vendor/VENDOR.txt
  echo "wrote static/vendor/VENDOR.txt"
fi
exit $status
