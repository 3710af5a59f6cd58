#!/usr/bin/env bash
# End-to-end checks of `zinc -m MODEL -p PROMPT` (cli_generate.c) on the tiny
# random Llama with the real Llama 2 vocabulary. $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
M=${ZN_SHARED:-../shared}/models/llama-2-tiny-random.gguf
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# the same seed gives the same text; another seed another text
$zinc -m "$M" -p "Once upon a time" -n 24 --seed 42 --temp 0.8 > "$tmp/a1" 2> "$tmp/e1"; expect "rc" 0 $?
$zinc -m "$M" -p "Once upon a time" -n 24 --seed 42 --temp 0.8 > "$tmp/a2" 2>/dev/null
$zinc -m "$M" -p "Once upon a time" -n 24 --seed 43 --temp 0.8 > "$tmp/b" 2>/dev/null
if cmp -s "$tmp/a1" "$tmp/a2" && [ -s "$tmp/a1" ]; then ok; else bad "same seed, different text"; fi
if ! cmp -s "$tmp/a1" "$tmp/b"; then ok; else bad "seeds 42 and 43 gave the same text"; fi
has "loaded" "$tmp/e1" "zinc: loaded $M (llama"
has "prompt stats" "$tmp/e1" "zinc: prompt: 5 tokens (5 new) in "
has "decode stats" "$tmp/e1" "zinc: generated: 24 tokens in "
has "tok/s" "$tmp/e1" "tok/s"
has "stop reason" "$tmp/e1" "zinc: stop: length"

# a quantized KV cache is named on the load line; a model whose heads the
# format cannot take is refused, naming the file and its head dims
D=$(dirname "$0")/../models/zinc-demo-qwen35.gguf
$zinc -m "$D" -p "Hello" -n 2 --kv-type q3_0r --seed 1 > /dev/null 2> "$tmp/e5"; expect "kv rc" 0 $?
has "kv on the load line" "$tmp/e5" ", KV cache q3_0r"
$zinc -m "$M" -p "Hello" -n 2 --kv-type q4_0r > /dev/null 2> "$tmp/e6"; expect "kv refused rc" 1 $?
has "kv refusal" "$tmp/e6" "--kv-type q4_0r rotates each head and needs head dims that are powers of two from 32 to 512; this model's are 4 (keys) and 4 (values)"

# --temp 0 is greedy: the same tokens `zinc eval` picks, as text
ids=$($zinc tokenize -m "$M" "Hello world" | tr -d '[] ')
greedy=$($zinc eval -m "$M" --tokens "$ids" -n 12 | sed -E 's/.*"greedy": \[([^]]*)\].*/\1/' | tr -d ' ')
want=$($zinc detokenize -m "$M" --no-special "$ids,$greedy")
got=$($zinc -m "$M" -p "Hello world" -n 12 --temp 0 --seed 7 2>/dev/null)
expect "greedy = eval's greedy" "${want# }" "Hello world$got"  # decoding after BOS keeps SentencePiece's space

# a full context stops generation
$zinc -m "$M" -p "Hello" --ctx 8 -n 100 --seed 1 > /dev/null 2> "$tmp/e2"; expect "ctx rc" 0 $?
has "ctx stop" "$tmp/e2" "zinc: stop: ctx"
has "ctx count" "$tmp/e2" "zinc: generated: 6 tokens"

# chat: this model has no template, so ChatML, said once
$zinc -m "$M" -p "Hi" --chat --system "Be brief." -n 4 --seed 1 > "$tmp/c" 2> "$tmp/e3"; expect "chat rc" 0 $?
has "fallback notice" "$tmp/e3" "no chat template; using ChatML"
# <|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n, plain text in this vocab
printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' > "$tmp/chatml"
n_chat=$($zinc tokenize -m "$M" -f "$tmp/chatml" | tr -cd ',' | wc -c)
has "chat prompt is the ChatML render" "$tmp/e3" "zinc: prompt: $((n_chat + 1)) tokens"

# interactive: one turn per stdin line; the second turn reuses the first's tokens
printf 'hello\nand again\n' | $zinc -m "$M" -i -n 5 --seed 2 > "$tmp/i" 2> "$tmp/e4"; expect "interactive rc" 0 $?
expect "two replies" 2 "$(grep -c 'zinc: generated: 5 tokens' "$tmp/e4")"
expect "one notice" 1 "$(grep -c 'using ChatML' "$tmp/e4")"
second=$(grep 'zinc: prompt:' "$tmp/e4" | sed -n 2p)
case "$second" in *" new)"*) n_all=$(sed -E 's/.*prompt: ([0-9]+) tokens \(([0-9]+) new\).*/\1 \2/' <<<"$second")
  set -- $n_all; if [ "$2" -lt "$1" ]; then ok; else bad "second turn re-evaluated everything: $second"; fi ;;
  *) bad "second prompt line: '$second'" ;; esac

# help lists every option with its default
$zinc --help-generate > "$tmp/h"; expect "help rc" 0 $?
for opt in -m -p -n --chat -i --system --think --temp --top-k --top-p --min-p --repeat-penalty --seed --threads --ctx --backend; do
  grep -qE -- "^  (-[a-z], )?$opt( |,)" "$tmp/h" && ok || bad "help lacks $opt"
done
has "help defaults" "$tmp/h" "(default 0.8)"
has "help ctx default" "$tmp/h" "(default 4096)"
expect "help via -h" "$(cat "$tmp/h")" "$($zinc -m x -h)"

# usage errors exit 2, run-time errors 1 with a message
expect "no args" 2 "$(rc_of $zinc)"
# without -m zinc runs the active or the shipped demo model (test_catalog.sh);
# a binary with neither beside it runs the copy built into it
mkdir -p "$tmp/bin" && cp "$zinc" "$tmp/bin/zinc"
expect "no model beside the binary: the built-in demo model" 0 "$(rc_of env ZINC_HOME="$tmp/nohome" "$tmp/bin/zinc" -p hi -n 2)"
# (a model and no prompt starts the server: test_serve.sh)
expect "no prompt" 2 "$(rc_of $zinc --temp 0.5)"
expect "unknown option" 2 "$(rc_of $zinc -m "$M" -p hi --bogus)"
expect "bad temp" 2 "$(rc_of $zinc -m "$M" -p hi --temp x)"
expect "bad top-p" 2 "$(rc_of $zinc -m "$M" -p hi --top-p 2)"
expect "missing file" 1 "$(rc_of $zinc -m /nonexistent.gguf -p hi)"
msg=$($zinc -m /nonexistent.gguf -p hi 2>&1)
case "$msg" in *nonexistent.gguf*) ok ;; *) bad "error names the file: '$msg'" ;; esac
msg=$($zinc -m "$M" -p "a long prompt that cannot fit" --ctx 4 --seed 1 2>&1); expect "too long rc" 1 $?
case "$msg" in *"does not fit the context"*) ok ;; *) bad "too-long prompt message: '$msg'" ;; esac
# an unknown backend is a bad option value: exit 2 (as --device and --tune), named with the choices
msg=$($zinc -m "$M" -p hi --backend nope --seed 1 2>&1); expect "bad backend" 2 $?
case "$msg" in *"unknown backend 'nope' (available: cpu, vulkan)"*) ok ;; *) bad "bad backend message: '$msg'" ;; esac

finish generate
