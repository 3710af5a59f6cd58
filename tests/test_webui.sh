#!/usr/bin/env bash
# The chat UI in a real browser: Debian's Chromium driven by playwright-core
# (tests/e2e/webui.mjs) against `zinc serve` on the demo model (send, stream,
# stop and the slot freed, regenerate, edit-and-resend, new chat, reload and
# the history, a stored hostile reply shown as text, phone width, dark theme)
# and against tests/e2e/mock_openai.mjs for what the demo model cannot be made
# to say (a streamed hostile reply, reasoning, errors mid-stream, the API key
# prompt, the request's settings). Screenshots: BUILD_DIR/artifacts/webui-*.png.
# Also checks the vendored UI libraries against their npm packages.
# Skipped, with the reason, when Chromium, Node >= 18 or the npm packages are
# missing (scripts/deps.sh installs them).
# usage: tests/test_webui.sh BUILD_DIR; last line "webui: N passed, N failed"
set -uo pipefail
build=${1:-build}
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
e2e=$root/tests/e2e
chromium=${ZN_CHROMIUM:-/usr/bin/chromium}
model=$root/models/zinc-demo-qwen35.gguf

if [ ! -x "$chromium" ]; then
  skip webui "no Chromium at $chromium (apt-get install chromium; scripts/deps.sh installs it)"; finish webui; exit
fi
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 18 ]; then
  skip webui "needs Node >= 18 (found: $(node --version 2>/dev/null || echo none))"; finish webui; exit
fi
if [ ! -f "$e2e/node_modules/playwright-core/package.json" ]; then
  skip webui "npm packages not installed (cd tests/e2e && npm ci; scripts/deps.sh does it)"; finish webui; exit
fi

check "vendored UI libraries are their npm packages' files" bash "$root/scripts/web_vendor.sh" --check

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-webui.XXXXXX") || exit 1
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT

# the mock picks its own free port and prints it
key=mock-key-$RANDOM$RANDOM
node "$e2e/mock_openai.mjs" --port 0 --api-key "$key" >"$tmp/mock.out" 2>"$tmp/mock.err" & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' "$tmp/mock.out" && break; sleep 0.1; done
mock_port=$(sed -n 's/^listening //p' "$tmp/mock.out")
[ -n "$mock_port" ] && ok || bad "mock server did not start: $(cat "$tmp/mock.err")"

out=$(cd "$build" && pwd)/artifacts
args=(--out "$out" --mock "http://127.0.0.1:$mock_port" --mock-key "$key")
if "$build/zinc" serve --help >/dev/null 2>&1; then
  up=; t_serve=$SECONDS
  for _ in 1 2 3; do
    port=$((20000 + RANDOM % 40000))
    "$build/zinc" serve -m "$model" --host 127.0.0.1 --port "$port" --parallel 1 >"$tmp/serve.out" 2>"$tmp/serve.err" &
    spid=$!
    for _ in $(seq 300); do
      kill -0 "$spid" 2>/dev/null || break
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then up=1; break; fi
      sleep 0.2
    done
    if [ -n "$up" ]; then pids+=("$spid"); break; fi
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null   # port taken, most likely: another one
  done
  if [ -n "$up" ]; then
    ok; args+=(--url "http://127.0.0.1:$port"); echo "  zinc serve on port $port healthy after $((SECONDS - t_serve)) s" >&2
  else bad "zinc serve did not become healthy: $(tail -5 "$tmp/serve.err")"; fi
else
  skip webui-real "this zinc has no 'serve' command yet: only the mock server's checks run"
fi

(cd "$e2e" && node webui.mjs "${args[@]}") >"$tmp/webui.out" 2>"$tmp/webui.err"
rc=$?
while IFS= read -r line; do
  case "$line" in
    "ok "*) echo "$line"; ok;;
    "FAIL "*) bad "${line#FAIL }";;
    "# "*) echo "  $line" >&2;;
  esac
done <"$tmp/webui.out"
grep -q '^webui.mjs: [0-9]* passed' "$tmp/webui.out" || bad "webui.mjs ended early (exit $rc): $(tail -5 "$tmp/webui.err")"
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$tmp/webui.out"; then bad "webui.mjs exit $rc: $(tail -5 "$tmp/webui.err")"; fi
finish webui
