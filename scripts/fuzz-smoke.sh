#!/usr/bin/env bash
# Fuzz smoke run (libFuzzer + ASan + UBSan) of every fuzz target, one after
# the other: gguf (the GGUF reader), model (loading + graph), tokenizer (every
# vocab kind), jinja (templates + contexts), sampler (logits + parameters),
# request (the server's request bodies).
# Input layouts: fuzz/fuzz.h; seeds: build/make_seeds, written into a
# temporary directory from ../shared (never committed), plus the regression
# inputs in fuzz/regress/TARGET/, which are replayed first: a regression fails
# the target.
#
# Environment:
#   FUZZ_TIME       seconds of fuzzing in all, split evenly (default 225)
#   FUZZ_TIME_PER   seconds per target (overrides the split)
#   FUZZ_TARGETS    which targets, in order (default: all six)
#   ZN_SHARED       the shared fixtures (default ../shared)
# Per target it prints seeds, execs and execs/s and PASS/FAIL; a crash,
# sanitizer report, timeout (10 s per input) or out-of-memory fails it, and
# the input is kept in build/fuzz-crashes/TARGET/ (reproduce: build/fuzz_TARGET
# FILE; keep it as fuzz/regress/TARGET/NAME once fixed).
# Last line: "fuzz: N passed, N failed" (one per target).
set -uo pipefail
cd "$(dirname "$0")/.."
targets=(${FUZZ_TARGETS:-gguf model tokenizer jinja sampler request})
total=${FUZZ_TIME:-225}
per=${FUZZ_TIME_PER:-$(( total / ${#targets[@]} ))}
[ "$per" -ge 1 ] || per=1
shared=${ZN_SHARED:-../shared}
fail_all() { echo "fuzz-smoke: $*" >&2; echo "fuzz: 0 passed, ${#targets[@]} failed"; exit 1; }

make -s -j"$(nproc)" fuzz || fail_all "cannot build the fuzz targets"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-fuzz.XXXXXX") || fail_all "mktemp"
trap 'rm -rf "$tmp"' EXIT

max_len_of() {
  case $1 in gguf|model) echo 65536;; tokenizer) echo 4096;; jinja) echo 32768;; sampler) echo 16384;; request) echo 8192;; esac
}

seeds() { # target dir
  local t=$1 d=$2
  case $t in
    gguf) mapfile -t f < <(find "$shared/models" "$shared/tokenizers/ggml-vocab" -name '*.gguf' 2>/dev/null | sort) ;;
    model) mapfile -t f < <(find "$shared/models" -name '*.gguf' 2>/dev/null | sort) ;;
    tokenizer) f=("$shared") ;;
    jinja) mapfile -t f < <({ ls tests/templates/*.jinja tests/templates/cases.tsv;
                              find "$shared/tokenizers/ggml-vocab" "$shared/models" -name '*.gguf'; } 2>/dev/null | sort) ;;
    sampler) mapfile -t f < <(find "$shared/models" -name '*.golden.json' 2>/dev/null | sort) ;;
    request) # request bodies of the server's endpoints (src/server/oai.c, oai_responses.c, anthropic.c), every field once
      local i=0 b
      for b in '{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}' \
        '{"messages":[{"role":"developer","content":"x"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"reasoning_content":"r","tool_calls":[]},{"role":"tool","content":"t","tool_call_id":"c1","name":"f"}],"stream":true,"stream_options":{"include_usage":true}}' \
        '{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"presence_penalty":0.1,"frequency_penalty":0.2,"repetition_penalty":1.1,"seed":42,"stop":["a","bc"],"n":1,"logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":false,"x":1},"cache_prompt":false,"ignore_eos":true}' \
        '{"prompt":"Once upon a time","max_tokens":16,"logprobs":2,"stop":"\n","echo":false}' \
        '{"prompt":[1,2,3,4093]}' '{"prompt":[[5,6]]}' '{"prompt":["one"]}' \
        '{"content":"Hello world","add_special":true}' '{"tokens":[1,2,3]}' \
        '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}' \
        '{"messages":[],"n":2}' '[1]' '{"stop":"'"$(printf 'a%.0s' $(seq 300))"'"}' \
        '{"instructions":"B","input":[{"role":"developer","content":"d"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"g","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"s"}],"tools":[{"type":"function","name":"g","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"g"},"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"},"strict":true}},"max_output_tokens":5}' \
        '{"input":"Hi","stream":true,"temperature":0.5,"top_p":0.9,"parallel_tool_calls":false,"reasoning":{"effort":"low"},"store":false}' \
        '{"model":"m","max_tokens":9,"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":"w"},{"role":"assistant","content":[{"type":"thinking","thinking":"h"},{"type":"text","text":"C"},{"type":"tool_use","id":"t","name":"g","input":{"c":"P"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"s"}],"is_error":true},{"type":"text","text":"t"}]}],"tools":[{"name":"g","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"stop_sequences":["E"],"temperature":0.2,"top_k":7,"thinking":{"type":"enabled"}}' \
        '{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}],"stream":true}' \
        '{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"minimal","thinking_budget_tokens":12,"chat_template_kwargs":{"enable_thinking":true}}' \
        '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"w"}],"thinking":{"type":"enabled","budget_tokens":5}}'; do
        printf '%s' "$b" > "$d/seed$i.json"; i=$((i + 1))
      done
      return 0 ;;
  esac
  build/make_seeds "$t" "$d" "${f[@]}" >/dev/null
}

P=0; F=0
echo "fuzz-smoke: ${#targets[@]} targets, ${per}s each, shared fixtures in $shared"
for t in "${targets[@]}"; do
  corpus=$tmp/corpus-$t art=$tmp/artifacts-$t log=$tmp/log-$t
  mkdir -p "$corpus" "$art"
  if ! seeds "$t" "$corpus"; then
    echo "fuzz-smoke: $t: cannot make the seed corpus" >&2; echo "failed: fuzz_$t: cannot make the seed corpus"; F=$((F+1)); continue
  fi
  n_seeds=$(ls "$corpus" | wc -l)
  dirs=("$corpus")
  n_reg=0
  if [ -d "fuzz/regress/$t" ]; then dirs+=("fuzz/regress/$t"); n_reg=$(ls "fuzz/regress/$t" | wc -l); fi
  dict=(); [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  start=$(date +%s)
  build/fuzz_"$t" "${dirs[@]}" "${dict[@]}" -max_total_time="$per" -max_len="$(max_len_of "$t")" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$art/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(grep -E '^stat::number_of_executed_units' "$log" | grep -oE '[0-9]+' | tail -1)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  rate=$(( ${runs:-0} / (secs > 0 ? secs : 1) ))
  if [ "$rc" -eq 0 ]; then
    echo "fuzz-smoke: $t: $n_seeds seeds + $n_reg regression inputs, ${runs:-?} execs in ${secs}s ($rate/s) PASS"
    P=$((P+1))
  else
    echo "fuzz-smoke: $t: $n_seeds seeds + $n_reg regression inputs, ${runs:-?} execs in ${secs}s ($rate/s) FAIL (exit $rc)"
    # the report (sanitizer, libFuzzer or the target's own check), then where the input went
    grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)|NEW_FUNC|^INFO:|^fuzz_tokenizer: .*: (spm|bpe|wpm|test),' "$log" |
      sed -n '/ERROR\|runtime error\|^fuzz_[a-z]*: /,$p' | grep -vE '^ +0x|^  [A-Z][a-z].*: +[0-9a-f]+| in fuzzer::|__libc_start|in _start |in main .*fuzz_' | head -40 >&2
    mkdir -p "build/fuzz-crashes/$t" && cp "$art"/* "build/fuzz-crashes/$t/" 2>/dev/null
    echo "fuzz-smoke: $t: failing input kept in build/fuzz-crashes/$t/ (reproduce: build/fuzz_$t FILE)" >&2
    # one line for check.sh's summary of failures
    why=$(grep -vE ': (spm|bpe|wpm|test), ' "$log" | grep -m1 -E 'ERROR: |runtime error|^fuzz_[a-z]+: ' | sed 's/^==[0-9]*== *//; s/ on address.*//; s/ at pc .*//')
    echo "failed: fuzz_$t: ${why:-exit $rc} (input in build/fuzz-crashes/$t/)"
    F=$((F+1))
  fi
done
echo "fuzz: $P passed, $F failed"
[ "$F" -eq 0 ]
