#!/usr/bin/env bash
# zinc model pull against a loopback server that misbehaves on purpose
# (tests/catalog/fake_hub.py: broken downloads and a Hugging Face stand-in):
# whatever the server does, the models directory never holds a partial,
# corrupt or unverified-as-verified file, and the active model is never one.
# $1: the build directory. Last line "N passed, N failed".
build=${1:-build}
zinc=$(realpath "$build/zinc")
py=${PYTHON:-/usr/bin/python3}
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
srv_pid=
bg_pid=
cleanup() {
  [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
  wait 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
www=$tmp/www
mkdir -p "$www"
cp models/zinc-demo-qwen35.gguf "$www/demo.gguf"
size=$(stat -c %s "$www/demo.gguf")
sum=$(sha256sum "$www/demo.gguf" | cut -d' ' -f1)
# another valid GGUF of the same size: one byte of tensor data differs
"$py" -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[-4096] ^= 0xFF; open(sys.argv[2], "wb").write(b)' \
  "$www/demo.gguf" "$www/demo.gguf.v2"
sum2=$(sha256sum "$www/demo.gguf.v2" | cut -d' ' -f1)
for org in good liar nohash flipper; do
  mkdir -p "$www/hub/$org/Demo-GGUF"
  cp "$www/demo.gguf" "$www/hub/$org/Demo-GGUF/demo-Q4_K_M.gguf"
  cp "$www/demo.gguf.v2" "$www/hub/$org/Demo-GGUF/demo-Q8_0.gguf"
  head -c 1000 "$www/demo.gguf" > "$www/hub/$org/Demo-GGUF/mmproj-Q4_K_M.gguf"
done
mkdir -p "$www/hub/split/Demo-GGUF" "$www/hub/unsloth/Qwen3.5-2B-GGUF"
cp "$www/demo.gguf" "$www/hub/split/Demo-GGUF/demo-Q4_K_M-00001-of-00002.gguf"
cp "$www/demo.gguf" "$www/hub/split/Demo-GGUF/demo-Q4_K_M-00002-of-00002.gguf"
cp "$www/demo.gguf" "$www/hub/unsloth/Qwen3.5-2B-GGUF/Qwen3.5-2B-Q4_K_M.gguf"

timeout 300 "$py" tests/catalog/fake_hub.py "$www" --port-file "$tmp/port" --log "$tmp/log" --cut 1000000 \
  --rate 2000000 --lifetime 290 &
srv_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port" 2>/dev/null)
[ -n "$port" ] || { echo "FAIL: the test server did not start"; echo "fetch_sh: 0 passed, 1 failed"; exit 1; }
base="http://127.0.0.1:$port"

export ZINC_HOME="$tmp/home"
m="$ZINC_HOME/models"
pull() { timeout 60 "$zinc" model pull "$@" >"$tmp/out" 2>"$tmp/err"; }
# The models directory holds only whole files: no part, lock or info file
# (unless $1 names a part allowed to stay), each .gguf with a record whose
# hash is the file's, and "verified" only for the two files served honestly.
audit() {
  local keep=${1:-}
  for f in "$m"/* "$m"/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    case "$f" in
      *.gguf) local rec="$f.sha256" h; h=$(sha256sum "$f" | cut -d' ' -f1)
              [ -f "$rec" ] || { echo "no record for $f"; return 1; }
              [ "$(cut -d' ' -f1 "$rec")" = "$h" ] || { echo "$rec does not match $f"; return 1; }
              if grep -q " verified" "$rec" && [ "$h" != "$sum" ] && [ "$h" != "$sum2" ]; then
                echo "$f is marked verified but is no file the server had"; return 1; fi;;
      *.sha256) [ -f "${f%.sha256}" ] || { echo "a record without its file: $f"; return 1; };;
      "$keep"|"$keep.info") ;;
      *) echo "left behind: $f"; return 1;;
    esac
  done
  if [ -f "$ZINC_HOME/active" ]; then
    local a; a=$(cat "$ZINC_HOME/active")
    case "$a" in *.part|*.info|*.lock) echo "the active model is $a"; return 1;; esac
  fi
  return 0
}
fresh() { rm -rf "$m"; }
refused() { # name, grep pattern: the pull failed, said so, and left a clean directory
  check "$1 (rc $rc)" bash -c '[ $0 -ne 0 ] && grep -q -- "$1" "$2"' $rc "$2" "$tmp/err"
  check "$1: nothing bad left in the models directory" audit "${3:-}"
}

# ---- happy paths ----
fresh; pull "$base/f/demo.gguf" --sha256 "$sum"; rc=$?
check "a known hash (--sha256): installed and verified (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "verified against --sha256" "$3" && grep -q "^$4 verified sha256-option$" "$2.sha256"' \
  $rc "$www/demo.gguf" "$m/demo.gguf" "$tmp/out" "$sum"
check "... and the directory is clean" audit

fresh; pull good/Demo-GGUF/demo-Q4_K_M.gguf --hub-url "$base"; rc=$?
check "ORG/REPO/FILE.gguf: the hub's X-Linked-Etag verifies it (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "verified against the hub.s hash" "$3" && grep -q "^$4 verified hub$" "$2.sha256"' \
  $rc "$www/demo.gguf" "$m/demo-Q4_K_M.gguf" "$tmp/out" "$sum"
check "... fetched through resolve/main, redirected to the CDN" \
  grep -q "^/good/Demo-GGUF/resolve/main/demo-Q4_K_M.gguf " "$tmp/log"
timeout 20 "$zinc" model list >"$tmp/out" 2>&1
check "model list says verified against the hub's hash" grep -q "demo-Q4_K_M.gguf .*verified (hub hash)" "$tmp/out"

fresh; pull hf:good/Demo-GGUF:Q8_0 --hub-url "$base"; rc=$?
check "hf:ORG/REPO:QUANT: the file listing picks the Q8_0 file and its hash (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "verified against the hub.s hash" "$3"' \
  $rc "$www/demo.gguf.v2" "$m/demo-Q8_0.gguf" "$tmp/out"
check "... asked the API for the listing" grep -q "^/api/models/good/Demo-GGUF/tree/main" "$tmp/log"
fresh; pull hf:good/Demo-GGUF --hub-url "$base"; rc=$?
check "hf:ORG/REPO without a quant takes Q4_K_M (not the mmproj file) (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2"' $rc "$www/demo.gguf" "$m/demo-Q4_K_M.gguf"
fresh; pull hf:good/Demo-GGUF:Q2_K --hub-url "$base"; rc=$?
refused "hf: with a quant the repository lacks is refused" "no GGUF file for Q2_K"
pull hf:split/Demo-GGUF --hub-url "$base"; rc=$?
refused "hf: a model split in several files is refused, naming them" "split in several files.*00001-of-00002"
pull hf:nobody/Nothing-GGUF --hub-url "$base"; rc=$?
refused "hf: a repository the hub does not have is refused" "HTTP 404: no such repository"
pull "hf:../etc" --hub-url "$base"; rc=$?
refused "hf: a malformed repository name is refused" "want hf:ORG/REPO"

# the catalog knows the real file's hash; this hub serves another file
# under its name and says so in X-Linked-Etag: nothing is saved, and the
# message names the hub's file, which is then verified against the hub's hash
fresh; pull qwen35-2b-q4k-m --hub-url "$base"; rc=$?
refused "a catalog id (the seed's alias) whose file the hub has replaced: refused, nothing saved" \
  "the hub announces SHA-256 $sum, but the catalog's hash is aaf42c8b.*nothing saved; .zinc model pull unsloth/Qwen3.5-2B-GGUF/Qwen3.5-2B-Q4_K_M.gguf. takes the hub's file"
check "... asked the hub's resolve URL of the catalog's file" \
  grep -q "^/unsloth/Qwen3.5-2B-GGUF/resolve/main/Qwen3.5-2B-Q4_K_M.gguf " "$tmp/log"
pull unsloth/Qwen3.5-2B-GGUF/Qwen3.5-2B-Q4_K_M.gguf --hub-url "$base"; rc=$?
check "... the pull it names installs the hub's file, verified against the hub's hash (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "verified against the hub.s hash" "$3"' \
  $rc "$www/demo.gguf" "$m/Qwen3.5-2B-Q4_K_M.gguf" "$tmp/out"
timeout 20 "$zinc" model use qwen35-2b-q4k-m >"$tmp/out" 2>&1; rc=$?
check "model use qwen35-2b-q4k-m makes it active (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && [ "$(cat "$1")" = "$(realpath "$2")" ]' $rc "$ZINC_HOME/active" "$m/Qwen3.5-2B-Q4_K_M.gguf"
timeout 60 "$zinc" --model-id qwen35-2b-q4k-m -p hi -n 2 --seed 1 --backend cpu >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc --model-id qwen35-2b-q4k-m -p runs it (rc $rc)" bash -c '[ $0 -eq 0 ] && [ -s "$1" ]' $rc "$tmp/out"
rm -f "$ZINC_HOME/active"

fresh; pull "$base/redir/demo.gguf" --sha256 "$sum"; rc=$?
check "a redirect to the file is followed (rc $rc)" bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2"' $rc "$www/demo.gguf" "$m/demo.gguf"
fresh; pull "$base/nolen/demo.gguf"; rc=$?
check "no Content-Length, whole file: installed, and said to be UNVERIFIED (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "UNVERIFIED" "$3"' $rc "$www/demo.gguf" "$m/demo.gguf" "$tmp/out"
check "... recorded as unverified" audit

# ---- resume ----
fresh; pull "$base/cut/demo.gguf" --sha256 "$sum"; rc=$?
check "a cut download keeps a resumable part and says how to resume (rc $rc)" \
  bash -c '[ $0 -ne 0 ] && [ "$(stat -c %s "$1.part")" = 1000000 ] && grep -q "again to resume" "$2" && [ ! -e "$1" ]' \
  $rc "$m/demo.gguf" "$tmp/err"
check "... nothing else bad left" audit "$m/demo.gguf.part"
closed=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pull "http://127.0.0.1:$closed/cut/demo.gguf" --sha256 "$sum"; rc=$?
check "resuming while the server is unreachable keeps the resumable part (rc $rc)" \
  bash -c '[ $0 -ne 0 ] && [ "$(stat -c %s "$1.part")" = 1000000 ] && grep -q "kept: run the same command again" "$2"' \
  $rc "$m/demo.gguf" "$tmp/err"
pull "$base/cut/demo.gguf" --sha256 "$sum"; rc=$?
check "the next pull resumes at byte 1000000 with If-Range and verifies (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "^/cut/demo.gguf bytes=1000000- \"" "$1" && cmp -s "$2" "$3"' \
  $rc "$tmp/log" "$www/demo.gguf" "$m/demo.gguf"
check "... and leaves no part" audit

fresh; pull "$base/changing/demo.gguf"; pull "$base/changing/demo.gguf"; rc=$?
check "content changed between requests: If-Range gets the new file whole, not a mix (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "whole file; starting again" "$3"' $rc "$www/demo.gguf.v2" "$m/demo.gguf" "$tmp/err"
fresh; pull "$base/zero206/demo.gguf" --sha256 "$sum"; pull "$base/zero206/demo.gguf" --sha256 "$sum"; rc=$?
check "a 206 that starts at byte 0 is taken as the whole file, not appended (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "from its start; starting again" "$3"' $rc "$www/demo.gguf" "$m/demo.gguf" "$tmp/err"
fresh; pull "$base/norange/demo.gguf" --sha256 "$sum"; pull "$base/norange/demo.gguf" --sha256 "$sum"; rc=$?
check "a server that ignores Range: the download starts again and verifies (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "starting again" "$1" && cmp -s "$2" "$3"' $rc "$tmp/err" "$www/demo.gguf" "$m/demo.gguf"

# a stale part longer than the file, recorded as resumable: the 416 restarts it
fresh; mkdir -p "$m"
{ cat "$www/demo.gguf"; head -c 5000 /dev/urandom; } > "$m/demo.gguf.part"
etag="\"$(printf %s "$sum" | cut -c1-16)\""
printf '%s\n\n%s\n' "$etag" $((size + 10000)) > "$m/demo.gguf.part.info"
pull "$base/f/demo.gguf"; rc=$?
check "a stale .part longer than the file: the 416 restarts the download, no stale bytes kept (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "^/f/demo.gguf bytes=$1- " "$2" && cmp -s "$3" "$4" && grep -q "cannot resume" "$5"' \
  $rc $((size + 5000)) "$tmp/log" "$www/demo.gguf" "$m/demo.gguf" "$tmp/err"
fresh; mkdir -p "$m"; { cat "$www/demo.gguf"; echo junk; } > "$m/demo.gguf.part"
pull "$base/f/demo.gguf"; rc=$?
check "a stale .part with no record of its content is not trusted: started again (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2"' $rc "$www/demo.gguf" "$m/demo.gguf"

# ---- bad content: never installed ----
for case in "html:an HTML page" "gzip:gzip data" "fliphead:not a valid GGUF" "short:not a valid GGUF" \
            "nolencut:not a valid GGUF"; do
  fresh; pull "$base/${case%%:*}/demo.gguf"; rc=$?
  refused "/${case%%:*}/ (no hash known): deleted, says '${case#*:}'" "deleted the download.*${case#*:}"
done
fresh; pull "$base/flip/demo.gguf" --sha256 "$sum"; rc=$?
refused "byte-flipped data with a known hash: deleted" "SHA-256 mismatch against --sha256: expected $sum"
fresh; pull liar/Demo-GGUF/demo-Q4_K_M.gguf --hub-url "$base"; rc=$?
refused "a file that does not match the hub's X-Linked-Etag: deleted" "SHA-256 mismatch against the hub's hash"
fresh; pull flipper/Demo-GGUF/demo-Q4_K_M.gguf --hub-url "$base"; rc=$?
refused "byte-flipped data under the hub's hash: deleted" "SHA-256 mismatch against the hub's hash"
fresh; pull hf:flipper/Demo-GGUF --hub-url "$base"; rc=$?
refused "byte-flipped data under the hash of the hub's listing: deleted" "SHA-256 mismatch against the hub's hash"
fresh; pull nohash/Demo-GGUF/demo-Q4_K_M.gguf --hub-url "$base"; rc=$?
check "no hash from anywhere: installed, and pull says UNVERIFIED (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "UNVERIFIED" "$1" && grep -q " unverified$" "$2.sha256"' $rc "$tmp/out" "$m/demo-Q4_K_M.gguf"
check "... recorded as unverified, not verified" audit

# ---- HTTP errors, redirects, protocols ----
fresh; pull "$base/s500/demo.gguf"; rc=$?
refused "HTTP 500: refused, nothing saved" "HTTP 500 (nothing saved"
pull "$base/f/missing.gguf"; rc=$?
refused "HTTP 404: refused, nothing saved" "HTTP 404 (nothing saved"
pull "$base/loop/demo.gguf"; rc=$?
refused "a redirect loop: refused" "more than 10 redirects"
pull "$base/redirfile/demo.gguf"; rc=$?
refused "a redirect to file:// is not followed" "only http:// and https://"
pull "$base/redirftp/demo.gguf"; rc=$?
refused "a redirect to ftp:// is not followed" "only http:// and https://"
pull "$base/redirgopher/demo.gguf"; rc=$?
refused "a redirect to gopher:// is not followed" "only http:// and https://"
pull "$base/huge/demo.gguf"; rc=$?
refused "a Content-Length of a petabyte: refused before writing, nothing saved" "not enough disk space"

# ---- two pulls of one file at once ----
fresh; timeout 60 "$zinc" model pull "$base/slow/demo.gguf" --sha256 "$sum" >"$tmp/out1" 2>"$tmp/err1" &
bg_pid=$!
for _ in $(seq 100); do [ -e "$m/demo.gguf.part" ] && break; sleep 0.05; done
pull "$base/slow/demo.gguf" --sha256 "$sum"; rc=$?
check "a second pull of a file being downloaded refuses at once (rc $rc)" \
  bash -c '[ $0 -ne 0 ] && grep -q "another zinc is downloading it now" "$1"' $rc "$tmp/err"
wait $bg_pid; rc=$?; bg_pid=
check "the first one finishes, verified; the file on disk is the file (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2"' $rc "$www/demo.gguf" "$m/demo.gguf"
check "... and its record holds the hash of what is on disk" audit

# ---- a part that is a symlink ----
fresh; mkdir -p "$m"; echo "not yours" > "$tmp/victim"; ln -s "$tmp/victim" "$m/demo.gguf.part"
pull "$base/f/demo.gguf"; rc=$?
check "a .part that is a symlink is not followed (rc $rc), its target untouched" \
  bash -c '[ $0 -ne 0 ] && grep -q "symbolic link" "$1" && [ "$(cat "$2")" = "not yours" ] && [ ! -e "$3" ]' \
  $rc "$tmp/err" "$tmp/victim" "$m/demo.gguf"
rm -f "$m/demo.gguf.part"

# ---- a slow server: minimum rate and deadline ----
since() { awk -v now="$(date +%s.%N)" -v t0="$1" 'BEGIN { printf "%.2f", now - t0 }'; } # seconds since $1
fresh; t0=$(date +%s.%N)
pull "$base/trickle/demo.gguf" --min-rate 100 --min-rate-window 2; rc=$?
t=$(since "$t0")
refused "1.5 bytes/s against a 100 B/s minimum over 2 s: given up in ${t}s, resumable part kept" \
  "less than 100 bytes/s for 2 s.*kept: run the same command again" "$m/demo.gguf.part"
check "... within 10 s" awk -v t="$t" 'BEGIN { exit !(t != "" && t < 10) }'
fresh; pull "$base/tricklenr/demo.gguf" --min-rate 100 --min-rate-window 2; rc=$?
refused "the same from a server that cannot resume: the part is removed" "cannot resume it, so the partial file was removed"
fresh; t0=$(date +%s.%N)
pull "$base/slow/demo.gguf" --deadline 1.5; rc=$?
t=$(since "$t0")
refused "2 MB/s for a 9 MB file against a 1.5 s deadline: given up in ${t}s, resumable part kept" \
  "longer than the deadline of 1.5 s" "$m/demo.gguf.part"
pull "$base/slow/demo.gguf" --sha256 "$sum"; rc=$?
check "... and the next pull resumes it to a verified file (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2"' $rc "$www/demo.gguf" "$m/demo.gguf"

# ---- disk full ----
fresh
bash -c 'trap "" XFSZ; ulimit -f 2048; exec timeout 60 "$0" model pull "$1"' "$zinc" "$base/nolen/demo.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
refused "a write that fails (file size limit, size unknown): the part is removed and the error named" \
  "disk full? removed .*demo.gguf.part.*File too large"
if unshare -Urm true 2>/dev/null; then
  fresh; mkdir -p "$m"
  unshare -Urm bash -c 'mount -t tmpfs -o size=6m tmpfs "$0" && timeout 60 "$1" model pull "$2"; r=$?; ls -A "$0" > "$3"; exit $r' \
    "$m" "$zinc" "$base/nolen/demo.gguf" "$tmp/left" >"$tmp/out" 2>"$tmp/err"; rc=$?
  check "a full disk (6 MB tmpfs, size unknown): refused (rc $rc), the part removed, said why" \
    bash -c '[ $0 -ne 0 ] && grep -q "disk full? removed.*No space left on device" "$1" && [ ! -s "$2" ]' $rc "$tmp/err" "$tmp/left"
  unshare -Urm bash -c 'mount -t tmpfs -o size=6m tmpfs "$0" && timeout 60 "$1" model pull "$2"; r=$?; ls -A "$0" > "$3"; exit $r' \
    "$m" "$zinc" "$base/f/demo.gguf" "$tmp/left" >"$tmp/out" 2>"$tmp/err"; rc=$?
  check "a known size larger than the free space (6 MB tmpfs): refused before writing (rc $rc)" \
    bash -c '[ $0 -ne 0 ] && grep -q "not enough disk space.*nothing written" "$1" && [ ! -s "$2" ]' $rc "$tmp/err" "$tmp/left"
else
  skip "a full disk (small tmpfs)" "no user namespace to mount a tmpfs in (the file-size-limit case above and the fake statvfs of test_catalog.c still run)"
  skip "a known size larger than the free space (small tmpfs)" "no user namespace to mount a tmpfs in"
fi

# ---- the active model is never a part ----
fresh; mkdir -p "$m"; cp "$www/demo.gguf" "$m/whole.gguf.part"
timeout 20 "$zinc" model use "$m/whole.gguf.part" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "model use of a .part is refused, even one that loads (rc $rc)" \
  bash -c '[ $0 -ne 0 ] && grep -q "unfinished download" "$1" && [ ! -e "$2/active" ]' $rc "$tmp/err" "$ZINC_HOME"

finish fetch_sh
