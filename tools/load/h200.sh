#!/usr/bin/env bash
# The server load run on the GPU machine: `zinc serve --backend vulkan` under
# zinc-load at 1, 8 and 32 concurrent streaming clients (loopback only), then,
# as an optional second step, llama.cpp's llama-server (CUDA, built there from
# llama-src-2026-08-22.tar.xz of ../shared/peers) on the same model file under
# the same load, and the ratio zinc / llama-server per level.
#
#   tools/load/h200.sh ZINC ZINC_LOAD [MODEL]     # from the repository root
#   tools/load/h200.sh build/zinc build/zinc-load                 # step 1: zinc only (~1 min, demo model)
#   LLAMA=1 tools/load/h200.sh build/zinc build/zinc-load         # step 2 too: builds llama-server (~5 min
#                                                                 # on 16 cores; reused while the machine stays up)
# With the device tool: carry build/zinc, build/zinc-load and .gl (the Vulkan loader and
# libglvnd .debs: libvulkan1, libglvnd0, libegl1, libgl1, libglx0, libgles2, libopengl0,
# unpacked into / here when no libvulkan.so.1 is installed); for LLAMA=1 also the source
# tarball (LLAMA_TAR, or shared/peers/ / .gl/ beside the checkout).
#
# MODEL: default models/zinc-demo-qwen35.gguf (in the repository). A `zinc synth`
# file of a real shape serves too: its dummy vocabulary prints each token as its
# id in hex, so every token is an event to time, on the completions endpoint
# (it has no chat template). Environment (defaults):
#   LEVELS     1,8,32        MAX_TOKENS 128   PROMPT_WORDS 64   REQUESTS: per level, 4 x clients (at least 16)
#   SYSTEM_WORDS 0 (a system prompt of this many words shared by every request: the prefix cache's case)
#   PARALLEL   32 (server slots; both servers)  CTX 1024 (per slot)
#   OUT        $OUT (the device tool's result folder), else /tmp/zinc-load-h200
#   LLAMA_TAR  llama-src-2026-08-22.tar.xz from shared/peers, ../shared/peers or .gl
#   LLAMA_DIR  /tmp/llama-src (where it is unpacked and built; a built llama-server there is reused)
#   VK_DRIVER_FILES  the NVIDIA ICD of the GPU machine, where that file exists
#   ALLOW_CPU_VULKAN 1: run even when the default Vulkan device is a CPU (lavapipe: a smoke test)
#              (../shared/peers/README.md: the Vulkan set-up there)
# Writes OUT/machine.txt, OUT/zinc.json + zinc.txt (+ llama.json, llama.txt,
# ratio.md), the servers' logs; prints the tables. Exit 0 only when every
# request of every level succeeded.
set -uo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { sed -n '8,10p' "$0" | sed 's/^# *//'; exit 2; }
ZINC=$(realpath "$1") && [ -x "$ZINC" ] || { echo "h200.sh: $1: not an executable zinc"; exit 2; }
LOAD=$(realpath "$2") && [ -x "$LOAD" ] || { echo "h200.sh: $2: not an executable zinc-load (make load)"; exit 2; }
MODEL=${3:-$(dirname "$0")/../../models/zinc-demo-qwen35.gguf}
[ -f "$MODEL" ] || { echo "h200.sh: no model file $MODEL"; exit 2; }
MODEL=$(realpath "$MODEL")
cd "$(dirname "$0")/../.." || exit 2   # the repository root: .gl/, shared/
LEVELS=${LEVELS:-1,8,32}
MAX_TOKENS=${MAX_TOKENS:-128}
PROMPT_WORDS=${PROMPT_WORDS:-64}
SYSTEM_WORDS=${SYSTEM_WORDS:-0}
PARALLEL=${PARALLEL:-32}
CTX=${CTX:-1024}
O=${OUT:-/tmp/zinc-load-h200}; mkdir -p "$O"
# the Vulkan loader: the carried .debs where the machine has none (as the earlier H200 runs did)
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  if ls .gl/*.deb > /dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  else
    echo "h200.sh: no libvulkan.so.1 and no .gl/*.deb to unpack (carry .gl)"; exit 1
  fi
fi
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv_icd" ] && export VK_DRIVER_FILES=$nv_icd
timeout 60 "$ZINC" --list-devices > "$O/devices.txt" 2>&1
grep -qE '^[* ] *0: ' "$O/devices.txt" || { echo "h200.sh: zinc sees no Vulkan device:"; cat "$O/devices.txt"; exit 1; }
# the default device on a CPU (lavapipe) means the GPU's driver was not found: not an H200 result
if grep -qE '^\* .*\(cpu,' "$O/devices.txt" && [ "${ALLOW_CPU_VULKAN:-0}" != 1 ]; then
  echo "h200.sh: zinc's default Vulkan device is a CPU (ALLOW_CPU_VULKAN=1 to run anyway):"; cat "$O/devices.txt"; exit 1
fi
req_args=(); [ -n "${REQUESTS:-}" ] && req_args=(--requests "$REQUESTS")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT

port() { # a free port in 20000-60000
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}
wait_health() { # port pid seconds
  for _ in $(seq $(( $3 * 10 ))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" = 200 ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
load_run() { # name port
  local args=(--url "http://127.0.0.1:$2" --concurrency "$LEVELS" --max-tokens "$MAX_TOKENS" --prompt-words "$PROMPT_WORDS" --system-words "$SYSTEM_WORDS"
              "${req_args[@]}" --json "$O/$1.json")
  echo "\$ zinc-load ${args[*]}" | tee "$O/$1.txt"
  "$LOAD" "${args[@]}" 2>&1 | tee -a "$O/$1.txt"
}

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}"
  echo "model: $MODEL ($(stat -c %s "$MODEL") bytes, sha256 $(sha256sum "$MODEL" | cut -c1-16))"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$O/machine.txt"

# step 1: zinc serve --backend vulkan
P=$(port) || exit 1
zcmd=("$ZINC" serve -m "$MODEL" --backend vulkan --host 127.0.0.1 --port "$P" --parallel "$PARALLEL" --ctx "$CTX")
echo "\$ ${zcmd[*]}" | tee -a "$O/machine.txt"
"${zcmd[@]}" 2> "$O/zinc-serve.err" & zp=$!; pids+=("$zp")
if ! wait_health "$P" "$zp" 600; then echo "h200.sh: zinc serve did not become ready:"; tail -5 "$O/zinc-serve.err"; exit 1; fi
grep -m1 -i "vulkan\|device" "$O/zinc-serve.err" | sed 's/^/zinc: /'
rc=0
load_run zinc "$P" || rc=1
curl -s "http://127.0.0.1:$P/metrics" > "$O/zinc-metrics.txt"
kill -TERM "$zp"; wait "$zp" 2>/dev/null

[ "${LLAMA:-0}" = 1 ] || { echo "(LLAMA=1 runs llama-server on the same file too)"; exit $rc; }

# step 2: llama-server, CUDA, from the peers' source
LLAMA_DIR=${LLAMA_DIR:-/tmp/llama-src}
LS=$LLAMA_DIR/build/bin/llama-server
if [ ! -x "$LS" ]; then
  tarball=${LLAMA_TAR:-}
  for f in shared/peers/llama-src-2026-08-22.tar.xz ../shared/peers/llama-src-2026-08-22.tar.xz \
           .gl/llama-src-2026-08-22.tar.xz; do
    [ -z "$tarball" ] && [ -f "$f" ] && tarball=$f
  done
  [ -f "$tarball" ] || { echo "h200.sh: no llama.cpp source tarball (LLAMA_TAR=...)"; exit 1; }
  mkdir -p "$LLAMA_DIR" && tar -xJf "$tarball" -C "$LLAMA_DIR" || exit 1
  src=$LLAMA_DIR; [ -f "$src/CMakeLists.txt" ] || src=$(dirname "$(ls "$LLAMA_DIR"/*/CMakeLists.txt | head -1)")
  t0=$SECONDS
  cmake -S "$src" -B "$LLAMA_DIR/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DGGML_NATIVE=OFF -DCMAKE_BUILD_TYPE=Release > "$O/llama-cmake.log" 2>&1 &&
  cmake --build "$LLAMA_DIR/build" --target llama-server -j "$(nproc)" > "$O/llama-build.log" 2>&1 ||
    { echo "h200.sh: the llama-server build failed:"; tail -n 20 "$O/llama-build.log" "$O/llama-cmake.log"; exit 1; }
  LS=$(find "$LLAMA_DIR/build" -name llama-server -type f -perm -u+x | head -1)
  echo "llama-server built in $((SECONDS - t0)) s" | tee -a "$O/machine.txt"
fi
P=$(port) || exit 1
# the same slots and per-slot context (llama-server's -c is the total, split over -np)
lcmd=("$LS" -m "$MODEL" --host 127.0.0.1 --port "$P" -np "$PARALLEL" -c $((PARALLEL * CTX)) -ngl 99)
echo "\$ ${lcmd[*]}" | tee -a "$O/machine.txt"
"${lcmd[@]}" > "$O/llama-server.log" 2>&1 & lp=$!; pids+=("$lp")
if ! wait_health "$P" "$lp" 600; then echo "h200.sh: llama-server did not become ready:"; tail -20 "$O/llama-server.log"; exit 1; fi
load_run llama "$P" || rc=1
kill -TERM "$lp"; wait "$lp" 2>/dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$O/machine.txt"

python3 - "$O" <<'PY' | tee "$O/ratio.md"
import json, sys
o = sys.argv[1]
z = {l['concurrency']: l for l in json.load(open(f'{o}/zinc.json'))['levels']}
l = {l['concurrency']: l for l in json.load(open(f'{o}/llama.json'))['levels']}
print('| clients | req/s zinc / llama (ratio) | tok/s zinc / llama (ratio) | TTFT p50 ms zinc / llama | ITL p50 ms zinc / llama | ITL p99 ms zinc / llama |')
print('|---|---|---|---|---|---|')
r = lambda a, b: f'{a / b:.2f}' if b else '—'
for c in sorted(set(z) & set(l)):
    a, b = z[c], l[c]
    print(f"| {c} | {a['requests_per_s']:.2f} / {b['requests_per_s']:.2f} ({r(a['requests_per_s'], b['requests_per_s'])}) "
          f"| {a['tokens_per_s']:,.0f} / {b['tokens_per_s']:,.0f} ({r(a['tokens_per_s'], b['tokens_per_s'])}) "
          f"| {a['ttft_ms']['p50']:.1f} / {b['ttft_ms']['p50']:.1f} | {a['itl_ms']['p50']:.2f} / {b['itl_ms']['p50']:.2f} "
          f"| {a['itl_ms']['p99']:.2f} / {b['itl_ms']['p99']:.2f} |")
PY
exit $rc
