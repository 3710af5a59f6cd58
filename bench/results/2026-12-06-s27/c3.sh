#!/usr/bin/env bash
# free wins by tuning key only: prefill GEMM (dequantised copy vs in-tile, tile configs) and decode mat-vec keys; 8B
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc; M=/tmp/qwen3-8b.gguf
nvidia-smi --query-gpu=name --format=csv,noheader; cat .dev/commit
$Z synth --like qwen3-8b --type q4_k_m -o $M > /dev/null 2> "$O/synth.err"
b() { local tag=$1; shift; timeout 60 $Z bench -m $M --backend vulkan "$@" > "$O/$tag.txt" 2>&1; echo "$tag: $(grep -E '^(pp|tg)[0-9]' "$O/$tag.txt" | tr -s ' ' | tr '\n' ' ')"; }
b pp-first -p 512 -n 0 -r 5
for t in mm_prep_tok=128 mm_prep_tok=1024 mm_prep_tok=1024,cm2_cfg=3 mm_prep_tok=1024,cm2_cfg=7 mm_prep_tok=1024,cm2_cfg=2 mm_prep_tok=1024,cm2_cfg=1 cm2_cfg=1 cm2_cfg=3; do
  b "pp-$t" -p 512 -n 0 -r 3 --tune $t
done
b pp4096 -p 4096 -n 0 -r 2
b pp4096-direct -p 4096 -n 0 -r 2 --tune mm_prep_tok=8192
for t in mvx_wgs=528 mvx_wgs=264 mvx_wgs=1056 mvx_pf=2 mvx_big_mb=20 mvx_rows.q6_k=1 mvx_unroll=4 mvx_unroll.q6_k=1 mvx_wg=256 mvx_wg=64; do
  b "tg-$t" -p 0 -n 128 -r 2 --tune $t
done
