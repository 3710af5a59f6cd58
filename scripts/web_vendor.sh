#!/usr/bin/env bash
# Copies the web UI's npm libraries, as published, into src/server/web/vendor/
# (committed, so building zinc needs no network and no npm). The versions are
# pinned in tests/e2e/package.json + package-lock.json; to update one: change
# its version there, `npm install` in tests/e2e, run this, commit all three.
# tests/test_webui.sh fails when the vendored files differ from the packages.
#   marked     markdown -> HTML for replies (lib/marked.esm.js)
#   dompurify  sanitizes that HTML before it is shown (dist/purify.es.mjs)
# usage: scripts/web_vendor.sh [--check]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nm=$root/tests/e2e/node_modules
out=$root/src/server/web/vendor
files=("marked/lib/marked.esm.js:marked.esm.js" "dompurify/dist/purify.es.mjs:purify.es.mjs")
[ -d "$nm" ] || (cd "$root/tests/e2e" && npm ci --no-audit --no-fund)
rc=0
for f in "${files[@]}"; do
  src=$nm/${f%%:*}; dst=$out/${f##*:}
  if [ "${1:-}" = --check ]; then
    cmp -s "$src" "$dst" || { echo "web_vendor: $dst differs from $src (run scripts/web_vendor.sh)" >&2; rc=1; }
  else
    mkdir -p "$out"; cp "$src" "$dst"
  fi
done
exit $rc
