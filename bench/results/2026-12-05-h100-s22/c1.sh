#!/usr/bin/env bash
# Call 1 (2026-12-05 s22): first-pp512-after-idle probe, batched decode of 3 shapes vs llama-batched-bench,
# batched tune variants on the 8B, a profile at 32, the server under 32 streaming clients.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/bb" "$O/load"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/ll && ( cat .dev/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll ) &
Z=.dev/zinc L=.dev/zinc-load
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"; } > "$O/machine.txt"
cat "$O/machine.txt"
for s in qwen3-8b qwen3.5-2b; do t0=$SECONDS; $Z synth --like $s --type q4_k_m -o /tmp/$s.gguf > /dev/null 2>> "$O/synth.err"; echo "$s synth $((SECONDS-t0)) s" >> "$O/machine.txt"; done
( t0=$SECONDS; $Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/qwen3.5-35b-a3b.gguf > /dev/null 2>> "$O/synth.err"; echo "35b synth $((SECONDS-t0)) s" >> "$O/machine.txt" ) &
s35=$!
# 1. pp512 after the GPU idled (as after a synth in side-by-side.sh), every repetition, with clocks sampled
sleep 8
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu --format=csv,noheader -lms 50 > "$O/clocks.csv" 2>&1 & np=$!
for k in cold warm; do
  echo "== pp512 $k $(date +%T.%N)" >> "$O/clocks.csv"
  timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 0 -r 8 --json > "$O/pp-$k.json" 2> "$O/pp-$k.err"
  echo "pp512 $k: $(grep -o '"pp_each": \[[^]]*\]' "$O/pp-$k.json")"
done
kill $np
wait %1 2>/dev/null
export LD_LIBRARY_PATH=/tmp/ll/llama-cuda
# 2. batched decode, three shapes
for s in qwen3.5-2b qwen3-8b qwen3.5-35b-a3b; do
  [ $s = qwen3.5-35b-a3b ] && wait $s35
  f=/tmp/$s.gguf
  timeout 150 $Z bench -m $f --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > "$O/bb/zinc-$s.txt" 2>&1
  timeout 100 /tmp/ll/llama-cuda/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > "$O/bb/llama-$s.txt" 2>&1
  echo "=== $s"; grep -E "^\|" "$O/bb/llama-$s.txt" | tail -4; grep -E "^\|   128|^memory" "$O/bb/zinc-$s.txt"
done
# 3. tune variants: the 35B's expert matmuls on the per-token mat-vec up to 64 / 128 tokens; the 8B's multi-token mat-vec
for tune in moe_min_tok=65 moe_min_tok=129; do
  timeout 100 $Z bench -m /tmp/qwen3.5-35b-a3b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 128 --tune $tune > "$O/bb/tune35-$tune.txt" 2>&1
  echo "== 35b $tune (rc $?)"; grep -E "^\|   128" "$O/bb/tune35-$tune.txt"
done
for tune in mvt_modes=0 mvt=16,mm_min_tok=33 mvt=16,mm_min_tok=65,mvt_modes=0; do
  timeout 100 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 8,32,64 -npp 128 -ntg 128 --tune $tune > "$O/bb/tune-$tune.txt" 2>&1
  echo "== 8b $tune (rc $?)"; grep -E "^\|   128" "$O/bb/tune-$tune.txt"
done
# 4. the server under load (demo model)
M=models/zinc-demo-qwen35.gguf P=28431
$Z serve -m $M --backend vulkan --port $P --parallel 32 --ctx 2048 2> "$O/load/serve.err" & zp=$!
for i in $(seq 300); do curl -sf localhost:$P/health >/dev/null && break; sleep 0.2; done
m() { curl -s localhost:$P/metrics | grep -E '^zinc_(prefix|kv|prompt|engine|requests)' > "$O/load/metrics-$1.txt"; }
run() { local n=$1; shift; echo "== $n: $*"; timeout 100 $L --url http://127.0.0.1:$P "$@" --json "$O/load/$n.json" > "$O/load/$n.txt" 2>&1; echo "rc=$?" >> "$O/load/$n.txt"; tail -n 6 "$O/load/$n.txt"; m $n; }
$L --url http://127.0.0.1:$P --concurrency 8 --requests 16 --max-tokens 16 --prompt-words 16 > /dev/null 2>&1
C="--concurrency 32 --requests 128 --max-tokens 128 --prompt-words 64"
run nosys $C
run sys256 $C --system-words 256
run sys1024 $C --system-words 1024
run levels --concurrency 1,8,32 --max-tokens 128 --prompt-words 64
kill -TERM $zp; wait $zp
# the same with a shared KV pool (--kv-mem auto): the system prompt's blocks shared by reference
$Z serve -m $M --backend vulkan --port $P --parallel 32 --ctx 2048 --kv-mem auto 2> "$O/load/serve-kvmem.err" & zp=$!
for i in $(seq 300); do curl -sf localhost:$P/health >/dev/null && break; sleep 0.2; done
( sleep 3; curl -s localhost:$P/metrics | grep -E '^zinc_kv' > "$O/load/metrics-kvmem-during.txt" ) &
run kvmem-sys1024 $C --system-words 1024
kill -TERM $zp; wait $zp
grep -h "zinc_kv_pool" "$O"/load/metrics-kvmem*.txt
cat "$O/machine.txt"
