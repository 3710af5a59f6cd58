#!/usr/bin/env bash
# End-to-end: the prefix cache across slots (scheduler.c slot_borrow). A
# request whose prompt shares a long prefix with what a busy slot holds is
# admitted to a free slot, which takes that prefix from the busy one instead
# of computing it: the KV on a dense model (the tiny qwen3 fixture), the
# donor's recurrent-state checkpoint on a hybrid one (the demo model). Each
# answer at temperature 0 must equal a cold run on a fresh server, and the
# /metrics counters must grow by the prefix's length. $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
DENSE=../shared/models/tiny/qwen3-dense-f32.gguf
HYBRID=models/zinc-demo-qwen35.gguf
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
  if grep -q "zinc: ready:" "$tmp/$name.err"; then ok; else bad "server $name did not start: $(tail -3 "$tmp/$name.err")"; fi
}
stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
# post BODY: POST /v1/completions; prints the status, the body in $tmp/b
post() { curl -s -o "$tmp/b" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$1" "http://127.0.0.1:$PORT/v1/completions"; }
jq_() { python3 -c "import json,sys; d=json.load(open('$tmp/b')); print($1)"; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | sed -n "s/^zinc_prefix_cache_$1_total //p"; }
# waits until a slot generates (its prompt evaluated, its checkpoint saved; lavapipe: 20 s for 700 tokens)
until_generating() {
  for _ in $(seq 1200); do
    curl -s "http://127.0.0.1:$PORT/slots" > "$tmp/s"
    python3 -c "import json,sys; sys.exit(0 if any(s['state'] == 'generating' and s['n_decoded'] > 0 for s in json.load(open('$tmp/s'))) else 1)" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
# a long stream of PROMPT (a JSON prompt) that holds a slot until killed: sets HOLD
hold() {
  curl -sN -o /dev/null -H 'Content-Type: application/json' \
    --data-binary "{\"prompt\":$1,\"max_tokens\":60000,\"ignore_eos\":true,\"stream\":true}" \
    "http://127.0.0.1:$PORT/v1/completions" & HOLD=$!
  until_generating || bad "$2: the long stream did not start"
}
unhold() { kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; }
gen() { echo "{\"prompt\":$1,\"max_tokens\":${3:-16},\"temperature\":0,\"ignore_eos\":true${2:+,$2}}"; }

# dense: SYS is a long shared "system prompt" (token ids: the fixture's vocab has 128), A and D two
# requests after it. cases: backend name
dense_case() {
  local be=$1 n=dense-$1
  local sys a d
  sys=$(python3 -c "print(','.join(str((i * 37 + 11) % 100 + 20) for i in range(120)))")
  a="[$sys,5,6,7,8]"; d="[$sys,9,10,11]"
  start "$n-cold" -m "$DENSE" --backend "$be" --threads 2 --parallel 1 --ctx 8192
  expect "$n: cold" 200 "$(post "$(gen "$d" '"cache_prompt":false')")"
  local want; want=$(jq_ "json.dumps(d['choices'][0]['text'])")
  expect "$n: cold computes all" 0 "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")"
  stop
  start "$n" -m "$DENSE" --backend "$be" --threads 2 --parallel 2 --ctx 8192
  hold "$a" "$n"
  expect "$n: the first request misses" "0 1" "$(metric hits) $(metric misses)"
  local h0 r0 c0; h0=$(metric hits); r0=$(metric reused_tokens); c0=$(metric copied_tokens)
  # slot 0 is busy with A: D goes to slot 1 and copies SYS's KV from slot 0
  expect "$n: shared prefix" 200 "$(post "$(gen "$d")")"
  expect "$n: same tokens as cold" "$want" "$(jq_ "json.dumps(d['choices'][0]['text'])")"
  expect "$n: cached_tokens" 120 "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")"
  expect "$n: hits" $((h0 + 1)) "$(metric hits)"
  expect "$n: reused tokens" $((r0 + 120)) "$(metric reused_tokens)"
  expect "$n: copied tokens" $((c0 + 120)) "$(metric copied_tokens)"
  # D again: slot 1 holds all of it (affinity), nothing to copy; all but the last token reused
  r0=$(metric reused_tokens); c0=$(metric copied_tokens)
  expect "$n: same prompt again" 200 "$(post "$(gen "$d")")"
  expect "$n: again same tokens" "$want" "$(jq_ "json.dumps(d['choices'][0]['text'])")"
  expect "$n: again reused" "$((r0 + 122)) $c0" "$(metric reused_tokens) $(metric copied_tokens)"
  unhold
  stop
}

# hybrid: only a donor's checkpoint can be taken. A completion's checkpoint sits before its
# last prompt token (server_gen.c), so the same prompt P while P holds slot 0 takes it; X,
# which shares most of P but not the checkpoint, must compute its prompt.
hybrid_case() {
  local n=hybrid
  local p='"The old prince lived in a house by the sea, and every morning he walked along the shore to look for ships"'
  local x='"The old prince lived in a house by the sea, and every morning he walked along the shore with his dog"'
  start "$n-cold" -m "$HYBRID" --backend cpu --threads 2 --parallel 1 --ctx 2048
  expect "$n: cold P" 200 "$(post "$(gen "$p" '"cache_prompt":false' 12)")"
  local want_p; want_p=$(jq_ "json.dumps(d['choices'][0]['text'])")
  expect "$n: cold X" 200 "$(post "$(gen "$x" '"cache_prompt":false' 12)")"
  local want_x; want_x=$(jq_ "json.dumps(d['choices'][0]['text'])")
  stop
  start "$n" -m "$HYBRID" --backend cpu --threads 2 --parallel 2 --ctx 2048
  hold "$p" "$n"
  local c0; c0=$(metric copied_tokens)
  expect "$n: X" 200 "$(post "$(gen "$x" "" 12)")"
  expect "$n: X same tokens as cold" "$want_x" "$(jq_ "json.dumps(d['choices'][0]['text'])")"
  expect "$n: X cannot take a state" "0 $c0" "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']") $(metric copied_tokens)"
  local r0; r0=$(metric reused_tokens)
  expect "$n: P" 200 "$(post "$(gen "$p" "" 12)")"
  expect "$n: P same tokens as cold" "$want_p" "$(jq_ "json.dumps(d['choices'][0]['text'])")"
  local np; np=$(jq_ "d['usage']['prompt_tokens']")
  expect "$n: P takes the checkpoint" "$((np - 1)) $((np - 1)) $((c0 + np - 1))" \
    "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']") $(($(metric reused_tokens) - r0)) $(metric copied_tokens)"
  unhold
  stop
}

# hybrid, chat: two conversations with the same system prompt and different user messages.
# While A holds slot 0, B goes to slot 1 and takes the state at the end of the system
# message from slot 0's checkpoint there (server_gen.c chat_prompt's ckpt_at[0]).
chat() { curl -s -o "$tmp/b" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$1" "http://127.0.0.1:$PORT/v1/chat/completions"; }
hybrid_chat_case() {
  local be=$1 n=hybrid-chat-$1
  local sys='You are a patient assistant who answers questions about old castles, ships and the sea in short sentences.'
  local ma="[{\"role\":\"system\",\"content\":\"$sys\"},{\"role\":\"user\",\"content\":\"Who lived in the tower?\"}]"
  local mb="[{\"role\":\"system\",\"content\":\"$sys\"},{\"role\":\"user\",\"content\":\"Name a ship.\"}]"
  local gb="{\"messages\":$mb,\"max_tokens\":12,\"temperature\":0,\"ignore_eos\":true"
  start "$n-cold" -m "$HYBRID" --backend "$be" --threads 2 --parallel 1 --ctx 2048
  expect "$n: cold B" 200 "$(chat "$gb,\"cache_prompt\":false}")"
  local want; want=$(jq_ "json.dumps(d['choices'][0]['message']['content'])")
  stop
  start "$n" -m "$HYBRID" --backend "$be" --threads 2 --parallel 2 --ctx 2048
  curl -s -o "$tmp/b" -H 'Content-Type: application/json' --data-binary \
    "{\"content\":\"<|im_start|>system\\n$sys<|im_end|>\\n\"}" "http://127.0.0.1:$PORT/tokenize"
  local ns; ns=$(jq_ "len(d['tokens'])")
  curl -sN -o /dev/null -H 'Content-Type: application/json' \
    --data-binary "{\"messages\":$ma,\"max_tokens\":60000,\"ignore_eos\":true,\"stream\":true}" \
    "http://127.0.0.1:$PORT/v1/chat/completions" & HOLD=$!
  until_generating || bad "$n: the long stream did not start"
  local r0 c0; r0=$(metric reused_tokens); c0=$(metric copied_tokens)
  expect "$n: B" 200 "$(chat "$gb}")"
  expect "$n: B same tokens as cold" "$want" "$(jq_ "json.dumps(d['choices'][0]['message']['content'])")"
  expect "$n: B takes the system prompt's checkpoint" "$ns $ns $ns" \
    "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']") $(($(metric reused_tokens) - r0)) $(($(metric copied_tokens) - c0))"
  if [ "$ns" -gt 20 ]; then ok; else bad "$n: the system prompt has $ns tokens"; fi
  unhold
  # B again on its own slot: all of its conversation but the generation prompt (its end checkpoint)
  r0=$(metric reused_tokens)
  expect "$n: B again" 200 "$(chat "$gb}")"
  expect "$n: B again same tokens" "$want" "$(jq_ "json.dumps(d['choices'][0]['message']['content'])")"
  local got; got=$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']")
  if [ "$got" -gt "$ns" ]; then ok; else bad "$n: B again reused $got tokens, want > $ns"; fi
  stop
}

# hybrid, raw completions: a prompt has no message boundary, so all B can resume from is a
# block checkpoint of A (scheduler.c, ZN_SRV_CKPT_BLOCK): the deepest block at or below their
# common prefix, more than two blocks here. With a long tail (CPU: lavapipe takes ~20 s per
# 700 tokens) A runs 5+ blocks past the common part, so the block B needs survives only by the
# ladder policy (the deepest few would not hold it). B after A on one slot: its chunks after
# the block are the cold run's and nothing else runs, so its tokens and logprobs must be the
# cold run's to the bit. Then B while C (A's prefix, a short tail) holds slot 0: slot 1 copies
# slot 0's block checkpoint (slot_borrow). cases: backend, shared words, A's tail in blocks
# (0: a short one).
hybrid_block_case() {
  local be=$1 n=hybrid-blocks-$1 tail_blocks=$3
  python3 - "$tmp" "$2" "$tail_blocks" <<'PY'
import sys
W = ("the old prince looked at his son and said that the river was high this year and the roads were long "
     "but the horses were strong and the people of the town would wait for them at the gate until the evening").split()
def words(n, k=1): return " ".join(W[(i * k) % len(W)] for i in range(n))
shared = words(int(sys.argv[2])) + "\n"
a_tail = words(260 * int(sys.argv[3]) or 30, 7)
for name, p in (("a", shared + "Question one: " + a_tail), ("b", shared + "Another question: " + words(20, 3)),
                ("c", shared + "Question one: " + words(30, 7))):
    open(f"{sys.argv[1]}/{name}.txt", "w").write(p)
PY
  local f
  for f in a b; do "$zinc" tokenize -m "$HYBRID" -f "$tmp/$f.txt" > "$tmp/$f.ids"; done
  local na nb blk
  read -r na nb blk <<<"$(python3 -c "
import json; a = json.load(open('$tmp/a.ids')); b = json.load(open('$tmp/b.ids'))
p = 0
while p < min(len(a), len(b)) and a[p] == b[p]: p += 1
print(len(a), len(b), p // 256 * 256)")"
  if [ "$blk" -ge 512 ] && [ $((na - blk)) -ge $((tail_blocks * 256)) ] && [ "$blk" -lt "$nb" ]; then ok
  else bad "$n: the prompts: $na and $nb tokens, common prefix's block $blk"; fi
  pj() { python3 -c "import json; print(json.dumps(open('$tmp/$1.txt').read()))"; }
  local out="json.dumps([d['choices'][0]['text'], d['choices'][0]['logprobs']], sort_keys=True)"
  start "$n-cold" -m "$HYBRID" --backend "$be" --threads 2 --parallel 1 --ctx 2048
  expect "$n: cold B" 200 "$(post "$(gen "$(pj b)" '"cache_prompt":false,"logprobs":2')")"
  local want; want=$(jq_ "$out")
  expect "$n: cold B's prompt" "$nb 0" "$(jq_ "d['usage']['prompt_tokens'], d['usage']['prompt_tokens_details']['cached_tokens']" | tr -d '(),')"
  stop
  start "$n" -m "$HYBRID" --backend "$be" --threads 2 --parallel 1 --ctx 2048
  expect "$n: A" 200 "$(post "$(gen "$(pj a)" "" 4)")"
  expect "$n: A misses" "0 1" "$(metric hits) $(metric misses)"
  local r0; r0=$(metric reused_tokens)
  expect "$n: B" 200 "$(post "$(gen "$(pj b)" '"logprobs":2')")"
  expect "$n: B resumes at the block below the common prefix" "$blk $blk 1" \
    "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']") $(($(metric reused_tokens) - r0)) $(metric hits)"
  expect "$n: B same tokens and logprobs as cold" "$want" "$(jq_ "$out")"
  stop
  # a long context: the demo model decodes C fast on the CPU, and C must still run when B comes
  start "$n-borrow" -m "$HYBRID" --backend "$be" --threads 2 --parallel 2 --ctx 16384
  hold "$(pj c)" "$n"
  local c0; c0=$(metric copied_tokens); r0=$(metric reused_tokens)
  expect "$n: B beside C" 200 "$(post "$(gen "$(pj b)" '"logprobs":2')")"
  expect "$n: B takes C's block checkpoint" "$blk $blk $blk" \
    "$(jq_ "d['usage']['prompt_tokens_details']['cached_tokens']") $(($(metric reused_tokens) - r0)) $(($(metric copied_tokens) - c0))"
  expect "$n: B beside C same text as cold" "$(python3 -c "import json,sys; print(json.dumps(json.loads(sys.argv[1])[0]))" "$want")" \
    "$(jq_ "json.dumps(d['choices'][0]['text'])")"
  unhold
  stop
}

if [ -f "$DENSE" ]; then dense_case cpu; else skip "prefix cache (dense)" "no $DENSE"; fi
hybrid_case
hybrid_chat_case cpu
hybrid_block_case cpu 600 5
if ! "$zinc" --list-devices 2>/dev/null | grep -qE '^[* ] [0-9]+: '; then
  skip "prefix cache on vulkan" "no Vulkan device"
else
  if [ -f "$DENSE" ]; then dense_case vulkan; fi
  hybrid_chat_case vulkan
  hybrid_block_case vulkan 500 0
fi
finish test_prefix
