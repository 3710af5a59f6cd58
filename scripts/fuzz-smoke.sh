#!/usr/bin/env bash
# Fuzz smoke run of the GGUF reader (libFuzzer + ASan + UBSan).
# Builds build/fuzz_gguf, makes a seed corpus in a temporary directory (never
# committed): hand-made files from the writer, and for every shared fixture a
# shrunk valid copy, cuts of its first 16 KiB and bit-flipped variants. Then
# fuzzes for FUZZ_TIME seconds (default 240) and prints the execution count.
# A crash is kept under build/fuzz-crashes/. Last line: "fuzz: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_TIME:-240}
max_len=${FUZZ_MAX_LEN:-65536}
shared=${ZN_SHARED:-../shared}
fail() { echo "fuzz-smoke: $*" >&2; echo "fuzz: 0 passed, 1 failed"; exit 1; }

make -s fuzz || fail "cannot build the fuzzer"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-fuzz.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/corpus" "$tmp/artifacts"
cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -Wno-format-truncation $(for d in src/*/; do printf -- "-I%s " "${d%/}"; done) -o "$tmp/make_seeds" \
  fuzz/make_seeds.c src/format/gguf.c src/format/qtypes.c src/base/status.c || fail "cannot build make_seeds"
mapfile -t fixtures < <(find "$shared/models" "$shared/tokenizers/ggml-vocab" -name '*.gguf' 2>/dev/null | sort)
"$tmp/make_seeds" "$tmp/corpus" "${fixtures[@]}" || fail "cannot make the seed corpus"

echo "fuzz-smoke: ${#fixtures[@]} fixtures, $(ls "$tmp/corpus" | wc -l) seeds, ${secs}s, max_len $max_len"
build/fuzz_gguf "$tmp/corpus" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$tmp/artifacts/" -print_final_stats=1 >"$tmp/log" 2>&1
rc=$?
runs=$(grep -oE 'Done [0-9]+ runs' "$tmp/log" | grep -oE '[0-9]+' | tail -1)
[ -n "$runs" ] || runs=$(grep -E '^stat::number_of_executed_units' "$tmp/log" | grep -oE '[0-9]+' | tail -1)
echo "fuzz-smoke: ${runs:-?} executions in ${secs}s ($(( ${runs:-0} / (secs > 0 ? secs : 1) ))/s), exit $rc"
if [ "$rc" -ne 0 ]; then
  tail -40 "$tmp/log" >&2
  mkdir -p build/fuzz-crashes && cp "$tmp"/artifacts/* build/fuzz-crashes/ 2>/dev/null
  echo "fuzz-smoke: crashing inputs kept in build/fuzz-crashes/ (reproduce: build/fuzz_gguf FILE)" >&2
  echo "fuzz: 0 passed, 1 failed"; exit 1
fi
echo "fuzz: 1 passed, 0 failed"
