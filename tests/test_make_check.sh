#!/usr/bin/env bash
# `make check` (the Makefile's check rule): its last line is scripts/check.sh's
# tally also when a check failed, with no make error line after it, and its
# exit status says whether everything passed. Runs the repository's Makefile in
# a scratch directory whose scripts/check.sh is a stand-in that prints a tally
# and fails when asked, so this takes a second, not a full check run.
# $1: the build directory (unused: the scratch directory has its own).
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
command -v make >/dev/null || { skip make_check "no make"; finish make_check; exit; }
mkdir -p "$tmp/scripts"
cp "$root/Makefile" "$tmp/"
cat >"$tmp/scripts/check.sh" <<'SH'
echo "stand-in check: output on stdout"
echo "stand-in check: output on stderr" >&2
echo ran >>ran.log
echo "7 passed, ${STANDIN_FAILED:-0} failed, 1 skipped"
[ "${STANDIN_FAILED:-0}" -eq 0 ]
SH
mk() { # make arguments...: output in $tmp/out, exit status in $rc
  # as typed at a shell, not as a sub-make of the `make test` running this
  # (which would add "Entering/Leaving directory" lines)
  (cd "$tmp" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES make "$@" >out 2>&1); rc=$?
}

mk check
expect "passing: exit status" 0 "$rc"
expect "passing: last line" "7 passed, 0 failed, 1 skipped" "$(tail -1 "$tmp/out")"
has "passing: the check's stdout is shown" "$tmp/out" "stand-in check: output on stdout"
has "passing: the check's stderr is shown" "$tmp/out" "stand-in check: output on stderr"

STANDIN_FAILED=2 mk check
expect "failing: exit status" 1 "$rc"
expect "failing: last line (output: $(tail -3 "$tmp/out" | tr '\n' '|'))" "7 passed, 2 failed, 1 skipped" "$(tail -1 "$tmp/out")"
if grep -q '\*\*\*' "$tmp/out"; then bad "failing: a make error line: $(grep '\*\*\*' "$tmp/out")"; else ok; fi

STANDIN_FAILED=1 mk -j2 check
expect "failing, -j2: exit status" 1 "$rc"
expect "failing, -j2: last line" "7 passed, 1 failed, 1 skipped" "$(tail -1 "$tmp/out")"

# a pass after a failure does not remember the failure
mk check
expect "passing after a failure: exit status" 0 "$rc"
expect "passing after a failure: last line" "7 passed, 0 failed, 1 skipped" "$(tail -1 "$tmp/out")"

# each make check ran the check once
expect "runs of the stand-in" 4 "$(wc -l <"$tmp/ran.log")"
# -n only prints the command
mk -n check
expect "make -n check: exit status" 0 "$rc"
has "make -n check: the command" "$tmp/out" "bash scripts/check.sh"
expect "make -n check: the check did not run" 4 "$(wc -l <"$tmp/ran.log")"

finish make_check
