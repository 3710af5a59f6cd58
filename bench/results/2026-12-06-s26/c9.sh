#!/usr/bin/env bash
# final: issue-14 table (8B, 2B) zinc HEAD vs llama-batched-bench CUDA, same lease
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
