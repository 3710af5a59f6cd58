#!/usr/bin/env bash
# Runs every test binary under $1/tests (and tests/*.sh scripts), sums their
# "N passed, N failed" lines; a binary that crashes or prints no summary
# counts as one failure. Last line: "N passed, N failed".
build=${1:-build}
P=0; F=0
for t in "$build"/tests/test_* tests/test_*.sh; do
  [ -x "$t" ] || [ "${t##*.}" = sh ] || continue
  [ -e "$t" ] || continue
  case "$t" in *.sh) cmd=(bash "$t" "$build");; *) cmd=("$t");; esac
  out=$("${cmd[@]}" 2> >(sed 's/^/    /' >&2)); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -1)
  if [ -z "$line" ]; then
    echo "$t: no summary (exit $rc)"; F=$((F+1)); continue
  fi
  echo "$line"
  p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  P=$((P+p)); F=$((F+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "$t: exit $rc with no failed test"; F=$((F+1)); fi
done
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
