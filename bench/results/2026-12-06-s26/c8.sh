#!/usr/bin/env bash
# attn_dec_min sweep: decode from an empty context (tg128) and at depth 128-192 (-npl 1)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
M=/tmp/qwen3-8b.gguf
for a in 256 64 16 1; do
  timeout 40 $Z bench -m $M --backend vulkan -p 0 -n 128 -r 2 --tune attn_dec_min=$a > "$O/tg-$a.txt" 2>&1
  timeout 40 $Z bench -m $M --backend vulkan -npl 1,8 -npp 128 -ntg 64 --tune attn_dec_min=$a > "$O/npl-$a.txt" 2>&1
  echo "attn_dec_min=$a: $(grep -E '^tg' "$O/tg-$a.txt" | tr -s ' ') | $(grep -E '^\|   128' "$O/npl-$a.txt" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done
