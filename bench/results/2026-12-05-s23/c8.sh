#!/usr/bin/env bash
# s23 call 4: the int8 GEMM where the f16 GEMM has no NV cooperative matrix 2 (KHR cooperative matrix only: mm_cm2=off)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err" &
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/2b.gguf > /dev/null 2>> "$O/synth.err"; wait
b() { local m=$1 npl=$2 tune=$3; timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan -npl $npl -npp 128 -ntg 32 ${tune:+--tune $tune} > "$O/t.txt" 2>&1
  echo "== $m [$tune] rc $?"; grep -E "^\|   128" "$O/t.txt" | awk -F'|' '{printf "  npl %s: S_TG %s\n", $4, $10}'; grep -iE "error|fail" "$O/t.txt" | head -3; }
for m in 8b 2b; do for tune in mm_cm2=off mm_cm2=off,mmi_min_tok=32,mmi_bn=32 mm_cm2=off,mmi_min_tok=32,mmi_bn=64 ""; do b $m 32,64 "$tune"; done; done
