#!/usr/bin/env bash
# s23 call: where batched decode at 32/64 sequences spends its time (8B): GEMM configs at 32/64 tokens,
# a --profile of a 32-sequence step, tune variants end to end.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
( $Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err" ) &
VKB_ONLY_CM2=1 timeout 150 .dev/vk-matmul 32,64 > "$O/matmul.txt" 2>&1; echo "vk-matmul rc $?"
grep -vE "^\s*$" "$O/matmul.txt" | tail -60
wait
timeout 60 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 3 --profile > "$O/prof32.txt" 2>&1; echo "prof rc $?"
awk '/profile: prefill of 32 token/{n++} n==2' "$O/prof32.txt" | head -20
for tune in "" cm2_cfg=3 cm2_cfg=4 cm2_cfg=5 cm2_cfg=6 mm_cm2=off mm_prep_tok=1 mm_min_tok=65; do
  timeout 60 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 ${tune:+--tune $tune} > "$O/t-$tune.txt" 2>&1
  echo "== [$tune] rc $?"; grep -E "^\|   128" "$O/t-$tune.txt"
done
ZN_BENCH_TOKENS=32 ZN_BENCH_BUDGET_S=60 timeout 90 .dev/vk-matvec > "$O/matvec32.txt" 2>&1; echo "== vk-matvec 32 rc $?"; tail -14 "$O/matvec32.txt"
cd "$O" && tar czf all.tgz *.txt && rm -f t-*.txt
