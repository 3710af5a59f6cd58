#!/bin/bash
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc; f=/tmp/q8b.gguf
$Z synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
for t in default mm_min_tok=9 mm_min_tok=33 mm_min_tok=65; do
  a=(); [ $t != default ] && a=(--tune $t)
  echo "== $t"
  timeout 60 $Z bench -m $f --backend vulkan -npl 8,32 -npp 128 -ntg 128 "${a[@]}" 2>&1 | grep -E "^\|  *128"
done
