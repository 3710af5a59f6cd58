# Helpers shared by the tests/test_*.sh scripts (sourced). Each script counts
# checks in P / F and ends with `finish NAME`, whose line "NAME: N passed,
# N failed" tests/run.sh sums.
P=0; F=0
ok() { P=$((P+1)); }
bad() { F=$((F+1)); echo "  FAIL: $*" >&2; }
expect() { # name, want, got
  if [ "$2" == "$3" ]; then ok; else bad "$1: want '$2', got '$3'"; fi
}
has() { # name, file, text
  if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in: $(head -c 400 "$2")"; fi
}
rc_of() { "$@" >/dev/null 2>&1; echo $?; }
check() { # name, command...: passes when the command exits 0; shows its output's tail when not
  local name=$1; shift
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ]; then echo "ok: $name"; ok; else echo "FAIL: $name"; printf '%s\n' "$out" | tail -20 | sed 's/^/    /'; F=$((F+1)); fi
}
finish() { # suite name; the script's exit status
  echo "$1: $P passed, $F failed"
  [ "$F" -eq 0 ]
}
