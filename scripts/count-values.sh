#!/usr/bin/env bash
# Counts the uses of serde_json's `Value` (and `json!` calls) in the server's domain
# code: src/ outside the HTTP layer (src/http) and the database (src/db), test code
# left out (files and folders named `tests`, and each file's `#[cfg(test)]` part).
# A figure of how typed the core is; the files with the most uses follow.
# Usage: scripts/count-values.sh [REV]   (REV: another commit, e.g. for "before")
set -euo pipefail
cd "$(dirname "$0")/.."
tree=.
if [ $# -gt 0 ]; then
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  git archive "$1" src | tar -x -C "$tree"
fi
python3 - "$tree" <<'PY'
import os, re, sys
root = sys.argv[1]
values = calls = 0
per_file = {}
for d, _, files in os.walk(os.path.join(root, "src")):
    rel = os.path.relpath(d, root)
    if rel.startswith(("src/http", "src/db")) or "tests" in rel.split(os.sep):
        continue
    for f in files:
        if not f.endswith(".rs") or "tests" in f:
            continue
        text = open(os.path.join(d, f)).read()
        cut = text.find("#[cfg(test)]")
        if cut >= 0:
            text = text[:cut]
        n = len(re.findall(r"\bValue\b", text))
        calls += len(re.findall(r"\bjson!\(", text))
        if n:
            per_file[os.path.join(rel, f)] = n
            values += n
print(f"Value uses: {values}  json! calls: {calls}")
for name, n in sorted(per_file.items(), key=lambda x: -x[1])[:10]:
    print(f"  {n:4} {name}")
PY
