#!/usr/bin/env bash
# End-to-end: a real `zinc serve` on the demo model, driven with curl and the
# official openai npm SDK (tests/e2e). $1 = build dir. Every server listens on
# a port the kernel picks (--port 0), so parallel runs never collide.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
M=models/zinc-demo-qwen35.gguf
E2E=tests/e2e
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# starts `zinc serve --port 0 ARGS...` as server NAME: sets PORT, PID; waits for "ready"
start() {
  local name=$1; shift
  "$zinc" serve --port 0 "$@" 2> "$tmp/$name.err" &
  PID=$!; pids+=("$PID")
  for _ in $(seq 1200); do
    grep -q "zinc: ready:" "$tmp/$name.err" && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  PORT=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/$name.err" | head -1)
  if grep -q "zinc: ready:" "$tmp/$name.err"; then ok; else bad "server $name did not start: $(cat "$tmp/$name.err")"; fi
}
# http METHOD PATH [BODY] [curl args...]: prints the status; body in $tmp/b, headers in $tmp/h
http() {
  local m=$1 p=$2 d=${3-}; shift 3 2>/dev/null || shift $#
  local args=(-s -o "$tmp/b" -D "$tmp/h" -w '%{http_code}' -X "$m" "$@")
  [ -n "$AUTH" ] && args+=(-H "$AUTH")
  [ -n "$d" ] && args+=(-H 'Content-Type: application/json' --data-binary "$d")
  curl "${args[@]}" "http://127.0.0.1:$PORT$p"
}
jq_() { python3 -c "import json,sys; d=json.load(open('$tmp/b')); print($1)"; }
hdr() { tr -d '\r' < "$tmp/h" | grep -i "^$1:" | head -1 | cut -d' ' -f2-; }

if [ ! -d "$E2E/node_modules/openai" ]; then
  (cd "$E2E" && npm ci --no-audit --no-fund --ignore-scripts > "$tmp/npm.log" 2>&1) || bad "npm ci in $E2E failed: $(tail -5 "$tmp/npm.log")"
fi

KEY=sk-test-$RANDOM$RANDOM
AUTH="Authorization: Bearer $KEY"
start main -m "$M" --backend cpu --threads 2 --parallel 4 --ctx 1024 --api-key "$KEY"
MAIN=$PORT
ID=zinc-demo-qwen35

# health and models
expect "health" 200 "$(AUTH= http GET /health)"
expect "health body" '{"status":"ok"}' "$(cat "$tmp/b")"
expect "models" 200 "$(http GET /v1/models)"
expect "models id" "$ID" "$(jq_ "d['data'][0]['id']")"

# the openai SDK: chat and completions, whole and streamed, usage, typed errors
out=$(node "$E2E/sdk.mjs" "http://127.0.0.1:$PORT/v1" "$KEY" "$ID" 2>&1)
line=$(printf '%s\n' "$out" | tail -1)
case "$line" in
  "sdk: "*" passed, 0 failed") P=$((P + $(sed -E 's/sdk: ([0-9]+) passed.*/\1/' <<<"$line"))) ;;
  *) bad "openai SDK: $out" ;;
esac

# raw SSE, byte for byte: chat with usage, chat without, completions
body='{"model":"'$ID'","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":0'
expect "chat whole" 200 "$(http POST /v1/chat/completions "$body}")"
jq_ "d['choices'][0]['message']['content']" | head -c -1 > "$tmp/want"
curl -sN -D "$tmp/sh" -o "$tmp/sb" -H "$AUTH" --data-binary "$body,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
  "http://127.0.0.1:$PORT/v1/chat/completions"
check "SSE framing (chat, usage)" python3 "$E2E/sse_check.py" "$tmp/sb" "$tmp/sh" chat usage "$tmp/want"
curl -sN -D "$tmp/sh" -o "$tmp/sb" -H "$AUTH" --data-binary "$body,\"stream\":true}" "http://127.0.0.1:$PORT/v1/chat/completions"
check "SSE framing (chat)" python3 "$E2E/sse_check.py" "$tmp/sb" "$tmp/sh" chat nousage "$tmp/want"
cbody='{"prompt":"The old prince said","max_tokens":10,"temperature":0'
expect "completion whole" 200 "$(http POST /v1/completions "$cbody}")"
jq_ "d['choices'][0]['text']" | head -c -1 > "$tmp/want"
curl -sN -D "$tmp/sh" -o "$tmp/sb" -H "$AUTH" --data-binary "$cbody,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
  "http://127.0.0.1:$PORT/v1/completions"
check "SSE framing (completions, usage)" python3 "$E2E/sse_check.py" "$tmp/sb" "$tmp/sh" completion usage "$tmp/want"

# errors: status, body shape, x-should-retry
err_is() { # name status type [param]
  expect "$1 status" "$2" "$CODE"
  expect "$1 type" "$3" "$(jq_ "d['error']['type']")"
  [ -n "${4-}" ] && expect "$1 param" "$4" "$(jq_ "d['error']['param']")"
  expect "$1 retry" "$([ "$2" = 429 ] || [ "$2" = 503 ] && echo true || echo false)" "$(hdr x-should-retry)"
}
CODE=$(http POST /v1/chat/completions '{"messages": [}'); err_is "bad json" 400 invalid_request_error
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"n":3}'); err_is "n=3" 400 invalid_request_error n
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}'); err_is "max_tokens" 400 invalid_request_error max_tokens
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}'); err_is "5 stops" 400 invalid_request_error stop
CODE=$(http POST /v1/chat/completions '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}'); err_is "unknown model" 404 invalid_request_error model
expect "unknown model code" model_not_found "$(jq_ "d['error']['code']")"
CODE=$(http GET /v1/nothing); err_is "unknown route" 404 invalid_request_error
CODE=$(http GET /v1/chat/completions); expect "wrong method" 405 "$CODE"
CODE=$(AUTH= http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}]}'); err_is "no key" 401 authentication_error
CODE=$(AUTH="Authorization: Bearer ${KEY}x" http GET /v1/models); err_is "wrong key" 401 authentication_error
CODE=$(AUTH="x-api-key: $KEY" http GET /v1/models); expect "x-api-key header" 200 "$CODE"
head -c $((9 << 20)) /dev/zero | tr '\0' 'a' > "$tmp/big"
CODE=$(curl -s -o "$tmp/b" -D "$tmp/h" -w '%{http_code}' -H "$AUTH" --data-binary @"$tmp/big" "http://127.0.0.1:$PORT/v1/chat/completions")
err_is "body too large" 413 invalid_request_error
long=$(python3 -c "print('word ' * 3000)")
CODE=$(http POST /v1/completions "{\"prompt\":\"$long\",\"max_tokens\":2}"); err_is "prompt over the context" 400 invalid_request_error
expect "context code" context_length_exceeded "$(jq_ "d['error']['code']")"
CODE=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "$AUTH" -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' b)" "http://127.0.0.1:$PORT/health")
case "$CODE" in 4??) ok ;; *) bad "header too large: status $CODE" ;; esac
expect "still up after all that" 200 "$(http GET /health)"

# the seed's form: a model and no prompt starts the server
"$zinc" -m "$M" --port 0 --backend cpu 2> "$tmp/seed.err" & p=$!; pids+=("$p")
for _ in $(seq 200); do grep -q "zinc: ready:" "$tmp/seed.err" && break; sleep 0.05; done
has "seed form says so" "$tmp/seed.err" "starting the server"
has "seed form serves" "$tmp/seed.err" "zinc: ready:"
kill -TERM "$p"; wait "$p"; expect "seed form exits 0 on SIGTERM" 0 $?

finish serve
