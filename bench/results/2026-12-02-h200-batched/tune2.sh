#!/bin/bash
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
for s in qwen3.5-2b qwen3-8b; do
 f=/tmp/$s.gguf; $Z synth --like $s --type q4_k_m -o $f > /dev/null 2>&1
 for t in default mm_min_tok=13 mm_min_tok=17; do
  a=(); [ $t != default ] && a=(--tune $t)
  echo "== $s $t"
  timeout 60 $Z bench -m $f --backend vulkan -npl 12,16 -npp 128 -ntg 128 "${a[@]}" 2>&1 | grep -E "^\|  *128" | awk -F'|' '{print $4, $10}'
 done
 [ $s = qwen3.5-2b ] && for t in default mm_min_tok=9; do a=(); [ $t != default ] && a=(--tune $t); echo "== $s $t B=8"; timeout 60 $Z bench -m $f --backend vulkan -npl 8 -npp 128 -ntg 128 "${a[@]}" 2>&1 | grep -E "^\|  *128" | awk -F'|' '{print $4, $10}'; done
done
