#!/usr/bin/env bash
# The load tool (tools/load/zinc_load.c, build/zinc-load) against a real
# `zinc serve` on the demo model, small and bounded: every request of every
# level succeeds, the tokens it counts are the ones the server's metrics
# counted, the statistics are ordered (p50 <= p90 <= p99), the chat endpoint
# works too, an API key is sent, failures are reported (exit 1), and it
# refuses any URL that is not this machine's loopback. $1 = build dir.
build=${1:-build}
zinc=$build/zinc; zl=$build/zinc-load
[ -x "$zinc" ] || zinc=./zinc
M=models/zinc-demo-qwen35.gguf
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
if [ ! -x "$zl" ]; then bad "no $zl (make load)"; finish load; exit 1; fi

KEY=k$RANDOM
"$zinc" serve --port 0 -m "$M" --backend cpu --threads 2 --parallel 4 --ctx 1024 --api-key "$KEY" 2> "$tmp/err" & pid=$!
for _ in $(seq 400); do grep -q "zinc: ready:" "$tmp/err" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
PORT=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/err" | head -1)
U=http://127.0.0.1:$PORT
metric() { curl -s -H "Authorization: Bearer $KEY" "$U/metrics" | sed -n "s/^$1 //p"; }

g0=$(metric zinc_generation_tokens_total)
"$zl" --url "$U" --api-key "$KEY" --concurrency 1,4 --requests 8 --max-tokens 8 --prompt-words 8 --json "$tmp/out.json" \
  > "$tmp/out.txt" 2> "$tmp/out.err"
expect "zinc-load exit status" 0 $?
cat "$tmp/out.txt"
g1=$(metric zinc_generation_tokens_total)
check "two levels, every request served, statistics in order" python3 -c "
import json; d = json.load(open('$tmp/out.json')); L = d['levels']
assert [l['concurrency'] for l in L] == [1, 4], L
for l in L:
    assert l['requests'] == 8 and l['errors'] == 0, l
    assert l['requests_per_s'] > 0 and l['tokens_per_s'] > 0 and l['wall_s'] > 0, l
    for k in ('ttft_ms', 'itl_ms', 'e2e_ms'):
        p = l[k]; assert 0 <= p['p50'] <= p['p90'] <= p['p99'], (k, p)
    assert l['ttft_ms']['p50'] > 0 and l['e2e_ms']['p50'] >= l['ttft_ms']['p50'], l
    assert abs(l['tokens_per_s'] * l['wall_s'] - 8 * 8) < 0.5, ('tokens counted', l)
"
# the warm-up request and 16 of 8 tokens each: what the server generated
expect "tokens counted = the server's" $(( (1 + 16) * 8 )) $((g1 - g0))
"$zl" --url "http://localhost:$PORT" --api-key "$KEY" --endpoint chat --concurrency 2 --requests 2 --max-tokens 4 \
  > "$tmp/chat.txt" 2>&1
expect "chat endpoint" 0 $?
has "chat: 2 served" "$tmp/chat.txt" "    2      2     0"
# a shared system prompt before each request's own words
r0=$(metric zinc_prefix_cache_reused_tokens_total)
"$zl" --url "$U" --api-key "$KEY" --endpoint chat --concurrency 2 --requests 4 --max-tokens 4 --prompt-words 4 \
  --system-words 48 --json "$tmp/sys.json" > "$tmp/sys.txt" 2>&1
expect "--system-words" 0 $?
# the hybrid model reuses the system prompt from a slot's checkpoint at its end: the warm-up and
# the 4 requests, of which at least 3 start after one took it (48 words: 48+ tokens, a margin of 8)
r1=$(metric zinc_prefix_cache_reused_tokens_total)
if [ $((r1 - r0)) -ge $((3 * (48 - 8))) ]; then ok; else bad "--system-words: $((r1 - r0)) prompt tokens reused, want >= $((3 * 40))"; fi
check "--system-words in the JSON" python3 -c "import json; assert json.load(open('$tmp/sys.json'))['system_words'] == 48"
# the same on /v1/completions: a raw prompt has no system message, so what a hybrid model reuses
# is a slot's block checkpoint (every 256 tokens, scheduler.c); 600 words are 600+ tokens, two
# blocks: the 4 requests after the warm-up each resume at 512 (a free slot copies a busy one's)
h0=$(metric zinc_prefix_cache_hits_total); r0=$(metric zinc_prefix_cache_reused_tokens_total)
"$zl" --url "$U" --api-key "$KEY" --endpoint completions --concurrency 2 --requests 4 --max-tokens 4 --prompt-words 4 \
  --system-words 600 > "$tmp/sysc.txt" 2>&1
expect "--endpoint completions --system-words" 0 $?
h1=$(metric zinc_prefix_cache_hits_total); r1=$(metric zinc_prefix_cache_reused_tokens_total)
if [ $((h1 - h0)) -ge 4 ] && [ $((r1 - r0)) -ge $((4 * 512)) ]; then ok
else bad "completions --system-words 600: $((h1 - h0)) hits, $((r1 - r0)) prompt tokens reused, want >= 4 and >= $((4 * 512))"; fi
# constrained output: the server enforces the format sent
"$zl" --url "$U" --api-key "$KEY" --endpoint chat --concurrency 2 --requests 2 --max-tokens 6 --prompt-words 4 \
  --response-format '{"type":"json_schema","json_schema":{"name":"t","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}' \
  > "$tmp/rf.txt" 2>&1
expect "--response-format json_schema" 0 $?
"$zl" --url "$U" --api-key "$KEY" --endpoint chat --concurrency 1 --requests 1 --max-tokens 4 \
  --response-format '{"type":"json_schema","json_schema":{"schema":{"type":"object","patternProperties":{}}}}' > "$tmp/rfbad.txt" 2>&1
expect "--response-format: a schema the server refuses is an error" 1 $?
has "--response-format: the server's reason" "$tmp/rfbad.txt" "HTTP 400"
# failures are reported: no key
"$zl" --url "$U" --concurrency 1 --requests 1 --max-tokens 2 > "$tmp/nokey.txt" 2>&1
expect "no API key: exit 1" 1 $?
has "no API key: the reason" "$tmp/nokey.txt" "HTTP 401"
# loopback only
for u in http://10.1.2.3:80 http://example.com:80 http://0.0.0.0:$PORT "http://[::2]:80" https://127.0.0.1:$PORT; do
  "$zl" --url "$u" > "$tmp/refuse.txt" 2>&1
  expect "refuses $u" 2 $?
done
has "refusal names the rule" "$tmp/refuse.txt" "loopback"
"$zl" --url "$U" --concurrency 0 > /dev/null 2>&1; expect "bad --concurrency" 2 $?
kill -TERM "$pid"; wait "$pid"; expect "server drains" 0 $?; pid=
finish load
