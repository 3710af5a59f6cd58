#!/usr/bin/env bash
# LeakSanitizer with tests/lsan.supp (what tests/run.sh gives the ASan pass):
# the suppressions hide only the Vulkan driver's own leak, never zinc's.
# $build/tests/lsan_probe (always built with ASan) decodes on the Vulkan
# backend and frees everything: no report, exit 0; the same run that also
# loses a GGUF context zinc allocated: a leak report through src/format/gguf.c,
# non-zero exit. Without a Vulkan device the probe runs on nothing of the
# driver's and the checks say so. $1: the build directory.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
probe=$build/tests/lsan_probe
M=${ZN_SHARED:-../shared}/models/tiny/qwen3-dense-f32.gguf
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1"

"$probe" "$M" clean >"$tmp/out" 2>"$tmp/err"; rc=$?
vk=$(head -1 "$tmp/out")
case "$vk" in "vulkan: yes") ;; *) skip "lsan_vulkan" "the probe ran without the Vulkan driver (${vk:-no output})" ;; esac
expect "clean run: exit status ($vk; stderr: $(head -c 600 "$tmp/err"))" 0 "$rc"
if grep -q "LeakSanitizer" "$tmp/err"; then bad "clean run: a leak report: $(head -c 1500 "$tmp/err")"; else ok; fi

"$probe" "$M" leak >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -ne 0 ]; then ok; else bad "leaking run: exit 0"; fi
has "leaking run: a LeakSanitizer report" "$tmp/err" "ERROR: LeakSanitizer: detected memory leaks"
has "leaking run: the report shows the allocation in zinc's gguf.c" "$tmp/err" "src/format/gguf.c"
finish lsan
