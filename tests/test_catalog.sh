#!/usr/bin/env bash
# zinc model pull from a loopback HTTP server (tests/catalog/fake_hub.py),
# default-model resolution and zinc --check, all in temporary ZINC_HOMEs.
# $1: the build directory. Last line "N passed, N failed".
build=${1:-build}
zinc=$(realpath "$build/zinc")
py=${PYTHON:-/usr/bin/python3}
. "$(dirname "$0")/lib.sh"
# a failure here also shows the last command's stderr
bad() { echo "FAIL: $1"; [ -f "$tmp/err" ] && tail -5 "$tmp/err" | sed 's/^/    /'; F=$((F+1)); }

tmp=$(mktemp -d)
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/www"
cp models/zinc-demo-qwen35.gguf "$tmp/www/demo.gguf"
size=$(stat -c %s "$tmp/www/demo.gguf")
sum=$(sha256sum "$tmp/www/demo.gguf" | cut -d' ' -f1)
cut=1000000
timeout 120 "$py" tests/catalog/fake_hub.py "$tmp/www" --port-file "$tmp/port" --log "$tmp/log" --cut $cut --lifetime 110 &
srv_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port" 2>/dev/null)
[ -n "$port" ] || { echo "FAIL: the test server did not start"; echo "catalog_sh: 0 passed, 1 failed"; exit 1; }
base="http://127.0.0.1:$port"

export ZINC_HOME="$tmp/home"
m="$ZINC_HOME/models"
pull() { timeout 60 "$zinc" model pull "$@" >"$tmp/out" 2>"$tmp/err"; }
leftovers() { ls "$m" 2>/dev/null | grep -c "$1"; }

# the right hash: installed, byte for byte, recorded as verified
pull "$base/f/demo.gguf" --sha256 "$sum"; rc=$?
check "pull with the right --sha256 installs the file (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && cmp -s "$1" "$2" && grep -q "^$3 verified sha256-option$" "$2.sha256"' $rc "$tmp/www/demo.gguf" "$m/demo.gguf" "$sum"
check "the progress report says MB, MB/s and % on a non-terminal" grep -q "100.0%.*MB/s" "$tmp/err"
check "pull of an installed file does nothing" bash -c 'timeout 20 "$0" model pull "$1" | grep -q "already installed"' "$zinc" "$base/f/demo.gguf"
rm -rf "$m"

# no hash known: installed, the computed hash printed and recorded as unverified
pull "$base/f/demo.gguf"; rc=$?
check "pull without a hash installs but says UNVERIFIED with the computed hash" \
  bash -c '[ $0 -eq 0 ] && grep -q "sha256 $1 (UNVERIFIED" "$2" && grep -q "^$1 unverified$" "$3.sha256"' $rc "$sum" "$tmp/out" "$m/demo.gguf"
rm -rf "$m"

# a wrong hash: refused, expected and got named, nothing left behind
wrong=$(printf '%064d' 0)
pull "$base/f/demo.gguf" --sha256 "$wrong"; rc=$?
check "pull with a wrong hash is refused (rc $rc), says expected vs got, leaves no file" \
  bash -c '[ $0 -ne 0 ] && grep -q "expected $1, got $2" "$3" && [ -z "$(ls -A "$4")" ]' $rc "$wrong" "$sum" "$tmp/err" "$m"

# an interrupted download, then resumed with a Range request
pull "$base/cut/demo.gguf" --sha256 "$sum"; rc=$?
check "an interrupted pull fails (rc $rc), keeps $cut bytes in .part and says how to resume" \
  bash -c '[ $0 -ne 0 ] && [ "$(stat -c %s "$1.part")" = "$2" ] && grep -q "again to resume" "$3" && [ ! -e "$1" ]' \
  $rc "$m/demo.gguf" $cut "$tmp/err"
pull "$base/cut/demo.gguf" --sha256 "$sum"; rc=$?
check "the second pull resumes at byte $cut (Range request) and verifies the whole file" \
  bash -c '[ $0 -eq 0 ] && grep -q "^/cut/demo.gguf bytes=$1- " "$2" && cmp -s "$3" "$4" && [ ! -e "$4.part" ]' \
  $rc $cut "$tmp/log" "$tmp/www/demo.gguf" "$m/demo.gguf"
rm -rf "$m"

# a server that ignores Range: the .part is restarted, not corrupted
pull "$base/norange/demo.gguf" --sha256 "$sum"
pull "$base/norange/demo.gguf" --sha256 "$sum"; rc=$?
check "a server that ignores Range: the download starts again and verifies (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "starting again" "$1" && cmp -s "$2" "$3"' $rc "$tmp/err" "$tmp/www/demo.gguf" "$m/demo.gguf"

# use / active / rm of a pulled model
timeout 20 "$zinc" model use demo.gguf >"$tmp/out" 2>"$tmp/err"; rc=$?
check "model use FILE makes a pulled model active (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && [ "$(timeout 20 "$1" model active)" = "$(realpath "$2")" ]' $rc "$zinc" "$m/demo.gguf"
timeout 30 "$zinc" -p hi -n 4 --seed 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc -p without -m runs the active model and says so (rc $rc)" grep -q "using the active model $m/demo.gguf" "$tmp/err"
timeout 20 "$zinc" model list >"$tmp/out" 2>"$tmp/err"
check "model list marks the active model" grep -q '^\* demo.gguf .*sha256 verified' "$tmp/out"
timeout 20 "$zinc" model rm demo.gguf >"$tmp/out" 2>"$tmp/err"; rc=$?
check "model rm deletes the file and its record and clears active (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && [ -z "$(ls -A "$1")" ] && [ ! -e "$2/active" ]' $rc "$m" "$ZINC_HOME"

# 404 and a closed port: clear errors naming the URL, nothing left
pull "$base/f/nope.gguf"; rc=$?
check "404: refused (rc $rc) with HTTP 404 and the URL, no file left" \
  bash -c '[ $0 -ne 0 ] && grep -q "$1: HTTP 404" "$2" && [ -z "$(ls -A "$3")" ]' $rc "$base/f/nope.gguf" "$tmp/err" "$m"
closed=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pull "http://127.0.0.1:$closed/f/demo.gguf"; rc=$?
check "a closed port: refused (rc $rc) naming the URL, no file left" \
  bash -c '[ $0 -ne 0 ] && grep -q "127.0.0.1:$1/f/demo.gguf" "$2" && [ -z "$(ls -A "$3")" ]' $rc "$closed" "$tmp/err" "$m"
pull "$base/huge/demo.gguf"; rc=$?
check "a file larger than the free disk space: refused before writing (rc $rc), no file left" \
  bash -c '[ $0 -ne 0 ] && grep -q "not enough disk space" "$1" && [ -z "$(ls -A "$2")" ]' $rc "$tmp/err" "$m"
pull not-a-model; rc=$?
check "pull of an unknown id says so (rc $rc)" grep -q "neither a catalog id, a URL nor hf:" "$tmp/err"
echo secret > "$tmp/local.gguf"
for u in "file://$tmp/local.gguf" "ftp://127.0.0.1:$port/local.gguf" "gopher://127.0.0.1:$port/local.gguf"; do
  pull "$u"; rc=$?
  check "pull $u is refused (rc $rc): only http and https, nothing installed" \
    bash -c '[ $0 -ne 0 ] && grep -q "only http:// and https://" "$1" && [ -z "$(ls -A "$2" 2>/dev/null)" ]' $rc "$tmp/err" "$m"
done

# the seed's ids: --model-id runs an installed catalog model by alias
mkdir -p "$m" && cp "$tmp/www/demo.gguf" "$m/Qwen3.5-2B-Q4_K_M.gguf"
timeout 30 "$zinc" --model-id qwen35-2b-q4k-m -p hi -n 2 --seed 1 --backend cpu >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc --model-id qwen35-2b-q4k-m -p runs the installed file (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && [ -s "$1" ]' $rc "$tmp/out"
# hardware profile and fit: --check --model-id, model list
timeout 60 "$zinc" --check --model-id qwen35-2b-q4k-m >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--check --model-id of an installed model: it fits this profile, with a context, READY (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "model qwen35-2b-q4k-m fits [a-z0-9-]*: .* up to [0-9]* tokens of context" "$1" && [ "$(tail -1 "$1")" = "READY [OK]" ]' \
  $rc "$tmp/out"
timeout 30 "$zinc" model list >"$tmp/out" 2>"$tmp/err"; rc=$?
check "model list names the hardware profile and marks what fits with its context (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "^hardware profile: [a-z0-9-]*gb\|^hardware profile: apple-silicon" "$1" && grep -q "^  qwen3.5-2b .* yes, ctx [0-9]*" "$1"' \
  $rc "$tmp/out"
rm -f "$m/Qwen3.5-2B-Q4_K_M.gguf"
timeout 60 "$zinc" --check --model-id qwen35-2b-q4k-m >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--check --model-id of a model not installed: the estimate from the catalog, then NOT READY naming the pull (rc $rc)" \
  bash -c '[ $0 -eq 1 ] && grep -q "model qwen35-2b-q4k-m fits" "$1" && tail -1 "$1" | grep -q "^NOT READY \[FAIL\]" && grep -q "zinc model pull qwen35-2b-q4k-m" "$1"' \
  $rc "$tmp/out"
VK_ICD_FILENAMES=/nonexistent/icd.json timeout 60 "$zinc" --check >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--check with VK_ICD_FILENAMES pointing nowhere: says the CPU backend will be used, READY (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "backend: cpu .*zinc will use the CPU backend.*hardware profile cpu-[0-9]*gb" "$1" && [ "$(tail -1 "$1")" = "READY [OK]" ]' \
  $rc "$tmp/out"
timeout 30 "$zinc" --model-id qwen35-2b-q4k-m -p hi -n 2 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--model-id of a model not installed says which pull to run (rc $rc)" \
  bash -c '[ $0 -ne 0 ] && grep -q "not installed.*zinc model pull qwen35-2b-q4k-m" "$1"' $rc "$tmp/err"

# default model: empty ZINC_HOME -> the shipped demo model
export ZINC_HOME="$tmp/empty"
timeout 30 "$zinc" -p hi -n 4 --seed 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc -p hi -n 4 with no -m and an empty ZINC_HOME uses the demo model and says so (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "no -m given and no active model; using the built-in demo model .*zinc-demo-qwen35.gguf" "$1" && [ -s "$2" ]' \
  $rc "$tmp/err" "$tmp/out"
timeout 30 "$zinc" eval --tokens 1,2,3 -n 2 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc eval without -m runs the demo model too (rc $rc, n_vocab 4096)" \
  bash -c '[ $0 -eq 0 ] && grep -q "using the built-in demo model" "$1" && grep -q "\"n_vocab\": 4096" "$2"' $rc "$tmp/err" "$tmp/out"
mkdir -p "$tmp/bin" && cp "$zinc" "$tmp/bin/zinc"
timeout 30 "$tmp/bin/zinc" -p hi -n 4 --seed 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a copied binary with nothing beside it runs the demo model built into it (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "using the built-in demo model /proc/self/exe#zinc-demo-qwen35.gguf" "$1" && [ -s "$2" ]' \
  $rc "$tmp/err" "$tmp/out"
timeout 30 "$zinc" -m models/zinc-demo-qwen35.gguf -p hi -n 4 --seed 1 >"$tmp/out2" 2>/dev/null
check "... and writes what the shipped file writes" cmp -s "$tmp/out" "$tmp/out2"

# the doctor
timeout 60 "$zinc" --check >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc --check ends in READY [OK] on this machine (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && [ "$(tail -1 "$1")" = "READY [OK]" ] && grep -q "^\[OK\] *smoke test" "$1"' $rc "$tmp/out"
timeout 60 "$tmp/bin/zinc" --check >"$tmp/out" 2>"$tmp/err"; rc=$?
check "zinc --check on a bare copied binary: the built-in demo model loads and passes the smoke test, READY [OK] (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "demo model /proc/self/exe#zinc-demo-qwen35.gguf loads" "$1" && grep -q "^\[OK\] *smoke test" "$1" && [ "$(tail -1 "$1")" = "READY [OK]" ]' \
  $rc "$tmp/out"
VK_ICD_FILENAMES=/nonexistent/icd.json timeout 60 "$tmp/bin/zinc" --check >"$tmp/out" 2>"$tmp/err"; rc=$?
check "... and with VK_ICD_FILENAMES pointing nowhere it says the CPU backend will be used, READY [OK] (rc $rc)" \
  bash -c '[ $0 -eq 0 ] && grep -q "zinc will use the CPU backend" "$1" && [ "$(tail -1 "$1")" = "READY [OK]" ]' $rc "$tmp/out"

finish catalog_sh
