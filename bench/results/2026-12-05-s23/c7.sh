#!/usr/bin/env bash
# s23 call 3: the int8 GEMM of Q4_K weights (mmi8.comp, tuning mmi_*) in batched decode
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err"
( $Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/2b.gguf > /dev/null 2>> "$O/synth.err"; $Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/35b.gguf > /dev/null 2>> "$O/synth.err" ) &
b() { local m=$1 npl=$2 tune=$3; timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan -npl $npl -npp 128 -ntg 32 ${tune:+--tune $tune} > "$O/t.txt" 2>&1
  echo "== $m [$tune] rc $?"; grep -E "^\|   128" "$O/t.txt" | awk -F'|' '{printf "  npl %s: S_TG %s\n", $4, $10}'; grep -iE "error|fail" "$O/t.txt" | head -3; }
for tune in "" mmi_min_tok=16 mmi_min_tok=16,mmi_bn=32 mmi_min_tok=8,mmi_bn=32 mmi_min_tok=16,mmi_bn=48 mmi_min_tok=2,mmi_bn=16; do
  b 8b 8,16,32,64 "$tune"
done
timeout 60 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 3 --profile --tune mmi_min_tok=16 > "$O/prof32.txt" 2>&1; echo "prof rc $?"
awk '/profile: prefill of 32 token/{n++} n==2' "$O/prof32.txt" | head -14
timeout 60 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 64 -npp 128 -ntg 3 --profile --tune mmi_min_tok=16 > "$O/prof64.txt" 2>&1; echo "prof64 rc $?"
awk '/profile: prefill of 64 token/{n++} n==2' "$O/prof64.txt" | head -14
wait
for m in 2b 35b; do for tune in "" mmi_min_tok=16 mmi_min_tok=16,mmi_bn=32; do b $m 8,32,64 "$tune"; done; done
