#!/usr/bin/env bash
# The full test run, the README's second command and what CI runs: installs
# the dependencies (scripts/deps.sh), then the normal build + tests, the
# ASan+UBSan build + tests, and the fuzz smoke run. Sums every "N passed,
# N failed[, N skipped]" line; a phase without one counts as a failure.
# A phase silent for 30 s gets a "still running" line. Logs: build/check-*.log.
# Then every failed check and skip of every phase, and last
# "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
P=0; F=0; S=0
num() { grep -oE "[0-9]+ $1" <<<"$2" | grep -oE '[0-9]+' || echo 0; }
tally() { # name, log file, exit status
  local line f; line=$(grep -E '^(fuzz: )?[0-9]+ passed, [0-9]+ failed' "$2" | tail -1)
  if [ -z "$line" ]; then
    F=$((F+1)); echo "failed: [$1] no tally line, exit $3 (see $2)" >>build/check-failed.log; return
  fi
  f=$(num failed "$line")
  P=$((P+$(num passed "$line"))); F=$((F+f)); S=$((S+$(num skipped "$line")))
  if [ "$f" -gt 0 ] && ! grep -q "^failed: \[$1\]" build/check-failed.log; then
    echo "failed: [$1] $line (see $2)" >>build/check-failed.log
  fi
}
phase() { # name, log, command...: output shown as it comes, and kept in the log
  local name=$1 log=$2; shift 2
  echo "== $name"
  : >"$log"
  "$@" >"$log" 2>&1 &
  local pid=$! t0=$SECONDS quiet=$SECONDS size=0 now
  tail -n +1 -f --pid=$pid "$log" &
  local tpid=$!
  while kill -0 $pid 2>/dev/null; do
    sleep 1
    now=$(stat -c %s "$log" 2>/dev/null || echo 0)
    if [ "$now" != "$size" ]; then size=$now; quiet=$SECONDS; fi
    if [ $((SECONDS - quiet)) -ge 30 ]; then echo "  .. $name: still running ($((SECONDS - t0)) s)"; quiet=$SECONDS; fi
  done
  wait $pid; local rc=$?
  wait $tpid 2>/dev/null
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  grep -hE '^(failed|skipped): ' "$log" | sed "s|^\([a-z]*\): |\1: [$name] |" >>build/check-failed.log
  tally "$name" "$log" $rc
}
mkdir -p build
: >build/check-failed.log
if ! bash scripts/deps.sh; then
  echo "check: scripts/deps.sh failed"
  echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
j=$(nproc)
phase "build + tests" build/check-test.log make -j"$j" test
phase "ASan+UBSan build + tests" build/check-asan.log make -j"$j" test-asan
[ -f scripts/fuzz-smoke.sh ] && phase "fuzz smoke" build/check-fuzz.log bash scripts/fuzz-smoke.sh
echo "== summary"
grep '^failed: ' build/check-failed.log
grep '^skipped: ' build/check-failed.log
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
