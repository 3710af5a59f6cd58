#!/usr/bin/env bash
# split-K over the AQS GEMM: sweep mm_split_wgs / mm_split_k on the 8B and 2B at 32 / 64 sequences; profiles
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader; cat .dev/commit
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err" &
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/qwen35-2b.gguf > /dev/null 2>> "$O/synth.err"; wait
for m in qwen3-8b qwen35-2b; do
  for w in off:1024 264:1024 528:1024 1056:1024 2112:1024 528:512 1056:512; do
    timeout 50 $Z bench -m /tmp/$m.gguf --backend vulkan -npl 32,48,64 -npp 128 -ntg 32 --tune mm_split_wgs=${w%:*},mm_split_k=${w#*:} > "$O/s-$m-${w/:/-}.txt" 2>&1
    echo "$m split $w: $(grep -E '^\|   128' "$O/s-$m-${w/:/-}.txt" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
  done
done
timeout 40 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 128 -n 4 -r 1 --profile > "$O/prof-tg.txt" 2>&1
grep -A24 "decode of 1 token(s) at position 13[0-9]" "$O/prof-tg.txt" | head -25
timeout 40 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 4 --profile --tune mm_split_wgs=1056 > "$O/prof-32.txt" 2>&1
grep -B1 -A16 "prefill of 32 token(s) at position 13[0-9]" "$O/prof-32.txt" | head -18
