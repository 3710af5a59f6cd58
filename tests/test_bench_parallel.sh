#!/usr/bin/env bash
# zinc bench --parallel N / -npl -npp -ntg (cli_bench_par.c) on the tiny
# fixtures: one row per combination with its counts, --json with the fields
# the H200 comparison with llama-batched-bench reads, consistent numbers,
# a hybrid (recurrent) model, Vulkan (lavapipe), and bad options named.
# $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
T=${ZN_SHARED:-../shared}/models/tiny
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
M=$T/llama-dense-q8_0.gguf

# text: a row per (PP, TG, B), in llama-batched-bench's order (PP, then TG, then B)
$zinc bench -m "$M" --backend cpu -t 1 -npl 1,3 -npp 5,9 -ntg 4 > "$tmp/t" 2> "$tmp/e"; expect "text rc" 0 $?
has "backend line" "$tmp/t" "backend  cpu (batched steps), 1 threads, step budget"
has "header" "$tmp/t" "|    PP |    TG |    B |   N_KV |"
rows=$(grep -E '^\| +[0-9]' "$tmp/t" | awk -F'|' '{gsub(/ /,""); printf "%s/%s/%s/%s ", $2, $3, $4, $5}')
expect "rows: PP/TG/B/N_KV" "5/4/1/9 5/4/3/27 9/4/1/13 9/4/3/39 " "$rows"

# --json: one object per combination, numbers that agree with each other
$zinc bench -m "$M" --backend cpu -t 1 --parallel 4 -npp 7 -ntg 3,5 --json > "$tmp/j" 2> "$tmp/e"; expect "json rc" 0 $?
if jq -e 'length == 2 and all(.[]; .backend == "cpu" and .batched == true and .arch == "llama" and .pl == 4
           and .pp == 7 and .n_kv == 4 * (7 + .tg) and .t_pp > 0 and .t_tg > 0 and .speed_pp > 0 and .speed_tg > 0
           and .ttft_mean > 0 and .ttft_max >= .ttft_mean and .ttft_max <= .t_pp + 1e-6
           and ((.speed_tg_seq * 4 - .speed_tg) | fabs) <= 0.05 + 0.001 * .speed_tg
           and ((.speed_pp - 28 / .t_pp) | fabs) <= 0.01 * .speed_pp
           and ((.t - .t_pp - .t_tg) | fabs) <= 1e-5) and ([.[].tg] == [3, 5])' "$tmp/j" > /dev/null
then ok; else bad "json: $(head -c 600 "$tmp/j")"; fi
has "json model path" "$tmp/j" "\"model\": \"$M\""

# a model path that needs escaping in JSON
ln -s "$(realpath "$M")" "$tmp/a\"b\\c.gguf"
$zinc bench -m "$tmp/a\"b\\c.gguf" --backend cpu -t 1 --parallel 2 -npp 3 -ntg 2 --json > "$tmp/jq" 2>/dev/null
expect "escaped path rc" 0 $?
expect "escaped path" "$tmp/a\"b\\c.gguf" "$(jq -r '.[0].model' "$tmp/jq" 2>&1)"

# a hybrid model (DeltaNet and conv state per sequence), prompts over the step budget (split across steps)
$zinc bench -m "$T/qwen35-dense-q8_0.gguf" --backend cpu -t 1 -npl 3 -npp 300 -ntg 2 --json > "$tmp/h" 2> "$tmp/e"
expect "hybrid rc" 0 $?
if jq -e 'length == 1 and .[0].arch == "qwen35" and .[0].n_kv == 906 and .[0].ttft_max > .[0].ttft_mean' "$tmp/h" > /dev/null
then ok; else bad "hybrid: $(head -c 400 "$tmp/h") $(head -c 300 "$tmp/e")"; fi

# Vulkan (lavapipe): batched steps too (one forward over the sequences' rows), the same report
if $zinc --list-devices 2>/dev/null | grep -q .; then
  $zinc bench -m "$M" --backend vulkan -npl 2 -npp 4 -ntg 2 --json > "$tmp/v" 2> "$tmp/e"; expect "vulkan rc" 0 $?
  if jq -e 'length == 1 and .[0].backend == "vulkan" and .[0].batched == true and .[0].pl == 2 and .[0].speed_tg > 0' "$tmp/v" > /dev/null
  then ok; else bad "vulkan: $(head -c 400 "$tmp/v") $(head -c 300 "$tmp/e")"; fi
  $zinc bench -m "$T/qwen35-dense-q8_0.gguf" --backend vulkan -npl 3 -npp 20 -ntg 2 > "$tmp/vt" 2> "$tmp/e"; expect "vulkan hybrid rc" 0 $?
  has "vulkan backend line" "$tmp/vt" "backend  vulkan (batched steps)"
  # the host time per decode step; its first one recorded, the rest replay it (the same three sequences), all batched
  $zinc bench -m "$T/qwen35-dense-q8_0.gguf" --backend vulkan -npl 1,3 -npp 20 -ntg 4 > "$tmp/vs" 2> "$tmp/e"
  expect "vulkan steps rc" 0 $?
  has "vulkan steps B 1" "$tmp/vs" "steps    B    1: "
  if grep -Eq '^steps    B    3: [0-9.]+ us per decode step = [0-9.]+ waiting for the device \+ [0-9.]+ preparing \+ [0-9.]+ submitting \+ [0-9.]+ reading \+ -?[0-9.]+ the rest; 75% replayed, 100% batched$' "$tmp/vs"
  then ok; else bad "vulkan steps line: $(grep '^steps' "$tmp/vs")"; fi
  $zinc bench -m "$T/qwen35-dense-q8_0.gguf" --backend vulkan -npl 3 -npp 20 -ntg 4 --no-replay > "$tmp/vn" 2> "$tmp/e"
  expect "vulkan --no-replay rc" 0 $?
  has "vulkan --no-replay steps" "$tmp/vn" "; 0% replayed, 100% batched"
else
  skip "bench --parallel vulkan" "no Vulkan device"
fi

# bad input: exit 2 and the option named; a missing model exit 1 and its path
bad_case() { # name, expected message, args...
  local name=$1 msg=$2; shift 2
  $zinc bench -m "$M" --backend cpu "$@" > /dev/null 2> "$tmp/be"; expect "$name rc" 2 $?
  has "$name message" "$tmp/be" "$msg"
}
bad_case "parallel 0" "zinc bench: bad --parallel '0' (sequence counts 1 to 256" --parallel 0
bad_case "parallel 257" "zinc bench: bad --parallel '257'" --parallel 257
bad_case "npl empty item" "zinc bench: bad -npl '1,,2'" -npl 1,,2
bad_case "npl trailing comma" "zinc bench: bad -npl '1,'" -npl 1,
bad_case "npp text" "zinc bench: bad -npp 'abc' (lengths 1 to" -npp abc
bad_case "ntg negative" "zinc bench: bad -ntg '-1'" --parallel 2 -ntg -1
bad_case "npl too long" "zinc bench: bad -npl" -npl 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
bad_case "unknown option" "zinc bench: unknown option '-r' with --parallel" --parallel 2 -r 3
bad_case "missing value" "zinc bench: -ntg needs a value" --parallel 2 -ntg
$zinc bench -m "$tmp/none.gguf" --parallel 2 > /dev/null 2> "$tmp/be"; expect "missing model rc" 1 $?
has "missing model message" "$tmp/be" "$tmp/none.gguf"
$zinc bench --parallel 2 --help > "$tmp/u"; expect "help rc" 0 $?
has "help" "$tmp/u" "usage: zinc bench --parallel N [-npp 128] [-ntg 128]"

finish bench_parallel
