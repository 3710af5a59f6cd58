#!/usr/bin/env bash
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader
( $Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/qwen35-2b.gguf > /dev/null 2> "$O/synth.err" ) & sp=$!
timeout 240 .dev/tvo-cm2d > "$O/cm2.txt" 2>&1; echo "test_matmat_cm2 (direct, cfgs 3-6) rc $?: $(tail -1 $O/cm2.txt)"; grep -E "coopmat2 GEMM|FAIL|CHECK|nmse" "$O/cm2.txt" | head
wait $sp
for b in base new; do
  bin=.dev/zinc-base; [ $b = new ] && bin=$Z
  timeout 60 $bin bench -m /tmp/qwen35-2b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 > "$O/2b-$b.txt" 2>&1
  echo "2B $b rc $?: $(grep -E '^\|   128' "$O/2b-$b.txt" | awk -F'|' '{printf "npl%s PP %s TG %s | ", $4, $7, $10}')"
done
