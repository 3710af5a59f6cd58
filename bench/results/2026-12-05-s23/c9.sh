#!/usr/bin/env bash
# s23 final check of main on a GPU: batched decode (the KV bookkeeping now in kv_blocks.c) and the server with a
# shared KV pool (blocks shared by reference)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc L=.dev/zinc-load
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err"
timeout 90 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 32 > "$O/bb.txt" 2>&1; echo "bench rc $?"
grep -E "^\|   128" "$O/bb.txt" | awk -F'|' '{printf "  npl %s: S_TG %s\n", $4, $10}'
M=models/zinc-demo-qwen35.gguf P=28431
$Z serve -m $M --backend vulkan --port $P --parallel 32 --ctx 2048 --kv-mem auto 2> "$O/serve.err" & zp=$!
for i in $(seq 300); do curl -sf localhost:$P/health >/dev/null && break; sleep 0.2; done
timeout 100 $L --url http://127.0.0.1:$P --concurrency 32 --requests 128 --max-tokens 128 --prompt-words 64 --system-words 1024 > "$O/load.txt" 2>&1; echo "load rc $?"
tail -n 6 "$O/load.txt"; curl -s localhost:$P/metrics | grep -E '^zinc_(kv_pool|prefix)' | head -8
kill -TERM $zp; wait $zp; echo "serve exit $?"
