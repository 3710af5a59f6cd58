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

if [ ! -d "$E2E/node_modules/openai" ] || [ ! -d "$E2E/node_modules/ajv" ] || [ ! -d "$E2E/node_modules/@anthropic-ai/sdk" ]; then
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
expect "no reasoning, no reasoning tokens" 0 "$(jq_ "d['usage']['completion_tokens_details']['reasoning_tokens']")"
jq_ "d['choices'][0]['message']['content']" | head -c -1 > "$tmp/want"
# a template without thinking (ChatML): a reasoning effort or budget is accepted and changes nothing
for rf in '"reasoning_effort":"low"' '"reasoning_effort":"none"' '"thinking_budget_tokens":0'; do
  expect "no thinking template, $rf" 200 "$(http POST /v1/chat/completions "$body,$rf}")"
  expect "no thinking template, $rf: the same reply" "$(cat "$tmp/want")" "$(jq_ "d['choices'][0]['message']['content']" | head -c -1)"
  expect "no thinking template, $rf: no reasoning" 0 "$(jq_ "d['usage']['completion_tokens_details']['reasoning_tokens']")"
done
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
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}')
err_is "tools without a function" 400 invalid_request_error 'tools[0]'
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}')
err_is "tool_choice required without tools" 400 invalid_request_error tool_choice
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"string","pattern":"^a+$"}}}}')
err_is "json_schema with pattern" 400 invalid_request_error response_format
expect "json_schema with pattern: names it" 1 "$(jq_ "int('pattern' in d['error']['message'])")"
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","format":"email"}}}}}],"tool_choice":"required"}')
err_is "forced call, tool schema with format email" 400 invalid_request_error 'tools[0]'
# tools reach the template: the same conversation with a tool is a longer prompt; "none" leaves it out
TOOLS='[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]'
CODE=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"max_tokens":1,"temperature":0}')
p_plain=$(jq_ "d['usage']['prompt_tokens']")
CODE=$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1,\"temperature\":0,\"tools\":$TOOLS}")
expect "tools auto" 200 "$CODE"
p_tools=$(jq_ "d['usage']['prompt_tokens']")
[ "$p_tools" -gt "$p_plain" ] && ok || bad "tools not rendered: $p_tools prompt tokens with, $p_plain without"
CODE=$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1,\"temperature\":0,\"tools\":$TOOLS,\"tool_choice\":\"none\"}")
expect "tool_choice none: tools left out" "$p_plain" "$(jq_ "d['usage']['prompt_tokens']")"
# a tool result round trip renders through the template (assistant tool_calls, then the tool's message)
CODE=$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"weather in Paris?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny, 21 C\"}],\"max_tokens\":2,\"temperature\":0,\"tools\":$TOOLS}")
expect "tool result round trip" 200 "$CODE"
p_round=$(jq_ "d['usage']['prompt_tokens']")
[ "$p_round" -gt "$p_tools" ] && ok || bad "round trip prompt ($p_round tokens) not longer than the first turn's ($p_tools)"
CODE=$(http GET /v1/nothing); err_is "unknown route" 404 invalid_request_error
CODE=$(http GET /v1/chat/completions); expect "wrong method" 405 "$CODE"

# the Responses and Anthropic Messages APIs: the SDKs (openai responses.create, @anthropic-ai/sdk), whole and
# streamed, tools, count_tokens, stop sequences, typed errors; the Anthropic SDK sends the key as x-api-key
out=$(node "$E2E/sdk_api.mjs" "http://127.0.0.1:$PORT" "$KEY" "$ID" 2>&1)
line=$(printf '%s\n' "$out" | tail -1)
case "$line" in
  "sdk_api: "*" passed, 0 failed") P=$((P + $(sed -E 's/sdk_api: ([0-9]+) passed.*/\1/' <<<"$line"))) ;;
  *) bad "Responses/Messages SDKs: $out" ;;
esac
# raw SSE: named events in the APIs' order, the streamed text the whole response's
rbody='{"input":"Tell me a story.","max_output_tokens":12,"temperature":0'
expect "responses whole" 200 "$(http POST /v1/responses "$rbody}")"
jq_ "d['output'][0]['content'][0]['text']" | head -c -1 > "$tmp/want"
curl -sN -D "$tmp/sh" -o "$tmp/sb" -H "$AUTH" --data-binary "$rbody,\"stream\":true}" "http://127.0.0.1:$PORT/v1/responses"
check "SSE events (responses)" python3 "$E2E/sse_api.py" "$tmp/sb" "$tmp/sh" responses "$tmp/want"
mbody='{"model":"'$ID'","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":0'
expect "messages whole" 200 "$(http POST /v1/messages "$mbody}" -H 'anthropic-version: 2023-06-01')"
jq_ "d['content'][0]['text']" | head -c -1 > "$tmp/want"
curl -sN -D "$tmp/sh" -o "$tmp/sb" -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' --data-binary "$mbody,\"stream\":true}" \
  "http://127.0.0.1:$PORT/v1/messages"
check "SSE events (messages)" python3 "$E2E/sse_api.py" "$tmp/sb" "$tmp/sh" messages "$tmp/want"
# malformed fields: 400s naming them, in each API's error shape
CODE=$(http POST /v1/responses '{"input":[{"type":"function_call","name":"f"}]}'); err_is "responses: bad item" 400 invalid_request_error 'input[0]'
CODE=$(http POST /v1/responses '{"input":"x","max_output_tokens":0}'); err_is "responses: max_output_tokens" 400 invalid_request_error max_output_tokens
CODE=$(http POST /v1/responses '{"input":"x","text":{"format":{"type":"json_schema","name":"n"}}}'); err_is "responses: text.format" 400 invalid_request_error text.format
# a schema the grammar cannot follow is found after parsing (server_submit): still named in this API's fields
CODE=$(http POST /v1/responses '{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"string","pattern":"^a+$"}}}}')
err_is "responses: text.format schema with pattern" 400 invalid_request_error text.format
expect "responses: text.format schema with pattern: names it, not response_format" 1 "$(jq_ "int('pattern' in d['error']['message'] and 'response_format' not in d['error']['message'])")"
CODE=$(http POST /v1/responses '{"input": ['); err_is "responses: bad json" 400 invalid_request_error
anth_err() { # name status type message-regex
  expect "$1 status" "$2" "$CODE"
  expect "$1 shape" "error $3" "$(jq_ "d['type'] + ' ' + d['error']['type']")"
  expect "$1 names the field" 1 "$(jq_ "int(bool(__import__('re').search(r'$4', d['error']['message'])))")"
}
CODE=$(http POST /v1/messages '{"model":"'$ID'","messages":[{"role":"user","content":"x"}]}'); anth_err "messages: no max_tokens" 400 invalid_request_error '^max_tokens'
CODE=$(http POST /v1/messages '{"model":"'$ID'","max_tokens":4,"messages":[{"role":"user","content":[{"type":"document"}]}]}'); anth_err "messages: document block" 400 invalid_request_error 'messages\.0\.content\.0'
CODE=$(http POST /v1/messages '{"model":"'$ID'","max_tokens":4,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"sometimes"}}'); anth_err "messages: tool_choice" 400 invalid_request_error '^tool_choice'
CODE=$(http POST /v1/messages '{"model":"claude-x","max_tokens":4,"messages":[{"role":"user","content":"x"}]}'); anth_err "messages: unknown model" 404 not_found_error claude-x
CODE=$(http POST /v1/messages/count_tokens '{"model":"'$ID'","messages":[{"role":"user","content":"Tell me a story."}]}')
expect "count_tokens" 200 "$CODE"
n_ct=$(jq_ "d['input_tokens']")
expect "messages whole again" 200 "$(http POST /v1/messages "$mbody}")"
expect "count_tokens = the request's input_tokens" "$n_ct" "$(jq_ "d['usage']['input_tokens']")"
CODE=$(AUTH= http POST /v1/messages "$mbody}" -H "x-api-key: wrong"); anth_err "messages: a wrong x-api-key" 401 authentication_error 'API key'
CODE=$(AUTH= http POST /v1/responses "$rbody}" -H "x-api-key: wrong"); err_is "responses: a wrong x-api-key" 401 authentication_error
CODE=$(http GET /v1/responses); expect "responses: wrong method" 405 "$CODE"
expect "responses: Allow" POST "$(hdr allow)"
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

# tokenize / detokenize in llama-server's shapes
expect "tokenize" 200 "$(http POST /tokenize '{"content":"Hello world"}')"
expect "tokenize = zinc tokenize" "$("$zinc" tokenize -m "$M" --no-bos "Hello world" | tr -d ' ')" "$(jq_ "json.dumps(d['tokens']).replace(' ','')")"
ids=$(jq_ "json.dumps(d['tokens'])")
expect "detokenize" 200 "$(http POST /detokenize "{\"tokens\":$ids}")"
expect "detokenize round trip" "Hello world" "$(jq_ "d['content']")"

# seeded sampling is deterministic; another seed samples otherwise
sbody='{"prompt":"The old prince looked at his son and said","max_tokens":24,"temperature":1.0,"top_k":0,"top_p":1,"min_p":0'
http POST /v1/completions "$sbody,\"seed\":42}" > /dev/null; jq_ "d['choices'][0]['text']" > "$tmp/s1"
http POST /v1/completions "$sbody,\"seed\":42}" > /dev/null; jq_ "d['choices'][0]['text']" > "$tmp/s2"
http POST /v1/completions "$sbody,\"seed\":43}" > /dev/null; jq_ "d['choices'][0]['text']" > "$tmp/s3"
if cmp -s "$tmp/s1" "$tmp/s2" && [ -s "$tmp/s1" ]; then ok; else bad "same seed, different text"; fi
if ! cmp -s "$tmp/s1" "$tmp/s3"; then ok; else bad "seeds 42 and 43 gave the same text"; fi

# stop strings: never returned, also when one spans two streamed chunks
pbody='{"messages":[{"role":"user","content":"Tell me about the war."}],"max_tokens":40,"temperature":0'
curl -sN -o "$tmp/sb" -H "$AUTH" --data-binary "$pbody,\"stream\":true}" "http://127.0.0.1:$PORT/v1/chat/completions"
python3 - "$tmp/sb" > "$tmp/stop" <<'PY'
import json, sys
parts = [json.loads(l[6:])['choices'][0]['delta'].get('content', '') for l in open(sys.argv[1]).read().split('\n\n')
         if l.startswith('data: {') and json.loads(l[6:])['choices']]
parts = [p for p in parts if p]
full = ''.join(parts)
# a stop string made of the end of one chunk and the start of the next, past the first chunks
for k in range(2, len(parts) - 1):
    a, b = parts[k], parts[k + 1]
    stop = a[-2:] + b[:2]
    if len(a) >= 2 and len(b) >= 2 and stop.strip():
        print(json.dumps(stop)); print(json.dumps(full[:full.find(stop)])); break
PY
stop=$(sed -n 1p "$tmp/stop"); want=$(sed -n 2p "$tmp/stop")
if [ -n "$stop" ]; then
  expect "stop (whole)" 200 "$(http POST /v1/chat/completions "$pbody,\"stop\":[\"zzz\",$stop]}")"
  expect "stop cuts before it" "$want" "$(jq_ "json.dumps(d['choices'][0]['message']['content'])")"
  expect "stop finish" stop "$(jq_ "d['choices'][0]['finish_reason']")"
  curl -sN -o "$tmp/sb" -H "$AUTH" --data-binary "$pbody,\"stop\":$stop,\"stream\":true}" "http://127.0.0.1:$PORT/v1/chat/completions"
  got=$(python3 -c "
import json,sys
t=''.join(json.loads(l[6:])['choices'][0]['delta'].get('content','') for l in open('$tmp/sb').read().split('\n\n') if l.startswith('data: {') and json.loads(l[6:])['choices'])
print(json.dumps(t))")
  expect "stop across chunks (stream)" "$want" "$got"
else
  bad "no two chunks to build a stop string from: $(head -c 300 "$tmp/sb")"
fi

# logprobs: the chosen token's, top alternatives best first; greedy picks the best
expect "logprobs" 200 "$(http POST /v1/chat/completions "$pbody,\"max_tokens\":8,\"logprobs\":true,\"top_logprobs\":3}")"
check "logprobs content" python3 -c "
import json; d=json.load(open('$tmp/b')); c=d['choices'][0]; lp=c['logprobs']['content']
assert len(lp) == d['usage']['completion_tokens'], (len(lp), d['usage'])
assert ''.join(e['token'] for e in lp) == c['message']['content']
for e in lp:
    assert e['logprob'] <= 0 and len(e['top_logprobs']) == 3 and bytes(e['bytes']).decode() == e['token']
    t = [x['logprob'] for x in e['top_logprobs']]; assert t == sorted(t, reverse=True)
    assert e['top_logprobs'][0]['token'] == e['token'] and abs(t[0] - e['logprob']) < 1e-6
"
expect "completions logprobs" 200 "$(http POST /v1/completions "$cbody,\"logprobs\":2}")"
check "completions logprobs shape" python3 -c "
import json; d=json.load(open('$tmp/b')); l=d['choices'][0]['logprobs']
assert len(l['tokens']) == len(l['token_logprobs']) == len(l['top_logprobs']) == d['usage']['completion_tokens']
assert ''.join(l['tokens']) == d['choices'][0]['text'] and all(len(t) == 2 for t in l['top_logprobs'])
"

# multi-turn reuse: a follow-up turn computes only its new tokens (hybrid model: from the checkpoint)
metric() { curl -s -H "$AUTH" "http://127.0.0.1:$PORT/metrics" | sed -n "s/^$1 //p"; }
t1='[{"role":"user","content":"Tell me about the old prince."}]'
expect "turn 1" 200 "$(http POST /v1/chat/completions "{\"messages\":$t1,\"max_tokens\":16,\"temperature\":0}")"
reply=$(jq_ "json.dumps(d['choices'][0]['message']['content'])"); p1=$(jq_ "d['usage']['prompt_tokens']")
t2="[{\"role\":\"user\",\"content\":\"Tell me about the old prince.\"},{\"role\":\"assistant\",\"content\":$reply},{\"role\":\"user\",\"content\":\"And his son?\"}]"
computed0=$(metric zinc_prompt_tokens_computed_total)
expect "turn 2" 200 "$(http POST /v1/chat/completions "{\"messages\":$t2,\"max_tokens\":16,\"temperature\":0}")"
p2=$(jq_ "d['usage']['prompt_tokens']"); c2=$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")
reply2=$(jq_ "json.dumps(d['choices'][0]['message']['content'])")
computed1=$(metric zinc_prompt_tokens_computed_total)
# the checkpoint sits where turn 1's generation prompt began: its rendering without "<|im_start|>assistant\n"
http POST /tokenize '{"content":"<|im_start|>user\nTell me about the old prince.<|im_end|>\n"}' > /dev/null
ck=$(jq_ "len(d['tokens'])")
if [ "$c2" -ge "$ck" ] && [ "$ck" -gt 5 ]; then ok; else bad "turn 2 reused $c2 tokens, want >= $ck (turn 1 had $p1)"; fi
expect "metrics count what was computed" "$((computed0 + p2 - c2))" "$computed1"
if [ $((p2 - c2)) -lt $((p2 / 2)) ]; then ok; else bad "turn 2 computed $((p2 - c2)) of $p2 tokens"; fi
expect "no reuse" 200 "$(http POST /v1/chat/completions "{\"messages\":$t2,\"max_tokens\":16,\"temperature\":0,\"cache_prompt\":false}")"
expect "no reuse: nothing cached" 0 "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")"
expect "reused turn = computed turn" "$reply2" "$(jq_ "json.dumps(d['choices'][0]['message']['content'])")"

# metrics and slots
curl -s -H "$AUTH" "http://127.0.0.1:$PORT/metrics" > "$tmp/m"
for name in 'vllm:num_requests_running ' 'vllm:num_requests_waiting ' 'vllm:kv_cache_usage_perc ' \
  'zinc_requests_total{route="/v1/chat/completions",status="200"} ' 'zinc_requests_total{route="/v1/chat/completions",status="400"} ' \
  'zinc_time_to_first_token_seconds_count ' 'zinc_inter_token_latency_seconds_bucket{le="+Inf"} ' 'zinc_queue_time_seconds_sum ' \
  'zinc_request_duration_seconds_count ' 'zinc_generation_tokens_total ' 'zinc_prompt_tokens_cached_total ' \
  'zinc_engine_replayed_steps_total '; do
  has "metric $name" "$tmp/m" "$name"
done
expect "slots" 200 "$(http GET /slots)"
expect "slots count" 4 "$(jq_ "len(d)")"
expect "slot fields" "idle 1024" "$(jq_ "d[0]['state'] + ' ' + str(d[0]['n_ctx'])")"

# 16 concurrent streams, each equal to its run alone; they shared engine steps
b0=$(metric zinc_engine_batched_steps_total)
out=$(node "$E2E/concurrent.mjs" "http://127.0.0.1:$PORT/v1" "$KEY" "$ID" 16 16 2>&1)
line=$(printf '%s\n' "$out" | tail -1)
case "$line" in
  "concurrent: "*" passed, 0 failed") P=$((P + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line"))); printf '%s\n' "$out" | tail -2 | head -1 ;;
  *) bad "16 concurrent clients: $out" ;;
esac
b1=$(metric zinc_engine_batched_steps_total)
if [ -n "$b0" ] && [ "${b1:-0}" -gt "$b0" ]; then ok; else bad "16 concurrent clients: batched steps $b0 -> $b1"; fi

# Host header (DNS rebinding) and CORS
expect "foreign Host" 403 "$(http GET /v1/models '' -H "Host: evil.example:$PORT")"
expect "localhost Host" 200 "$(http GET /v1/models '' -H "Host: localhost:$PORT")"
expect "no CORS without --cors" "" "$(http GET /v1/models '' -H 'Origin: http://evil.example' > /dev/null; hdr access-control-allow-origin)"

# one slot: a client that disconnects mid-stream frees it at once; the queue and connection limits
AUTH="Authorization: Bearer $KEY"
start one -m "$M" --backend cpu --threads 2 --parallel 1 --ctx 8192 --api-key "$KEY"
limit_js() { # name mode n
  local out line; out=$(node "$E2E/limits.mjs" "$2" "$PORT" "$KEY" "$3" 2>&1)
  line=$(printf '%s\n' "$out" | tail -1)
  case "$line" in
    "limits: "*" passed, 0 failed") P=$((P + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line"))); printf '%s\n' "$out" | tail -2 | head -1 ;;
    *) bad "$1: $out" ;;
  esac
}
limit_js "disconnect frees the slot" disconnect 1000
expect "next request served" 200 "$(http POST /v1/completions '{"prompt":"The","max_tokens":2}')"
# a waiting request whose client leaves gives up its place at once, not only when it reaches
# the head of the queue: a long stream holds the slot, 5 requests wait (3 whole, 2 streamed),
# the clients of the last 4 leave; the waiting gauge drops to 1 while the long one still runs
gauge() { curl -s -H "$AUTH" "http://127.0.0.1:$PORT/metrics" | sed -n "s/^vllm:num_requests_$1 //p"; }
until_gauge() { # name value tries(x0.05 s)
  for _ in $(seq "$3"); do [ "$(gauge "$1")" = "$2" ] && return 0; sleep 0.05; done; return 1
}
curl -sN -o /dev/null -H "$AUTH" --data-binary '{"prompt":"The","max_tokens":60000,"ignore_eos":true,"stream":true}' \
  "http://127.0.0.1:$PORT/v1/completions" & hold=$!
until_gauge running 1 200 || bad "the long stream did not start"
waiters=()
for i in 1 2 3 4 5; do
  st=$([ "$i" -gt 3 ] && echo true || echo false)
  curl -sN -o "$tmp/w$i" -H "$AUTH" --data-binary "{\"prompt\":\"The old\",\"max_tokens\":4,\"stream\":$st}" \
    "http://127.0.0.1:$PORT/v1/completions" & waiters+=($!)
  until_gauge waiting "$i" 200 || bad "request $i did not queue: waiting $(gauge waiting)"
done
kill "${waiters[@]:1}" 2>/dev/null; wait "${waiters[@]:1}" 2>/dev/null
if until_gauge waiting 1 40; then ok; else bad "queued requests whose clients left still wait: $(gauge waiting) waiting"; fi
expect "the long stream still runs" 1 "$(gauge running)"
kill "$hold" 2>/dev/null; wait "$hold" 2>/dev/null
wait "${waiters[0]}"; expect "the first waiter is served" 200 "$(python3 -c "
import json; d=json.load(open('$tmp/w1')); print(200 if d['choices'][0]['text'] and d['usage']['completion_tokens'] == 4 else d)")"
until_gauge running 0 100 || bad "the slots were not freed"
# a long stream holds the slot, 80 requests overflow the queue (ZN_SRV_MAX_QUEUE 64) behind it
limit_js "queue limit" queue 80
limit_js "connection limit" connections 260
expect "alive after the limits" 200 "$(http GET /health)"

# grammar-constrained output (tests/e2e/structured.mjs): schemas validated with ajv, forced tool
# calls (up to 16 in parallel: a context for them)
AUTH="Authorization: Bearer $KEY"
start grammar -m "$M" --backend cpu --threads 2 --parallel 2 --ctx 4096 --api-key "$KEY"
out=$(node "$E2E/structured.mjs" "http://127.0.0.1:$PORT/v1" "$KEY" "$ID" 2>&1)
line=$(printf '%s\n' "$out" | tail -1)
case "$line" in
  "structured: "*" passed, 0 failed") P=$((P + $(sed -E 's/structured: ([0-9]+) passed.*/\1/' <<<"$line"))) ;;
  *) bad "structured output: $out" ;;
esac

# a thinking template (Qwen3.5's): reasoning goes to reasoning_content, and a follow-up
# turn reuses the checkpoint although the template drops the previous reasoning
AUTH=
start think -m "$M" --backend cpu --threads 2 --chat-template-file tests/templates/qwen3.5.jinja
q1='[{"role":"user","content":"Tell me about the old prince."}]'
expect "thinking turn" 200 "$(http POST /v1/chat/completions "{\"messages\":$q1,\"max_tokens\":12,\"temperature\":0}")"
r1=$(jq_ "json.dumps(d['choices'][0]['message'].get('reasoning_content',''))")
c1=$(jq_ "json.dumps(d['choices'][0]['message']['content'])")
if [ "$r1" != '""' ]; then ok; else bad "no reasoning_content: $(cat "$tmp/b")"; fi
expect "reasoning also as reasoning" "$r1" "$(jq_ "json.dumps(d['choices'][0]['message'].get('reasoning',''))")"
case "$c1" in *think*) bad "think tags in content: $c1" ;; *) ok ;; esac
curl -sN -o "$tmp/sb" --data-binary "{\"messages\":$q1,\"max_tokens\":12,\"temperature\":0,\"stream\":true}" "http://127.0.0.1:$PORT/v1/chat/completions"
expect "streamed reasoning = whole" "$r1" "$(python3 -c "
import json
t=''.join(json.loads(l[6:])['choices'][0]['delta'].get('reasoning_content','') for l in open('$tmp/sb').read().split('\n\n') if l.startswith('data: {') and json.loads(l[6:])['choices'])
print(json.dumps(t))")"
q2="[{\"role\":\"user\",\"content\":\"Tell me about the old prince.\"},{\"role\":\"assistant\",\"content\":$c1,\"reasoning_content\":$r1},{\"role\":\"user\",\"content\":\"And then?\"}]"
expect "thinking turn 2" 200 "$(http POST /v1/chat/completions "{\"messages\":$q2,\"max_tokens\":4,\"temperature\":0}")"
http POST /tokenize '{"content":"<|im_start|>user\nTell me about the old prince.<|im_end|>\n"}' > /dev/null; ck=$(jq_ "len(d['tokens'])")
http POST /v1/chat/completions "{\"messages\":$q2,\"max_tokens\":4,\"temperature\":0}" > /dev/null
c2=$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")
if [ "$c2" -ge "$ck" ]; then ok; else bad "hybrid reuse with dropped reasoning: $c2 cached, want >= $ck"; fi
expect "thinking off" 200 "$(http POST /v1/chat/completions "{\"messages\":$q1,\"max_tokens\":6,\"temperature\":0,\"chat_template_kwargs\":{\"enable_thinking\":false}}")"
expect "thinking off: no reasoning" "" "$(jq_ "d['choices'][0]['message'].get('reasoning_content','')")"
expect "thinking off: no reasoning tokens" 0 "$(jq_ "d['usage']['completion_tokens_details']['reasoning_tokens']")"
# usage.completion_tokens_details.reasoning_tokens: the tokens through the one that closes </think>
# (all of them while it stays open: the prompt opened it), whole and streamed alike
expect "reasoning tokens" 200 "$(http POST /v1/chat/completions "{\"messages\":$q1,\"max_tokens\":16,\"temperature\":0,\"logprobs\":true}")"
check "reasoning_tokens counts the reasoning" python3 -c "
import json; d=json.load(open('$tmp/b')); u=d['usage']; toks=[e['token'] for e in d['choices'][0]['logprobs']['content']]
text=''; want=len(toks)
for i, t in enumerate(toks):
    text += t
    if '</think>' in text: want = i + 1; break
assert d['choices'][0]['message'].get('reasoning_content'), d
assert u['completion_tokens_details']['reasoning_tokens'] == want > 0, (u, want, toks)
"
curl -sN -o "$tmp/sb" --data-binary "{\"messages\":$q1,\"max_tokens\":16,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
  "http://127.0.0.1:$PORT/v1/chat/completions"
expect "streamed reasoning tokens" "$(jq_ "d['usage']['completion_tokens_details']['reasoning_tokens']")" "$(python3 -c "
import json
print([json.loads(l[6:]) for l in open('$tmp/sb').read().split('\n\n') if l.startswith('data: {')][-1]['usage']['completion_tokens_details']['reasoning_tokens'])")"
# a reasoning budget (thinking_budget_tokens, reasoning_effort, reasoning.effort, thinking.budget_tokens):
# the server closes <think> once it is spent and the answer follows, whole and streamed, also under a grammar
check "reasoning budget on chat, responses, messages" python3 "$E2E/think_budget.py" "$PORT" 5
CODE=$(http POST /v1/chat/completions "{\"messages\":$q1,\"reasoning_effort\":\"none\",\"chat_template_kwargs\":{\"enable_thinking\":true}}")
err_is "reasoning_effort against enable_thinking" 400 invalid_request_error reasoning_effort
CODE=$(http POST /v1/chat/completions "{\"messages\":$q1,\"thinking_budget_tokens\":-3}")
err_is "thinking_budget_tokens" 400 invalid_request_error thinking_budget_tokens
CODE=$(http POST /v1/responses '{"input":"x","reasoning":{"effort":"maximal"}}')
err_is "responses: reasoning.effort" 400 invalid_request_error reasoning.effort

# a schema under the thinking template with thinking off (the template closes <think> itself):
# the content is the JSON; with thinking on the reasoning is free and ends at </think>
SCH='{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false}}}'
expect "thinking off, json_schema" 200 "$(http POST /v1/chat/completions "{\"messages\":$q1,\"max_tokens\":200,\"temperature\":0,\"response_format\":$SCH,\"chat_template_kwargs\":{\"enable_thinking\":false}}")"
check "thinking off, json_schema: valid content" python3 -c "
import json; d=json.load(open('$tmp/b')); c=d['choices'][0]; v=json.loads(c['message']['content'])
assert c['finish_reason'] == 'stop' and set(v) == {'name', 'age'} and isinstance(v['age'], int) and 0 <= v['age'] <= 120, d
"
expect "thinking on, json_schema" 200 "$(http POST /v1/chat/completions "{\"messages\":$q1,\"max_tokens\":12,\"temperature\":0,\"response_format\":$SCH}")"
check "thinking on, json_schema: the reasoning is free" python3 -c "
import json; d=json.load(open('$tmp/b')); m=d['choices'][0]['message']
assert m.get('reasoning_content') and not m['content'], d
"

# --cors and --allowed-hosts
start cors -m "$M" --backend cpu --threads 1 --cors http://app.example --allowed-hosts zinc.internal,other.internal:9
expect "CORS origin" http://app.example "$(http GET /v1/models '' -H 'Origin: http://app.example' > /dev/null; hdr access-control-allow-origin)"
expect "CORS other origin" "" "$(http GET /v1/models '' -H 'Origin: http://evil.example' > /dev/null; hdr access-control-allow-origin)"
expect "CORS preflight" 204 "$(http OPTIONS /v1/chat/completions '' -H 'Origin: http://app.example' -H 'Access-Control-Request-Method: POST')"
case "$(hdr access-control-allow-headers)" in *Authorization*) ok ;; *) bad "preflight allows no Authorization" ;; esac
expect "allowed host" 200 "$(http GET /health '' -H 'Host: zinc.internal')"
expect "allowed host, any port" 200 "$(http GET /health '' -H "Host: other.internal:$PORT")"
expect "other host" 403 "$(http GET /health '' -H 'Host: zinc.internal.evil.example')"

# drain on SIGTERM: health and new work get 503, the streams in flight finish, exit 0.
# A long stream (minutes) keeps the drain going while the checks run, so nothing here
# depends on this machine's speed; a short one completes meanwhile; then the long
# one's client leaves and the server exits at once.
start drain -m "$M" --backend cpu --threads 2 --parallel 2 --ctx 65536
dpid=$PID
curl -sN -o "$tmp/dl" --data-binary '{"prompt":"The","max_tokens":60000,"ignore_eos":true,"stream":true}' \
  "http://127.0.0.1:$PORT/v1/completions" & held=$!
curl -sN -o "$tmp/dr" --data-binary '{"prompt":"The old prince","max_tokens":24,"ignore_eos":true,"stream":true}' \
  "http://127.0.0.1:$PORT/v1/completions" & c=$!
for _ in $(seq 200); do [ -s "$tmp/dr" ] && [ -s "$tmp/dl" ] && break; sleep 0.02; done
kill -TERM "$dpid"; sleep 0.2
expect "health while draining" 503 "$(http GET /health)"
expect "new work while draining" 503 "$(http POST /v1/completions '{"prompt":"The","max_tokens":2}')"
expect "draining says retry" true "$(hdr x-should-retry)"
wait "$c"
expect "in-flight stream completed" 'data: [DONE]' "$(tail -c 14 "$tmp/dr" | head -c 12)"
if kill -0 "$dpid" 2>/dev/null; then ok; else bad "the server stopped before the long stream ended"; fi
ta=$(date +%s%N); kill "$held"; wait "$held" 2>/dev/null; wait "$dpid"; rc=$?; tb=$(date +%s%N)
expect "drain exit status" 0 "$rc"
if [ $(( (tb - ta) / 1000000 )) -lt 3000 ]; then ok; else bad "exit $(( (tb - ta) / 1000000 )) ms after the last client left"; fi
# past --drain-timeout the stream is cut with an in-band error, and the exit is still 0
start cut -m "$M" --backend cpu --threads 2 --ctx 65536 --drain-timeout 1
cpid=$PID
curl -sN -o "$tmp/dc" --data-binary '{"prompt":"The","max_tokens":60000,"ignore_eos":true,"stream":true}' \
  "http://127.0.0.1:$PORT/v1/completions" & c=$!
for _ in $(seq 100); do [ -s "$tmp/dc" ] && break; sleep 0.02; done
ta=$(date +%s%N); kill -TERM "$cpid"; wait "$cpid"; rc=$?; tb=$(date +%s%N)
wait "$c"
expect "cut drain exit status" 0 "$rc"
if [ $(( (tb - ta) / 1000000 )) -lt 4000 ]; then ok; else bad "drain took $(( (tb - ta) / 1000000 )) ms with --drain-timeout 1"; fi
has "cut stream ends with an error event" "$tmp/dc" 'data: {"error":'

# SIGTERM while the model loads: acted on at once (the load stops at its next step; no
# "ready"), exit 0. The signal goes the moment "listening" is written (stderr is a FIFO
# read here); the load takes a few hundred ms; when it wins the race anyway, say so.
mkfifo "$tmp/early.fifo"
"$zinc" serve --port 0 -m "$M" --backend cpu --threads 2 --parallel 4 2> "$tmp/early.fifo" & ep=$!
exec 3< "$tmp/early.fifo"
IFS= read -r -t 60 line <&3; printf '%s\n' "$line" > "$tmp/early.err"
kill -TERM "$ep"
cat <&3 >> "$tmp/early.err"; exec 3<&-
wait "$ep"; rc=$?
expect "SIGTERM while loading: exit status" 0 "$rc"
if grep -q "while loading: stopping" "$tmp/early.err"; then
  if grep -q "zinc: ready:" "$tmp/early.err"; then bad "SIGTERM while loading: it still became ready: $(cat "$tmp/early.err")"; else ok; fi
  has "SIGTERM while loading: stopped" "$tmp/early.err" "zinc: stopped"
else
  has "load then SIGTERM" "$tmp/early.err" "zinc: ready:"
  skip "SIGTERM while loading" "the load finished before the signal"
fi

# lavapipe (--backend vulkan): a subset. Its engine takes seconds to start (pipelines),
# which shows /health saying 503 while loading.
AUTH=
if ! "$zinc" --list-devices 2>/dev/null | grep -qE '^[* ] [0-9]+: '; then
  skip "serve on vulkan" "no Vulkan device"
else
  "$zinc" serve --port 0 -m "$M" --backend vulkan --parallel 4 --ctx 1024 2> "$tmp/vk.err" & PID=$!; pids+=("$PID")
  PORT=
  for _ in $(seq 400); do
    PORT=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/vk.err" | head -1); [ -n "$PORT" ] && break; sleep 0.02
  done
  loading=$(http GET /health)
  for _ in $(seq 1200); do grep -q "zinc: ready:" "$tmp/vk.err" && break; kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
  if ! grep -q "zinc: ready:" "$tmp/vk.err"; then
    bad "serve --backend vulkan did not start: $(tail -3 "$tmp/vk.err")"
  else
    case "$loading" in
      503) ok ;;
      200) skip "503 while loading" "the engine was ready before the first request" ;;
      *) bad "vulkan: /health while loading: $loading" ;;
    esac
    expect "vulkan: health" 200 "$(http GET /health)"
    body='{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":0'
    expect "vulkan: chat whole" 200 "$(http POST /v1/chat/completions "$body}")"
    jq_ "d['choices'][0]['message']['content']" | head -c -1 > "$tmp/want"
    curl -sN -D "$tmp/sh" -o "$tmp/sb" --data-binary "$body,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
      "http://127.0.0.1:$PORT/v1/chat/completions"
    check "vulkan: SSE framing" python3 "$E2E/sse_check.py" "$tmp/sb" "$tmp/sh" chat usage "$tmp/want"
    # reuse counts (the text may differ in the last bits: Vulkan's prefill kernels depend on the chunk sizes)
    http POST /v1/chat/completions "{\"messages\":$t1,\"max_tokens\":8,\"temperature\":0}" > /dev/null
    reply=$(jq_ "json.dumps(d['choices'][0]['message']['content'])")
    t2="[{\"role\":\"user\",\"content\":\"Tell me about the old prince.\"},{\"role\":\"assistant\",\"content\":$reply},{\"role\":\"user\",\"content\":\"And his son?\"}]"
    expect "vulkan: turn 2" 200 "$(http POST /v1/chat/completions "{\"messages\":$t2,\"max_tokens\":4,\"temperature\":0}")"
    c2=$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")
    if [ "$c2" -ge "$ck" ]; then ok; else bad "vulkan: turn 2 reused $c2 tokens, want >= $ck"; fi
    # 4 concurrent clients, each equal to its run alone, in steps of several sequences (one forward each)
    b0=$(metric zinc_engine_batched_steps_total)
    out=$(node "$E2E/concurrent.mjs" "http://127.0.0.1:$PORT/v1" none "$ID" 4 8 2>&1)
    line=$(printf '%s\n' "$out" | tail -1)
    case "$line" in
      "concurrent: "*" passed, 0 failed") P=$((P + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line"))) ;;
      *) bad "vulkan: 4 concurrent clients: $out" ;;
    esac
    b1=$(metric zinc_engine_batched_steps_total)
    if [ -n "$b0" ] && [ "${b1:-0}" -gt "$b0" ]; then ok; else bad "vulkan: 4 concurrent clients: batched steps $b0 -> $b1"; fi
    # decode steps of the same sequences as the step before resubmit its recording
    r1=$(metric zinc_engine_replayed_steps_total)
    if [ "${r1:-0}" -gt 0 ]; then ok; else bad "vulkan: no engine step replayed ('$r1')"; fi
  fi
fi

# zinc chat: the same server; the URL on stdout (no browser here: --no-browser)
"$zinc" chat --port 0 --no-browser -m "$M" --backend cpu --threads 1 > "$tmp/chat.out" 2> "$tmp/chat.err" & PID=$!; pids+=("$PID")
for _ in $(seq 400); do grep -q "zinc: ready:" "$tmp/chat.err" && break; sleep 0.05; done
url=$(head -1 "$tmp/chat.out")
case "$url" in http://127.0.0.1:*/) ok ;; *) bad "zinc chat printed '$url'" ;; esac
expect "chat UI page" 200 "$(curl -s -o "$tmp/b" -D "$tmp/h" -w '%{http_code}' -H 'Accept-Encoding: gzip, br' "$url")"
expect "UI gzip" gzip "$(hdr content-encoding)"
if gzip -dc < "$tmp/b" | cmp -s - src/server/web/index.html; then ok; else bad "the gzipped page is not index.html"; fi
# a client that takes no gzip gets the file as it is
for ae in '' 'identity' 'gzip;q=0, br'; do
  expect "UI page, Accept-Encoding '$ae'" 200 "$(curl -s -o "$tmp/b" -D "$tmp/h" -w '%{http_code}' ${ae:+-H "Accept-Encoding: $ae"} "${url}app.js")"
  expect "no gzip for '$ae'" "" "$(hdr content-encoding)"
  if cmp -s "$tmp/b" src/server/web/app.js; then ok; else bad "Accept-Encoding '$ae': the body is not app.js"; fi
done
expect "UI varies by encoding" Accept-Encoding "$(hdr vary)"
case "$(hdr content-security-policy)" in *"script-src 'self'"*) ok ;; *) bad "UI without a CSP" ;; esac
expect "UI revalidates" 304 "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $(hdr etag)" "${url}app.js")"

# a KV pool smaller than the slots' contexts (--kv-mem): 4 requests needing ~1,400 positions on a pool of
# 1,024 all finish whole, the newest preempted and recomputed (zinc_kv_preemptions_total); a bad or too small
# size is refused before loading
"$zinc" serve --kv-mem 12 > /dev/null 2> "$tmp/kvbad.err"; expect "--kv-mem 12 refused" 2 $?
"$zinc" serve -m "$M" --port 0 --backend cpu --kv-mem 1M --ctx 2048 > /dev/null 2> "$tmp/kvsmall.err"
expect "--kv-mem under one context fails" 1 $?
has "--kv-mem under one context says so" "$tmp/kvsmall.err" "less than one context of 2048"
AUTH= start kvpool -m "$M" --backend cpu --threads 2 --parallel 4 --ctx 512 --kv-mem 1M
has "the KV pool in the ready lines" "$tmp/kvpool.err" "KV pool: 1.0 MiB, 4 blocks of 256 positions shared by the 4 slots"
words=$(python3 -c "print(' '.join(['the old prince'] * 40))")
for i in 1 2 3 4; do
  curl -s -o "$tmp/kv$i" -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/v1/completions" \
    --data-binary "{\"prompt\": \"$i $words\", \"max_tokens\": 220, \"temperature\": 0, \"ignore_eos\": true}" &
  kvp[$i]=$!
done
for i in 1 2 3 4; do wait "${kvp[$i]}"; done
for i in 1 2 3 4; do
  expect "KV pool request $i: all its tokens" 220 "$(python3 -c "import json; print(json.load(open('$tmp/kv$i'))['usage']['completion_tokens'])" 2>&1)"
done
pre=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -n 's/^zinc_kv_preemptions_total //p')
if [ "${pre:-0}" -gt 0 ]; then ok; else bad "no preemption on a pool too small for 4 requests ($pre)"; fi

# the seed's form: a model and no prompt starts the server
"$zinc" -m "$M" --port 0 --backend cpu 2> "$tmp/seed.err" & p=$!; pids+=("$p")
for _ in $(seq 200); do grep -q "zinc: ready:" "$tmp/seed.err" && break; sleep 0.05; done
has "seed form says so" "$tmp/seed.err" "starting the server"
has "seed form serves" "$tmp/seed.err" "zinc: ready:"
kill -INT "$p"; wait "$p"; expect "seed form exits 0 on SIGINT" 0 $?

# every server still running drains and exits 0 on SIGTERM; no sanitizer report in any log
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || continue
  kill -TERM "$p"; wait "$p"; rc=$?
  [ "$rc" -eq 0 ] || bad "server $p exited $rc on SIGTERM"
done
pids=()
if grep -lE "AddressSanitizer|LeakSanitizer|runtime error" "$tmp"/*.err > "$tmp/san" 2>/dev/null; then
  bad "sanitizer reports: $(cat "$tmp/san" | xargs -n1 basename) $(grep -hE -A5 "AddressSanitizer|LeakSanitizer|runtime error" "$tmp"/*.err | head -30)"
else ok; fi

finish serve
