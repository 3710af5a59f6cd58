#!/usr/bin/env bash
# The full test run: normal build + tests, then the sanitizer build + tests,
# then (if present) the fuzz smoke run. Sums every "N passed, N failed[, N
# skipped]". Last line: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
P=0; F=0; S=0
num() { grep -oE "[0-9]+ $1" <<<"$2" | grep -oE '[0-9]+' || echo 0; }
tally() { # $1 = log file
  local line; line=$(grep -E '^(fuzz: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
  if [ -z "$line" ]; then F=$((F+1)); return; fi
  P=$((P+$(num passed "$line"))); F=$((F+$(num failed "$line"))); S=$((S+$(num skipped "$line")))
}
j=$(nproc)
mkdir -p build
echo "== build + tests"
make -j"$j" test 2>&1 | tee build/check-test.log; tally build/check-test.log
echo "== ASan+UBSan build + tests"
make -j"$j" test-asan 2>&1 | tee build/check-asan.log; tally build/check-asan.log
if [ -f scripts/fuzz-smoke.sh ]; then
  echo "== fuzz smoke"
  bash scripts/fuzz-smoke.sh 2>&1 | tee build/check-fuzz.log; tally build/check-fuzz.log
fi
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
