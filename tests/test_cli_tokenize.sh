#!/usr/bin/env bash
# End-to-end checks of `zinc tokenize` / `zinc detokenize`. $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
V=${ZN_SHARED:-../shared}/tokenizers/ggml-vocab
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

expect "spm with BOS" "[1, 15043, 3186]" "$($zinc tokenize -m "$V/ggml-vocab-llama-spm.gguf" "Hello world")"
expect "spm --no-bos" "[15043, 3186]" "$($zinc tokenize -m "$V/ggml-vocab-llama-spm.gguf" --no-bos "Hello world")"
expect "qwen2 special" "[151644, 13048, 151645]" \
  "$($zinc tokenize -m "$V/ggml-vocab-qwen2.gguf" "<|im_start|>Hi<|im_end|>")"
out=$($zinc tokenize -m "$V/ggml-vocab-qwen2.gguf" --no-special "<|im_start|>Hi")
case "$out" in "[27, "*) ok ;; *) bad "qwen2 --no-special: '$out'" ;; esac
expect "detokenize special" "<|im_start|>Hi<|im_end|>" \
  "$($zinc detokenize -m "$V/ggml-vocab-qwen2.gguf" 151644,13048,151645)"
expect "detokenize --no-special" "Hi" \
  "$($zinc detokenize -m "$V/ggml-vocab-qwen2.gguf" --no-special '[151644, 13048, 151645]')"

# round trip through both commands, text from a file (newlines, tabs, emoji, accents)
printf 'Grüße, 世界!\n\tline two 🦙... done' > "$tmp/in.txt"
for v in qwen35 llama-bpe llama-spm phi-3 deepseek-llm falcon; do
  ids=$($zinc tokenize -m "$V/ggml-vocab-$v.gguf" --no-bos -f "$tmp/in.txt")
  $zinc detokenize -m "$V/ggml-vocab-$v.gguf" "$ids" > "$tmp/out.txt"
  { cat "$tmp/in.txt"; printf '\n'; } > "$tmp/want.txt"
  if cmp -s "$tmp/want.txt" "$tmp/out.txt"; then ok; else bad "round trip $v: $(cat "$tmp/out.txt")"; fi
done
# GPT-2 asks for HF's clean-up of spaces before punctuation
expect "clean-up" "a, b." "$($zinc detokenize -m "$V/ggml-vocab-gpt-2.gguf" "$($zinc tokenize -m "$V/ggml-vocab-gpt-2.gguf" "a , b .")")"
expect "stdin" "$($zinc tokenize -m "$V/ggml-vocab-gpt-2.gguf" "abc def")" \
  "$(printf 'abc def' | $zinc tokenize -m "$V/ggml-vocab-gpt-2.gguf" -f -)"

expect "help" 0 "$(rc_of $zinc tokenize --help)"
$zinc detokenize --help | grep -q "usage: zinc detokenize" && ok || bad "detokenize --help text"
expect "no model" 2 "$(rc_of $zinc tokenize hello)"
expect "two texts" 2 "$(rc_of $zinc tokenize -m "$V/ggml-vocab-gpt-2.gguf" a b)"
expect "missing file" 1 "$(rc_of $zinc tokenize -m /nonexistent.gguf hello)"
expect "not ids" 2 "$(rc_of $zinc detokenize -m "$V/ggml-vocab-gpt-2.gguf" 1,x,3)"
expect "id out of range" 1 "$(rc_of $zinc detokenize -m "$V/ggml-vocab-gpt-2.gguf" 99999999)"
msg=$($zinc tokenize -m /nonexistent.gguf hello 2>&1)
case "$msg" in *nonexistent.gguf*) ok ;; *) bad "error names the file: '$msg'" ;; esac

finish cli_tokenize
