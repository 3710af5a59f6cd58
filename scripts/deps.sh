#!/usr/bin/env bash
# Installs every build/test dependency of zinc from Debian packages. Idempotent.
# Also unpacks Debian 13's glslc (which can compile GL_KHR_cooperative_matrix)
# into a private prefix, without touching the system libc.
set -euo pipefail
PKGS="build-essential clang llvm pkg-config git ca-certificates python3 python3-jinja2 python3-numpy
 libvulkan-dev vulkan-tools mesa-vulkan-drivers glslc spirv-tools
 libpcre2-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libjansson-dev
 curl chromium"
# Node.js + npm for the end-to-end tests (the openai SDK, the browser test);
# a node that is already there (e.g. NodeSource's, which bundles npm) is used as is.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then PKGS="$PKGS nodejs npm"; fi
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${ZINC_GLSLC_PREFIX:-$here/.deps/glslc-trixie}

if [ "$(id -u)" != 0 ]; then
  missing=$(dpkg-query -W -f='${Package} ${Status}\n' $PKGS 2>/dev/null | grep -v 'install ok installed' | awk '{print $1}' || true)
  if [ -n "$missing" ]; then
    echo "zinc deps: not root; run: sudo apt-get install -y $PKGS" >&2
    exit 1
  fi
else
  missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"; done)
  if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
  fi
fi

# Private Debian 13 glslc: Debian 12's glslang 12 lacks GL_KHR_cooperative_matrix.
if [ ! -x "$prefix/glslc" ]; then
  tmp=$(mktemp -d)
  mkdir -p "$tmp/lists/partial" "$tmp/archives/partial" "$prefix"
  echo "deb http://deb.debian.org/debian trixie main" > "$tmp/sources.list"
  apto="-o Dir::Etc::SourceList=$tmp/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$tmp/lists -o Dir::Cache::Archives=$tmp/archives -o APT::Architecture=amd64 -o Acquire::Check-Valid-Until=false"
  apt-get $apto update -qq
  (cd "$tmp" && apt-get $apto download glslc libshaderc1 libc6 libstdc++6 libgcc-s1)
  for f in "$tmp"/*.deb; do dpkg -x "$f" "$prefix/root"; done
  r="$prefix/root"
  cat > "$prefix/glslc" <<EOS
#!/bin/sh
exec "$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$r/usr/lib/x86_64-linux-gnu:$r/lib/x86_64-linux-gnu" "$r/usr/bin/glslc" "\$@"
EOS
  chmod +x "$prefix/glslc"
  rm -rf "$tmp"
fi
# npm packages of the end-to-end tests (tests/e2e/package-lock.json: the
# browser test's playwright-core, the UI's vendored libraries); Node itself
# comes with the machine (nodejs >= 20).
if [ -f "$here/tests/e2e/package-lock.json" ]; then
  if command -v npm >/dev/null 2>&1; then
    stamp=$here/tests/e2e/node_modules/.zinc-installed-lock
    if ! cmp -s "$here/tests/e2e/package-lock.json" "$stamp" 2>/dev/null; then
      (cd "$here/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error) &&
        cp "$here/tests/e2e/package-lock.json" "$stamp"
    fi
  else
    echo "zinc deps: no npm; the browser and OpenAI-client tests will be skipped" >&2
  fi
fi
"$prefix/glslc" --version > /tmp/zinc-glslc-version.txt && head -1 /tmp/zinc-glslc-version.txt
echo "zinc deps: ok"
