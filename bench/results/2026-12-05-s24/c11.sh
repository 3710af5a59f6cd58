#!/usr/bin/env bash
# s24 (not run: no GPU that session): split-K GEMM (mm_split_wgs) correctness on cm2/coopmat (test_vk_ops, built by
# `bash .dev/mk.sh tests/test_vk_ops`, includes test_matmat_split and test_matmat_cm2), then a sweep of
# mm_split_wgs on the 8B and 2B at 32/64 sequences (-ntg 32), everything else default.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
( $Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err"; $Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/2b.gguf > /dev/null 2>> "$O/synth.err" ) & sp=$!
timeout 300 .dev/test_vk_ops > "$O/vk_ops.txt" 2>&1; echo "test_vk_ops rc $?"; grep -E "FAIL|failed|vk_ops:" "$O/vk_ops.txt" | tail -6
wait $sp
for m in 8b 2b; do
  for w in off 264 528 1056 2112; do
    timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune mm_split_wgs=$w > "$O/bb-$m-$w.txt" 2>&1
    echo "$m mm_split_wgs=$w rc $?: $(grep -E '^\|   128' "$O/bb-$m-$w.txt" | awk -F'|' '{printf "npl%s %s  ", $4, $10}')"
  done
done
cd "$O" && tar czf all.tgz bb-* && rm -f bb-*
