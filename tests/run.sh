#!/usr/bin/env bash
# Runs every test binary under $1/tests (and tests/*.sh scripts), sums their
# "N passed, N failed, N skipped" lines (a line without skips counts 0); a
# binary that crashes or prints no summary counts as one failure. Each
# test's stderr is shown as it runs (indented) and its summary line ends
# with its time. Then every failed check ("failed: TEST: message") and every
# skip ("skipped: TEST: reason"), and last "N passed, N failed, N skipped".
# Under ASan, LeakSanitizer ignores the one known leak of Mesa's lavapipe
# ICD (tests/lsan.supp); zinc's own leaks still fail (tests/test_lsan.sh);
# the Vulkan loader loads lavapipe only (tests/vk_env.sh).
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# ASan's quarantine of freed memory kept to 16 MiB: with the default, lavapipe's
# per-dispatch allocations grew test_vk_batch's batched-decode case to 24 GB and
# the kernel killed it (CI box, 2026-12-02; 2.9 GB with this)
export ASAN_OPTIONS="quarantine_size_mb=16:thread_local_quarantine_size_kb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# the ASan pass: lavapipe alone (tests/vk_env.sh says why)
. "$root/tests/vk_env.sh"
if nm "$build/tests/test_gguf" 2>/dev/null | grep -q __asan_init || nm -D "$build/tests/test_gguf" 2>/dev/null | grep -q __asan_init; then
  zn_vk_lavapipe_only
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
P=0; F=0; S=0
: >"$tmp/failed"; : >"$tmp/skipped"
num() { grep -oE "[0-9]+ $1" <<<"$2" | grep -oE '[0-9]+' || echo 0; }
for t in "$build"/tests/test_* tests/test_*.sh; do
  [ -x "$t" ] || [ "${t##*.}" = sh ] || continue
  [ -e "$t" ] || continue
  case "$t" in *.sh) cmd=(bash "$t" "$build");; *.d) continue;; *) cmd=("$t");; esac
  name=${t##*/}
  t0=$SECONDS
  "${cmd[@]}" >"$tmp/out" 2> >(tee "$tmp/err" | sed -u 's/^/    /' >&2); rc=$?
  wait $! 2>/dev/null
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$tmp/out" | tail -1)
  # lines that name a failure, from stdout and stderr (shell tests print
  # theirs on either), and sanitizer reports
  fails() {
    cat "$tmp/out" "$tmp/err" | grep -E 'FAIL|failed|ERROR: [A-Za-z]+Sanitizer|runtime error:|SUMMARY: ' |
      grep -vE '[0-9]+ passed, [0-9]+ failed' | head -20 | sed "s|^ *|failed: $name: |" >>"$tmp/failed"
  }
  grep -E '^ *SKIP ' "$tmp/out" "$tmp/err" -h | sed -E "s|^ *SKIP |skipped: $name: |" >>"$tmp/skipped"
  if [ -z "$line" ]; then
    echo "$t: no summary (exit $rc, $((SECONDS - t0)) s)"; F=$((F+1))
    echo "failed: $name: no summary line (exit $rc)" >>"$tmp/failed"; fails; continue
  fi
  echo "$line ($((SECONDS - t0)) s)"
  p=$(num passed "$line"); f=$(num failed "$line"); s=$(num skipped "$line")
  P=$((P+p)); F=$((F+f)); S=$((S+s))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$t: exit $rc with no failed test"; F=$((F+1))
    echo "failed: $name: exit $rc with no failed test" >>"$tmp/failed"
  fi
  if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then fails; fi
done
cat "$tmp/failed" "$tmp/skipped"
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
