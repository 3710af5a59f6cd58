#!/usr/bin/env bash
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
i=0
for t in cm2_cfg=auto cm2_cfg=0 cm2_cfg=7 cm2_cfg=0,mm_split_wgs=264 cm2_cfg=0,mm_split_wgs=528 cm2_cfg=7,mm_split_wgs=528; do
  i=$((i+1))
  timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune $t > "$O/t$i.txt" 2>&1
  echo "$t rc $?: $(grep -E '^\|   128' "$O/t$i.txt" | awk -F'|' '{printf "npl%s PP %s TG %s | ", $4, $7, $10}')"
done
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 4 --profile --tune cm2_cfg=0 > "$O/prof.txt" 2>&1
grep -A8 "prefill of 32 token(s) at position 13[0-9]" "$O/prof.txt" | tail -9
