#!/usr/bin/env bash
# Bad input through the CLI: every case must end with a non-zero exit (or the
# right output) and a message that names the file/option and the problem,
# never a signal, a sanitizer report, a hang or a silently wrong result.
# Fixtures are edited copies of ../shared files made here (build/gguf-edit).
# $1 = build dir.
build=${1:-build}
zinc=$build/zinc
edit=$build/gguf-edit
S_=${ZN_SHARED:-../shared}
V=$S_/tokenizers/ggml-vocab
T=$S_/models/tiny
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export ZINC_HOME=$tmp/home

# run NAME WANT_RC COMMAND...: stdout in $tmp/out, stderr in $tmp/err; fails on
# another exit status, a signal (>= 128), a timeout (124: after $run_limit s, default 60)
# or a sanitizer report
run() {
  local name=$1 want=$2; shift 2
  timeout "${run_limit:-60}" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$name: exit $rc, want $want: $(head -c 300 "$tmp/err")"; return 1; fi
  if grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then bad "$name: sanitizer: $(grep -m1 -E 'Sanitizer|runtime error' "$tmp/err")"; return 1; fi
  ok
}
err_has() { has "$1" "$tmp/err" "$2"; }
out_lacks() { if grep -qiE "$2" "$tmp/out"; then bad "$1: stdout has /$2/: $(head -c 200 "$tmp/out")"; else ok; fi; }

vk_ok=0
$zinc --list-devices 2>/dev/null | grep -qE '^[* ] [0-9]+: ' && vk_ok=1
backends="cpu"; [ $vk_ok = 1 ] && backends="cpu vulkan"
[ $vk_ok = 1 ] || skip vulkan-cases "no Vulkan device: the Vulkan halves of the model cases do not run"

# -- SentencePiece: a lead byte before a space (once a heap overflow), every SPM vocab
n_spm=0
for v in "$V"/*.gguf; do
  $zinc inspect "$v" 2>/dev/null | grep -q 'model *"llama"' || continue
  n_spm=$((n_spm+1))
  for b in c0 df e2 f0 f4 ff; do
    run "spm $(basename "$v") 0x$b" 0 $zinc tokenize -m "$v" "$(printf "\\x$b ")" &&
      { grep -qE '^\[[0-9, ]+\]$' "$tmp/out" && ok || bad "spm $(basename "$v"): output $(cat "$tmp/out")"; }
  done
done
[ $n_spm -ge 2 ] && ok || bad "only $n_spm SPM vocabs found"

# -- non-finite logits: NaN weights are reported, eval never prints bare nan/inf
$edit "$T/qwen3-dense-f32.gguf" "$tmp/nan.gguf" --fill output_norm.weight=nan || bad "gguf-edit nan"
for be in $backends; do
  run "eval nan $be" 1 $zinc eval -m "$tmp/nan.gguf" --tokens 1,2,3 -n 2 --backend $be
  err_has "eval nan $be names the file" "$tmp/nan.gguf"
  err_has "eval nan $be says why" "not finite"
  out_lacks "eval nan $be stdout" 'nan|inf'
  run "generate nan $be" 1 $zinc -m "$tmp/nan.gguf" -p "hi" -n 4 --seed 1 --backend $be
  err_has "generate nan $be" "logits are not finite"
done
# zinc serve on it: the request fails with the reason (whole and streamed), the server stays up
"$zinc" serve -m "$tmp/nan.gguf" --port 0 --backend cpu --threads 1 2>"$tmp/srv.err" & spid=$!
for _ in $(seq 600); do grep -q "zinc: ready:" "$tmp/srv.err" && break; kill -0 $spid 2>/dev/null || break; sleep 0.05; done
port=$(sed -n 's|.*listening on http://[^/]*:\([0-9]*\)/.*|\1|p' "$tmp/srv.err" | head -1)
if grep -q "zinc: ready:" "$tmp/srv.err"; then
  for stream in false true; do
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "{\"prompt\":\"hi\",\"max_tokens\":4,\"stream\":$stream}" "http://127.0.0.1:$port/v1/completions")
    # (a stream may have sent its headers already: then the error is an event)
    [ "$code" = 500 ] || { [ $stream = true ] && [ "$code" = 200 ]; } && ok || bad "serve nan stream=$stream: HTTP $code"
    has "serve nan stream=$stream says why" "$tmp/body" "logits are not finite"
    grep -qiE '"text": *"[^"]' "$tmp/body" && bad "serve nan stream=$stream: text was sent: $(head -c 200 "$tmp/body")" || ok
  done
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
  [ "$code" = 200 ] && ok || bad "serve nan: /health after the failed requests: HTTP $code"
else
  bad "serve nan: the server did not start: $(head -c 300 "$tmp/srv.err")"
fi
kill $spid 2>/dev/null; wait $spid 2>/dev/null
grep -qE 'Sanitizer|runtime error:' "$tmp/srv.err" && bad "serve nan: sanitizer: $(grep -m1 -E 'Sanitizer|runtime error' "$tmp/srv.err")" || ok
# the same file's eval output for a good model is valid JSON
run "eval json" 0 $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens 1,2,3 -n 2 --backend cpu
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" && ok || bad "eval output is not JSON"

# -- hyper-parameters that would make NaN: refused at load, naming the key
for kv in "qwen3.rope.freq_base=0" "qwen3.rope.freq_base=-1" "qwen3.attention.layer_norm_rms_epsilon=-0.00001"; do
  $edit "$T/qwen3-dense-f32.gguf" "$tmp/hp.gguf" --f32 "$kv" || bad "gguf-edit $kv"
  run "hparam ${kv%%=*}" 1 $zinc eval -m "$tmp/hp.gguf" --tokens 1,2 -n 1 --backend cpu
  err_has "hparam $kv named" "${kv%%=*}"
done
# rope sections all zero: refused at load on every backend alike
$edit "$T/qwen35-dense-f32.gguf" "$tmp/sec.gguf" --arr-i32 qwen35.rope.dimension_sections=0,0,0,0 || bad "gguf-edit sections"
for be in $backends; do
  run "sections zero $be" 1 $zinc eval -m "$tmp/sec.gguf" --tokens 1,2 -n 1 --backend $be
  err_has "sections zero $be" "rope.dimension_sections' is all zero"
done
# unusual but valid sections (one section only, the e-section only, uneven): CPU and Vulkan give the same
# logits, much closer to each other than a change of sections moves them (the tiny model's logits move
# little: a few 1e-6), so a backend that ignored or misplaced the sections would fail
if [ $vk_ok = 1 ]; then
  for sec in 5,0,0,0 0,0,0,1 7,3,1,0; do
    $edit "$T/qwen35-dense-f32.gguf" "$tmp/sec-$sec.gguf" --arr-i32 qwen35.rope.dimension_sections=$sec || bad "gguf-edit sections $sec"
    for be in cpu vulkan; do
      run "sections $sec $be" 0 $zinc eval -m "$tmp/sec-$sec.gguf" --tokens 1,2,3,4,5,6,7,8 -n 1 --backend $be
      cp "$tmp/out" "$tmp/sec-$sec.$be.json"
    done
  done
  why=$(python3 - "$tmp" <<'PY'
import json, sys
S = ["5,0,0,0", "0,0,0,1", "7,3,1,0"]
def logits(s, be):
    return [v for row in json.load(open(f"{sys.argv[1]}/sec-{s}.{be}.json"))["prompt_logits"] for v in row]
def diff(a, b):
    return max(abs(p - q) for p, q in zip(a, b)) if len(a) == len(b) and a else float("inf")
moved = min(diff(logits(a, "cpu"), logits(b, "cpu")) for i, a in enumerate(S) for b in S[i + 1:])
for s in S:
    d = diff(logits(s, "cpu"), logits(s, "vulkan"))
    if not d < 0.2 * moved:
        print(f"sections {s}: CPU and Vulkan differ by {d:.3g}; other sections move the logits by {moved:.3g}")
PY
  ) && [ -z "$why" ] && ok || bad "sections agree: ${why:-the comparison failed}"
else
  skip sections-agree "no Vulkan device"
fi

# -- vocabulary size != embedding rows: refused at load with both sizes
$edit "$T/qwen3-dense-f32.gguf" "$tmp/voc.gguf" --vocab 100 || bad "gguf-edit vocab"
run "vocab mismatch" 1 $zinc -m "$tmp/voc.gguf" -p hi -n 2 --backend cpu
err_has "vocab mismatch sizes" "100 tokens"
err_has "vocab mismatch rows" "rows"

# -- general.alignment 1 and 2 (valid GGUF): the same logits as the aligned file
for be in $backends; do
  $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens 1,2,3,4 -n 3 --backend $be >"$tmp/want.json" 2>/dev/null
  for a in 1 2; do
    $edit "$T/qwen3-dense-f32.gguf" "$tmp/a$a.gguf" --align $a || bad "gguf-edit align $a"
    run "align $a $be" 0 $zinc eval -m "$tmp/a$a.gguf" --tokens 1,2,3,4 -n 3 --backend $be
    cmp -s "$tmp/out" "$tmp/want.json" && ok || bad "align $a $be: logits differ from the aligned file"
  done
done

# -- paths that are not regular files: refused at once, never read or waited on
mkfifo "$tmp/fifo"
for cmd in "$zinc -m $tmp/fifo -p hi" "$zinc eval -m $tmp/fifo --tokens 1" "$zinc tokenize -m $tmp/fifo x" \
           "$zinc inspect $tmp/fifo" "$zinc bench -m $tmp/fifo -p 1 -n 1 -r 1" \
           "$zinc tokenize -m $V/ggml-vocab-qwen2.gguf -f $tmp/fifo" "$zinc model use $tmp/fifo"; do
  run "fifo: $cmd" 1 $cmd
  err_has "fifo: $cmd" "not a regular file (a FIFO)"
done
for cmd in "$zinc serve --api-key-file $tmp/fifo" "$zinc serve --chat-template-file $tmp/fifo" \
           "$zinc serve -m $tmp/fifo --port 0" "$zinc chat -m $tmp/fifo --port 0 --no-browser" \
           "$zinc synth --like qwen3-125m --layers 1 -o $tmp/fifo"; do
  run "fifo: $cmd" 1 $cmd
  err_has "fifo: $cmd" "not a regular file (a FIFO)"
done
for cmd in "$zinc -m $tmp -p hi" "$zinc tokenize -m $V/ggml-vocab-qwen2.gguf -f $tmp" \
           "$zinc serve --api-key-file $tmp" "$zinc serve --chat-template-file $tmp" \
           "$zinc synth --like qwen3-125m --layers 1 -o $tmp"; do
  run "directory: $cmd" 1 $cmd
  err_has "directory: $cmd" "not a regular file (a directory)"
done
# files zinc writes in its home: a FIFO where the temporary or partial file goes is refused, not waited on
mkdir -p "$tmp/fh/models"; mkfifo "$tmp/fh/active.tmp" "$tmp/fh/models/demo.gguf.part"
ZINC_HOME=$tmp/fh run "fifo: active.tmp" 1 $zinc model use "$T/qwen3-dense-f32.gguf"
err_has "fifo: active.tmp" "active.tmp: not a regular file (a FIFO)"
out_lacks "fifo: active.tmp claims nothing" "active model"
# (port 1 is closed: the .part is opened before anything is fetched)
ZINC_HOME=$tmp/fh run "fifo: .part" 1 $zinc model pull http://127.0.0.1:1/f/demo.gguf
err_has "fifo: .part" "demo.gguf.part is not a plain file"
# a resumable .part whose record (.part.info) is a FIFO: the record is not trusted, not waited on
rm -f "$tmp/fh/models/demo.gguf.part"; printf 'abc' >"$tmp/fh/models/demo.gguf.part"; mkfifo "$tmp/fh/models/demo.gguf.part.info"
ZINC_HOME=$tmp/fh run "fifo: .part.info" 1 $zinc model pull http://127.0.0.1:1/f/demo.gguf
err_has "fifo: .part.info: starts again" "cannot be resumed"
# the Vulkan pipeline cache is a hint: a FIFO in its place is ignored, the logits are the same
if [ $vk_ok = 1 ]; then
  export XDG_CACHE_HOME=$tmp/cache
  # (both runs compile every pipeline: about a minute on a loaded box under ASan with lavapipe)
  run_limit=300 run "pipeline cache made" 0 $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens 1,2 -n 1 --backend vulkan
  cp "$tmp/out" "$tmp/vk1.json"
  set -- "$tmp"/cache/zinc/pipelines-*.bin
  if [ -f "$1" ]; then
    rm -f "$1"; mkfifo "$1"
    run_limit=300 run "pipeline cache fifo" 0 $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens 1,2 -n 1 --backend vulkan
    cmp -s "$tmp/out" "$tmp/vk1.json" && ok || bad "pipeline cache fifo: other logits"
  else
    bad "pipeline cache: no file under $tmp/cache/zinc"
  fi
  unset XDG_CACHE_HOME
fi
# read errors are errors: a directory as stdin, a missing file
run "tokenize -f - < dir" 1 $zinc tokenize -m "$V/ggml-vocab-qwen2.gguf" -f - <"$tmp"
err_has "tokenize -f - < dir" "standard input: read error"
out_lacks "tokenize -f - < dir prints nothing" '\['
run "tokenize -f missing" 1 $zinc tokenize -m "$V/ggml-vocab-qwen2.gguf" -f "$tmp/missing.txt"
err_has "tokenize -f missing" "$tmp/missing.txt"

# -- inspect: names with control characters are escaped in text output
$edit "$T/qwen3-dense-f32.gguf" "$tmp/esc.gguf" --str "$(printf 'evil\033[2J\nkey')=v" || bad "gguf-edit esc"
run "inspect esc" 0 $zinc inspect "$tmp/esc.gguf"
grep -q $'\033' "$tmp/out" && bad "inspect: a raw ESC byte in the output" || ok
has "inspect esc shown" "$tmp/out" 'evil\x1b[2J\nkey'

# -- messages that say what is wrong
run "unknown command" 2 $zinc frobnicate
err_has "unknown command" "unknown command 'frobnicate'"
err_has "unknown command lists commands" "tokenize"
for cmd in "$zinc --frobnicate" "$zinc -p hi --frobnicate" "$zinc eval --frobnicate" "$zinc bench --frobnicate" \
           "$zinc tokenize -m x --frobnicate" "$zinc serve --frobnicate"; do
  run "unknown option: $cmd" 2 $cmd
  err_has "unknown option: $cmd" "unknown option '--frobnicate'"
done
for cmd in "$zinc -p" "$zinc eval -n" "$zinc serve --port"; do
  run "missing value: $cmd" 2 $cmd
  err_has "missing value: $cmd" "${cmd##* } needs a value"
done
printf '' >"$tmp/empty.key"
run "serve empty key file" 1 $zinc serve --api-key-file "$tmp/empty.key"
err_has "serve empty key file" "empty first line"
printf 'a\0b' >"$tmp/nul.jinja"
run "serve template with NUL" 1 $zinc serve --chat-template-file "$tmp/nul.jinja"
err_has "serve template with NUL" "NUL byte"
toks=$(seq -s, 1 5000)
run "eval too many tokens" 2 $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens "$toks"
err_has "eval too many tokens" "at most"
err_has "eval too many tokens names the count" "5000"
run "eval bad id" 2 $zinc eval -m "$T/qwen3-dense-f32.gguf" --tokens 1,x
err_has "eval bad id" "'x'"
head -c $((17 << 20)) /dev/zero | tr '\0' 'a' >"$tmp/long.txt"; echo >>"$tmp/long.txt"
run "chat line too long" 1 $zinc -m "$T/qwen3-dense-f32.gguf" -i --backend cpu <"$tmp/long.txt"
err_has "chat line too long" "line of more than"
# model use on a home that cannot be written: no "active model" claim, the path and the reason
# (a home below a regular file fails for root too; a read-only one only for others)
: >"$tmp/plain"
ZINC_HOME=$tmp/plain/home run "model use unwritable" 1 $zinc model use "$T/qwen3-dense-f32.gguf"
out_lacks "model use unwritable claims nothing" "active model"
err_has "model use unwritable names the path" "$tmp/plain"
err_has "model use unwritable says why" "Not a directory"
mkdir -p "$tmp/ro"; chmod 555 "$tmp/ro"
# root writes into it anyway: then the case runs as nobody (setpriv), with $tmp traversable meanwhile
as=()
if [ -w "$tmp/ro" ] && command -v setpriv >/dev/null; then
  chmod 711 "$tmp"
  nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  "${nobody[@]}" test -x "$zinc" -a -r "$T/qwen3-dense-f32.gguf" -a ! -w "$tmp/ro" 2>/dev/null && as=("${nobody[@]}")
fi
if [ -w "$tmp/ro" ] && [ ${#as[@]} = 0 ]; then skip model-use-ro "running as root, cannot run as nobody: a read-only directory is writable"
else
  ZINC_HOME=$tmp/ro run "model use ro" 1 "${as[@]}" $zinc model use "$T/qwen3-dense-f32.gguf"
  out_lacks "model use ro claims nothing" "active model"
  err_has "model use ro names the path" "$tmp/ro"
  err_has "model use ro says why" "ermission denied"
fi
chmod 755 "$tmp/ro"; chmod 700 "$tmp"

finish bad_input
