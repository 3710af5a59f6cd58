#!/usr/bin/env bash
# LeakSanitizer with tests/lsan.supp (what tests/run.sh gives the ASan pass):
# the suppressions hide only the Vulkan driver's own leak, never zinc's.
# $build/tests/lsan_probe (always built with ASan) decodes on the Vulkan
# backend and frees everything: no report, exit 0; the same run that also
# loses a GGUF context zinc allocated: a leak report through src/format/gguf.c,
# non-zero exit. Without a Vulkan device the probe runs on nothing of the
# driver's and the checks say so. Then the suppression on a stand-in driver
# library with a leak of the reported shape. $1: the build directory.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
probe=$build/tests/lsan_probe
M=${ZN_SHARED:-../shared}/models/tiny/qwen3-dense-f32.gguf
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1"
. "$root/tests/vk_env.sh"
zn_vk_lavapipe_only

"$probe" "$M" clean >"$tmp/out" 2>"$tmp/err"; rc=$?
vk=$(head -1 "$tmp/out")
case "$vk" in "vulkan: yes") ;; *) skip "lsan_vulkan" "the probe ran without the Vulkan driver (${vk:-no output})" ;; esac
expect "clean run: exit status ($vk; stderr: $(head -c 600 "$tmp/err"))" 0 "$rc"
if grep -q "LeakSanitizer" "$tmp/err"; then bad "clean run: a leak report: $(head -c 1500 "$tmp/err")"; else ok; fi

"$probe" "$M" leak >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -ne 0 ]; then ok; else bad "leaking run: exit 0"; fi
has "leaking run: a LeakSanitizer report" "$tmp/err" "ERROR: LeakSanitizer: detected memory leaks"
has "leaking run: the report shows the allocation in zinc's gguf.c" "$tmp/err" "src/format/gguf.c"
# The suppression itself, on a leak of the reported shape (a block lost from
# a pthread_once initialiser inside a library named libLLVM-*): hidden, and a
# leak of the program's own beside it still reported.
cat >"$tmp/lib.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) { void *volatile p = malloc(128); (void)p; }
void driver_init(void) { pthread_once(&once, init); }
C
cat >"$tmp/main.c" <<'C'
#include <stdlib.h>
#include <string.h>
void driver_init(void);
void *volatile lost;
__attribute__((noinline)) static void lose(void) { for (int i = 0; i < 4; i++) lost = malloc(77); lost = 0; }
__attribute__((noinline)) static void scrub(void) { volatile char j[4096]; memset((char *)j, 0, sizeof j); }
int main(int argc, char **argv) { driver_init(); if (argc > 1) lose(); scrub(); return 0; }
C
if cc -g -O0 -fPIC -shared -o "$tmp/libLLVM-99.so.1" "$tmp/lib.c" &&
   cc -g -O0 -fsanitize=address -fno-omit-frame-pointer -o "$tmp/drv" "$tmp/main.c" "$tmp/libLLVM-99.so.1" -Wl,-rpath,"$tmp"; then
  LSAN_OPTIONS= "$tmp/drv" 2>"$tmp/err"; rc=$?
  # the allocation in the initialiser pthread_once ran (libc's own frame, __pthread_once_slow, is
  # named only where libc's debug symbols are installed: libc6-dbg)
  if [ $rc -ne 0 ] && grep -q "Direct leak of 128 byte" "$tmp/err" && grep -q "in init .*lib\.c:4" "$tmp/err"; then ok
  else bad "driver-like leak without suppressions: exit $rc, no 128-byte leak from the initialiser: $(head -c 800 "$tmp/err")"; fi
  "$tmp/drv" 2>"$tmp/err"; rc=$?
  expect "driver-like leak with tests/lsan.supp: exit status ($(head -c 400 "$tmp/err"))" 0 "$rc"
  "$tmp/drv" own 2>"$tmp/err"; rc=$?
  if [ $rc -ne 0 ]; then ok; else bad "own leak beside the driver's: exit 0"; fi
  has "own leak beside the driver's: reported" "$tmp/err" "in lose "
  if grep -q "libLLVM-99" "$tmp/err"; then bad "own leak run: the driver's leak shown too: $(head -c 600 "$tmp/err")"; else ok; fi
else
  bad "cannot build the driver-like leak (cc)"
fi
finish lsan
