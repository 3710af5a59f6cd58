#!/usr/bin/env bash
# 35B with all 256 experts: grouped GEMM tile (cm2_cfg) for pp512, moe_min_tok for batched decode
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc; M=/tmp/sbs-models/qwen3.5-35b-a3b.gguf
[ -f $M ] || { M=/tmp/q35.gguf; $Z synth --like qwen3.5-35b-a3b --type q4_k_m -o $M > /dev/null 2>&1; }
for t in cm2_cfg=auto cm2_cfg=6 cm2_cfg=4 cm2_cfg=3 cm2_cfg=5 cm2_cfg=7; do
  echo "pp512 $t: $(timeout 40 $Z bench -m $M --backend vulkan -p 512 -n 0 -r 2 --tune $t 2>&1 | grep -E '^pp[0-9]' | tr -s ' ')"
done
for t in moe_min_tok=65 moe_min_tok=9 moe_min_tok=17 moe_min_tok=33; do
  echo "npl $t: $(timeout 50 $Z bench -m $M --backend vulkan -npl 8,32,64 -npp 128 -ntg 32 --tune $t 2>&1 | grep -E '^\|   128' | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done
