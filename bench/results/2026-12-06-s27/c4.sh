#!/usr/bin/env bash
# prefill tiles: 128 x 128 beyond long k (cm2_long_k), and Q6_K mat-vec rows/unroll; 8B and 2B
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader; cat .dev/commit
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err" &
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/qwen35-2b.gguf > /dev/null 2>> "$O/synth.err"; wait
n=0
b() { local m=$1; shift; n=$((n+1)); timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan "$@" > "$O/r$n.txt" 2>&1; echo "$m $*: $(grep -E '^(pp|tg)[0-9]' "$O/r$n.txt" | tr -s ' ' | tr '\n' ' ')"; }
for m in qwen3-8b qwen35-2b; do
  for t in cm2_cfg=auto cm2_long_k=1 cm2_cfg=1 cm2_cfg=0 cm2_long_k=1,cm2_min_wgs=64 cm2_long_k=1,cm2_min_wgs=132; do
    b $m -p 512 -n 0 -r 3 --tune $t
  done
  for t in cm2_cfg=auto cm2_long_k=1 cm2_cfg=1; do b $m -p 4096 -n 0 -r 2 --tune $t; done
  for t in mvx_wgs=528 mvx_rows.q6_k=1 mvx_unroll.q6_k=1 mvx_rows.q6_k=1,mvx_unroll.q6_k=1 mvx_rows.q6_k=1,mvx_unroll.q6_k=4 mvx_wgs=528; do
    b $m -p 0 -n 128 -r 3 --tune $t
  done
done
