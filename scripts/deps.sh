#!/usr/bin/env bash
# Installs every build/test dependency of zinc from Debian/Ubuntu packages
# (make included: on a bare machine this is the first thing to run).
# Idempotent. Also unpacks Debian 13's glslc (which can compile
# GL_KHR_cooperative_matrix) into a private prefix, without touching the
# system libc; it is fetched from the Debian mirror this machine's apt is
# configured with (deb.debian.org where there is none, e.g. on Ubuntu).
set -euo pipefail
PKGS="make build-essential clang llvm pkg-config git ca-certificates debian-archive-keyring
 python3 python3-jinja2 python3-numpy python3-yaml
 libvulkan-dev vulkan-tools mesa-vulkan-drivers glslc spirv-tools
 libpcre2-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libjansson-dev zlib1g-dev
 curl nginx jq"
# Node.js + npm for the end-to-end tests (the openai SDK, the browser test);
# a node that is already there (e.g. NodeSource's, which bundles npm) is used as is.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then PKGS="$PKGS nodejs npm"; fi
# installed where the archive has them (Ubuntu's chromium is a snap wrapper);
# the tests that need them skip without
OPT_PKGS="chromium"
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${ZINC_GLSLC_PREFIX:-$here/.deps/glslc-trixie}
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'install ok installed'; }
# clang's libFuzzer and sanitizer runtimes (scripts/fuzz-smoke.sh): only a
# Recommends of clang, and versioned like it (14 on Debian 12, 18 on Ubuntu 24.04)
clang_rt() {
  local v=
  if command -v clang >/dev/null; then v=$(clang -dumpversion | cut -d. -f1)
  else v=$(apt-cache depends clang 2>/dev/null | grep -oE 'Depends: clang-[0-9]+' | grep -oE '[0-9]+' | head -1); fi
  [ -n "$v" ] && echo "libclang-rt-$v-dev"
}
missing() { for p in "$@"; do installed "$p" || echo "$p"; done; }
# a package the archive has, not a transitional one that installs a snap
available() {
  local p v
  for p in "$@"; do
    v=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    case "$v" in ""|"(none)"|*snap*) ;; *) echo "$p";; esac
  done
}

if [ "$(id -u)" != 0 ]; then
  need=$(missing $PKGS $(clang_rt))
  if [ -n "$need" ]; then
    echo "zinc deps: not root; run: sudo apt-get install -y --no-install-recommends" $need >&2
    exit 1
  fi
else
  need=$(missing $PKGS $(clang_rt) $(available $OPT_PKGS))
  if [ -n "$need" ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $need
    # clang's version is known for sure once it is installed
    need=$(missing "$(clang_rt)")
    [ -z "$need" ] || apt-get install -y -qq --no-install-recommends $need
  fi
fi

# The first configured archive serving a Debian release (one-line and deb822
# sources); security and -updates suites are other archives.
debian_mirror() {
  local f files=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  awk '
    /^[ \t]*deb[ \t]/ { sub(/\[[^]]*\]/, ""); if ($3 ~ /^(bookworm|trixie|forky|sid|bullseye|stable|testing|unstable)$/) { print $2; exit } }
    /^URIs:/ { uri = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i ~ /^(bookworm|trixie|forky|sid|bullseye|stable|testing|unstable)$/ && uri != "") { print uri; exit } }
    /^[ \t]*$/ { uri = "" }
  ' "${files[@]}"
}

# Private Debian 13 glslc: Debian 12's glslang 12 lacks GL_KHR_cooperative_matrix.
fetch_glslc() { # mirror
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$tmp/lists/partial" "$tmp/archives/partial" "$tmp/cache"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $1 trixie main" > "$tmp/sources.list"
  local apto=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$tmp/lists"
    -o Dir::Cache="$tmp/cache" -o Dir::Cache::Archives="$tmp/archives" -o APT::Architecture=amd64 -o Acquire::Check-Valid-Until=false)
  # apt downloads as the unprivileged _apt user: let it write there (no
  # "unsandboxed as root" warnings)
  if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then chown -R _apt:root "$tmp"; fi
  local ok=0
  if apt-get "${apto[@]}" update -qq && (cd "$tmp" && apt-get "${apto[@]}" download -qq glslc libshaderc1 libc6 libstdc++6 libgcc-s1); then
    mkdir -p "$prefix"
    for f in "$tmp"/*.deb; do dpkg -x "$f" "$prefix/root"; done
    ok=1
  fi
  rm -rf "$tmp"
  [ $ok = 1 ]
}
if [ ! -x "$prefix/glslc" ]; then
  mirror=$(debian_mirror); mirror=${mirror:-http://deb.debian.org/debian}
  echo "zinc deps: Debian 13's glslc from $mirror"
  if ! fetch_glslc "$mirror"; then
    [ "$mirror" != http://deb.debian.org/debian ] || { echo "zinc deps: cannot download glslc" >&2; exit 1; }
    echo "zinc deps: $mirror has no trixie glslc; trying http://deb.debian.org/debian"
    fetch_glslc http://deb.debian.org/debian || { echo "zinc deps: cannot download glslc" >&2; exit 1; }
  fi
  r="$prefix/root"
  cat > "$prefix/glslc" <<EOS
#!/bin/sh
exec "$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$r/usr/lib/x86_64-linux-gnu:$r/lib/x86_64-linux-gnu" "$r/usr/bin/glslc" "\$@"
EOS
  chmod +x "$prefix/glslc"
fi
# npm packages of the end-to-end tests (tests/e2e/package-lock.json: the
# browser test's playwright-core, the UI's vendored libraries); they run on
# Node >= 18 (Debian 12's and Ubuntu 24.04's nodejs).
if [ -f "$here/tests/e2e/package-lock.json" ]; then
  if command -v npm >/dev/null 2>&1; then
    stamp=$here/tests/e2e/node_modules/.zinc-installed-lock
    if ! cmp -s "$here/tests/e2e/package-lock.json" "$stamp" 2>/dev/null; then
      # without them the end-to-end tests fail: say so here, not "ok"
      (cd "$here/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error) ||
        { echo "zinc deps: npm ci in tests/e2e failed (registry $(npm config get registry))" >&2; exit 1; }
      cp "$here/tests/e2e/package-lock.json" "$stamp"
    fi
  else
    echo "zinc deps: no npm; the browser and OpenAI-client tests will be skipped" >&2
  fi
fi
v=$("$prefix/glslc" --version) && echo "${v%%$'\n'*}"
echo "zinc deps: ok"
