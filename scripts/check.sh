#!/usr/bin/env bash
# The full test run: normal build + tests, then the sanitizer build + tests,
# then (if present) the fuzz smoke run. Sums every "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
P=0; F=0
tally() { # $1 = log file
  local line; line=$(grep -E '^(fuzz: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
  if [ -z "$line" ]; then F=$((F+1)); return; fi
  P=$((P+$(sed -E 's/^(fuzz: )?([0-9]+) passed.*/\2/' <<<"$line"))); F=$((F+$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
}
j=$(nproc)
echo "== build + tests"
make -j"$j" test 2>&1 | tee /tmp/zinc-test.log; tally /tmp/zinc-test.log
echo "== ASan+UBSan build + tests"
make -j"$j" test-asan 2>&1 | tee /tmp/zinc-asan.log; tally /tmp/zinc-asan.log
if [ -f scripts/fuzz-smoke.sh ]; then
  echo "== fuzz smoke"
  bash scripts/fuzz-smoke.sh 2>&1 | tee /tmp/zinc-fuzz.log; tally /tmp/zinc-fuzz.log
fi
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
