#!/usr/bin/env bash
# Replays the fuzz regression inputs (fuzz/regress/TARGET/*: inputs that once
# crashed or broke a target's checks) through each target, built with the
# project's compiler and flags (BUILD/fuzz-replay/fuzz_TARGET; under ASan+UBSan
# in test-asan). A target aborts on any finding, so each must exit 0.
build=${1:-build}
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
for d in fuzz/regress/*/; do
  t=$(basename "$d")
  n=$(ls "$d" | wc -l)
  [ "$n" -gt 0 ] || continue
  if [ ! -x "$build/fuzz-replay/fuzz_$t" ]; then bad "$t: $build/fuzz-replay/fuzz_$t not built"; continue; fi
  check "fuzz_$t replays $n regression inputs" "$build/fuzz-replay/fuzz_$t" "$d"
done
finish test_fuzz_regress
