#!/usr/bin/env bash
# The engine options of the commands that run a model (cli_args.c): --device
# checked against the devices the backend lists (bad values: exit 2 and a
# message naming the option and the devices), --tune and ZN_TUNE parsed by
# the Vulkan tuning's key table (unknown keys and bad values named), the
# active tuning printed by bench (text and --json, with its pipeline counts:
# none created after init) and --check. $1 = build dir.
build=${1:-build}
zinc=$build/zinc
[ -x "$zinc" ] || zinc=./zinc
M=${ZN_SHARED:-../shared}/models/tiny/qwen3-dense-f32.gguf
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unset ZN_TUNE

# --device: not an index, negative, huge, past the last device: each command refuses it
n_dev=$($zinc --list-devices 2>/dev/null | grep -c '^[ *] [0-9]*:')
dev_case() { # value, args...: refused with the option, the value and the devices named
  local v=$1; shift
  "$zinc" "$@" --device "$v" > /dev/null 2> "$tmp/e"; local rc=$?
  expect "$1 --device '$v' rc" 2 $rc
  has "$1 --device '$v' names the option" "$tmp/e" "--device '$v': "
  if [ "$n_dev" -gt 0 ]; then has "$1 --device '$v' lists the devices" "$tmp/e" "the vulkan devices are 0: "; fi
}
for v in -1 abc 99999999999999999999; do
  dev_case "$v" -m "$M" -p hi -n 1
  dev_case "$v" eval -m "$M" --tokens 1,2 -n 1
  dev_case "$v" bench -m "$M" -p 4 -n 1 -r 1
done
for v in "$n_dev" 1.5 ""; do dev_case "$v" -m "$M" -p hi -n 1; done
$zinc -m "$M" -p hi -n 1 --backend cpu --device 0 > /dev/null 2> "$tmp/e"; expect "cpu --device rc" 2 $?
has "cpu --device" "$tmp/e" "the cpu backend has no devices"

if [ "$n_dev" -gt 0 ]; then
  # a valid index picks that device: the same logits as the default Vulkan device (device 0 here)
  $zinc eval -m "$M" --tokens 1,5,9 -n 4 --backend vulkan > "$tmp/v" 2>/dev/null; expect "eval vulkan rc" 0 $?
  $zinc eval -m "$M" --tokens 1,5,9 -n 4 --device 0 > "$tmp/d0" 2> "$tmp/e"; expect "eval --device 0 rc" 0 $?
  if cmp -s "$tmp/v" "$tmp/d0" && [ -s "$tmp/v" ]; then ok; else bad "--device 0 gave other logits than --backend vulkan"; fi

  # --tune: kernels switched off change rounding only: the same greedy tokens on the f32 model
  $zinc eval -m "$M" --tokens 1,5,9 -n 4 --backend vulkan --tune mvx=off,attn_dec=off,mv_rows=1 > "$tmp/t" 2> "$tmp/e"
  expect "--tune rc" 0 $?
  g() { sed -E 's/.*"greedy": \[([^]]*)\].*/\1/' "$1"; }
  expect "--tune greedy" "$(g "$tmp/v")" "$(g "$tmp/t")"

  # unknown keys and bad values: exit 2, the key or value named, from either source
  $zinc -m "$M" -p hi -n 1 --backend vulkan --tune mvx_foo=1 > /dev/null 2> "$tmp/e"; expect "unknown key rc" 2 $?
  has "unknown key" "$tmp/e" "--tune 'mvx_foo=1': vulkan: tuning: unknown key 'mvx_foo' (keys: mvx, mvx_modes"
  $zinc eval -m "$M" --tokens 1 --backend vulkan --tune attn_chunk=0 > /dev/null 2> "$tmp/e"; expect "bad value rc" 2 $?
  has "bad value" "$tmp/e" "bad value '0' for attn_chunk (1..1048576 or auto)"
  ZN_TUNE=poll=maybe $zinc bench -m "$M" -p 4 -n 1 -r 1 --backend vulkan > /dev/null 2> "$tmp/e"; expect "ZN_TUNE rc" 2 $?
  has "ZN_TUNE named" "$tmp/e" "zinc bench: ZN_TUNE 'poll=maybe': vulkan: tuning: bad value 'maybe' for poll (on or off)"

  # bench prints the active tuning, overrides applied: --tune after ZN_TUNE
  ZN_TUNE=mv_one_rows=7,qx_sk=3 $zinc bench -m "$M" -p 4 -n 2 -r 1 --backend vulkan --tune qx_sk=2 > "$tmp/b" 2>/dev/null
  expect "bench rc" 0 $?
  has "bench tuning class" "$tmp/b" "tuning   cpu"
  has "bench ZN_TUNE" "$tmp/b" "mv_one_rows=7,"
  has "bench --tune after ZN_TUNE" "$tmp/b" ",qx_sk=2,"
  $zinc bench -m "$M" -p 4 -n 2 -r 1 --backend vulkan --json > "$tmp/j" 2>/dev/null; expect "bench --json rc" 0 $?
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tuning_class"] and "attn_chunk=" in d["tuning"]; assert d["pipelines"] > 0 and d["pipelines_late"] == 0' "$tmp/j"
  then ok; else bad "bench --json: no tuning, or pipelines created in the token loop: $(tail -c 300 "$tmp/j")"; fi
  # the recorded decode step's dispatches and barriers: counted in --json, listed in order by --trace (a
  # barrier after each level: with every level one dispatch, as this model's since the attention takes in
  # the ropes, as many barriers as dispatches)
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["step_dispatches"] >= d["step_barriers"] > 0' "$tmp/j"
  then ok; else bad "bench --json: no step_dispatches / step_barriers: $(tail -c 300 "$tmp/j")"; fi
  $zinc bench -m "$M" -p 4 -n 2 -r 1 --backend vulkan --trace > /dev/null 2> "$tmp/e"; expect "bench --trace rc" 0 $?
  nd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_dispatches"])' "$tmp/j" 2>/dev/null)
  nb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_barriers"])' "$tmp/j" 2>/dev/null)
  line=$(grep -m1 '^vulkan trace' "$tmp/e")
  if grep -q "^vulkan trace: decode step of 1 sequence(s), $nd dispatches, $nb barriers: embed | .* | output |\$" "$tmp/e" &&
     [ "$(echo "$line" | sed 's/^[^:]*: [^:]*://' | tr -d '|' | wc -w)" -eq "$nd" ] &&
     [ "$(echo "$line" | sed 's/^[^:]*: [^:]*://' | tr -cd '|' | wc -c)" -eq "$nb" ]
  then ok; else bad "bench --trace: $(head -c 300 "$tmp/e")"; fi
  # --profile says it on stderr; the tuning printed parses back as --tune
  spec=$(sed -n 's/^tuning   [^:]*: //p' "$tmp/b")
  $zinc bench -m "$M" -p 4 -n 1 -r 1 --backend vulkan --profile --tune "$spec" > /dev/null 2> "$tmp/e"
  expect "--tune of bench's own tuning rc" 0 $?
  has "--profile tuning" "$tmp/e" "vulkan: llvmpipe"
  # the doctor shows it, and reports a bad ZN_TUNE
  ZN_TUNE=attn_dec_min=0 $zinc --check > "$tmp/c" 2>&1
  has "--check tuning" "$tmp/c" "vulkan tuning of device 0: class cpu"
  has "--check ZN_TUNE" "$tmp/c" "ZN_TUNE applied: "
  ZN_TUNE=bogus=1 $zinc --check > "$tmp/c" 2>&1
  has "--check bad ZN_TUNE" "$tmp/c" "vulkan tuning: ZN_TUNE='bogus=1': vulkan: tuning: unknown key 'bogus'"
fi
# the cpu backend has no tuning keys; ZN_TUNE is for Vulkan runs only
$zinc -m "$M" -p hi -n 1 --backend cpu --tune poll=on > /dev/null 2> "$tmp/e"; expect "cpu --tune rc" 2 $?
has "cpu --tune" "$tmp/e" "--tune: the cpu backend has no tuning keys"
ZN_TUNE=bogus=1 $zinc -m "$M" -p hi -n 1 --backend cpu > /dev/null 2>&1; expect "cpu ignores ZN_TUNE" 0 $?
finish cli_engine
