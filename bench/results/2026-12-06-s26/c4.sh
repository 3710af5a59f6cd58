#!/usr/bin/env bash
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
i=0
for b in base new; do for t in cm2_cfg=auto; do
  bin=.dev/zinc-base; [ $b = new ] && bin=$Z
  i=$((i+1))
  timeout 60 $bin bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune $t > "$O/t$i.txt" 2>&1
  echo "$b $t rc $?: $(grep -E '^\|   128' "$O/t$i.txt" | awk -F'|' '{printf "npl%s PP %s TG %s | ", $4, $7, $10}')"
done; done
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 4 --profile > "$O/prof.txt" 2>&1
grep -A8 "prefill of 32 token(s) at position 13[0-9]" "$O/prof.txt" | tail -9
timeout 200 .dev/tvo-cm2 > "$O/cm2.txt" 2>&1; echo "test_matmat_cm2 rc $?: $(tail -1 $O/cm2.txt)"; grep -E "FAIL|CHECK|nmse" "$O/cm2.txt" | head
