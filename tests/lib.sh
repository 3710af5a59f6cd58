# Helpers shared by the tests/test_*.sh scripts (sourced). Each script counts
# checks in P / F / S and ends with `finish NAME`, whose line "NAME: N passed,
# N failed, N skipped" tests/run.sh sums. Failures and skips go to stderr
# ("FAIL: ..." / "SKIP NAME: reason"), which tests/run.sh lists at the end.
# Progress on stderr: a `check` that took a second or more says so, and a
# script that has printed nothing for 10 s says how far it is.
P=0; F=0; S=0
_lib_note=$SECONDS
_lib_alive() {
  if [ $((SECONDS - _lib_note)) -ge 10 ]; then
    echo "  .. ${0##*/}: $P passed, $F failed, $S skipped so far (${SECONDS} s)" >&2; _lib_note=$SECONDS
  fi
}
ok() { P=$((P+1)); _lib_alive; }
bad() { F=$((F+1)); echo "  FAIL: $*" >&2; _lib_note=$SECONDS; }
skip() { # name, reason: a check that cannot run here (counted, never as passed)
  S=$((S+1)); echo "SKIP $1: ${*:2}" >&2; _lib_note=$SECONDS
}
expect() { # name, want, got
  if [ "$2" == "$3" ]; then ok; else bad "$1: want '$2', got '$3'"; fi
}
has() { # name, file, text
  if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in: $(head -c 400 "$2")"; fi
}
rc_of() { "$@" >/dev/null 2>&1; echo $?; }
check() { # name, command...: passes when the command exits 0; shows its output's tail when not
  local name=$1; shift
  local t0=$SECONDS out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ]; then
    echo "ok: $name"
    if [ $((SECONDS - t0)) -ge 1 ]; then echo "ok   $name ($((SECONDS - t0)) s)" >&2; _lib_note=$SECONDS; fi
    ok
  else
    { echo "  FAIL: $name (exit $rc)"; printf '%s\n' "$out" | tail -20 | sed 's/^/    /'; } >&2; F=$((F+1)); _lib_note=$SECONDS
  fi
}
finish() { # suite name; the script's exit status
  echo "$1: $P passed, $F failed, $S skipped"
  [ "$F" -eq 0 ]
}
