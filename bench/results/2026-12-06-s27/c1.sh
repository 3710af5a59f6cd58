#!/usr/bin/env bash
# For the next GPU lease (not run in s26: device time spent). Build .dev first (bash .dev/mk.sh, as
# bench/results/2026-12-06-s26/mk.sh; copy llama-cuda-sm90.tar.xz.part* into .ll/; carry [".dev", ".gl", ".ll"]).
# (1) issue 14's table at HEAD (AQS GEMM, attn_dec_min 64, logits in place) against llama-batched-bench, 8B + 2B;
# (2) prefill into quantized KV caches on the matrix-product flash attention (862e024): pp512 at depth 16384;
# (3) split-K on top of the AQS GEMM (only measured before it: it lost then).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee "$O/machine.txt"
( mkdir -p /tmp/ll && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll ) & tp=$!
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
( [ -f /tmp/qwen35-2b.gguf ] || $Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/qwen35-2b.gguf > /dev/null 2>> "$O/synth.err" ) & sp=$!
wait $tp; L=/tmp/ll/llama-cuda
for m in qwen3-8b qwen35-2b; do
  [ $m = qwen35-2b ] && wait $sp
  timeout 100 $Z bench -m /tmp/$m.gguf --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > "$O/z-$m.txt" 2>&1
  echo "zinc $m: $(grep -E '^\|   128' "$O/z-$m.txt" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
  LD_LIBRARY_PATH=$L timeout 100 $L/llama-batched-bench -m /tmp/$m.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > "$O/l-$m.txt" 2>&1
  echo "llama $m: $(grep -E '^\|   128' "$O/l-$m.txt" | awk -F'|' '{printf "npl%s TG %s | ", $4, $9}')"
done
grep ^steps "$O/z-qwen3-8b.txt"
for kt in f16 q4_0 q3_0r; do
  timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 32 -r 1 --depth 16384 --kv-type $kt > "$O/kv-$kt.txt" 2>&1
  echo "kv $kt depth 16384 rc $?: $(grep -E '^(pp|tg)' "$O/kv-$kt.txt" | tr -s ' ' | tr '\n' ' ')"
done
for w in off 528 2112; do
  timeout 50 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune mm_split_wgs=$w > "$O/split-$w.txt" 2>&1
  echo "split $w: $(grep -E '^\|   128' "$O/split-$w.txt" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done
