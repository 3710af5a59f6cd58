#!/usr/bin/env bash
# s26 call 1: cm2 split-K test; bisect the 8B prefill / 32-seq decode slowdown across builds; profile of HEAD's pp512
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
[ -f /tmp/qwen3-8b.gguf ] || ( $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err" ) & sp=$!
timeout 150 .dev/tvo-split > "$O/split.txt" 2>&1; echo "test_matmat_split rc $?: $(tail -1 "$O/split.txt")"; grep -E "FAIL|CHECK|nmse" "$O/split.txt" | head -5
wait $sp; echo "synth done $(date -u +%T)"
for b in 0a1e74a c11af1d 6f1433a b5af14d HEAD; do
  bin=.dev/zinc-$b; [ $b = HEAD ] && bin=$Z
  timeout 40 $bin bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 32 -r 2 > "$O/pp-$b.txt" 2>&1
  timeout 40 $bin bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 32 > "$O/bb-$b.txt" 2>&1
  echo "$b: $(grep -E '^(pp|tg)' "$O/pp-$b.txt" | tr -s ' ' | tr '\n' ' ') | $(grep -E '^\|   128' "$O/bb-$b.txt" | awk -F'|' '{printf "npl%s PP %s TG %s", $4, $7, $10}')"
done
timeout 40 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 4 -r 1 --profile > "$O/prof-head.txt" 2>&1
timeout 40 .dev/zinc-0a1e74a bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 4 -r 1 --profile > "$O/prof-0a1e.txt" 2>&1
grep -A8 "prefill of 512" "$O/prof-head.txt" | head -9; grep -A8 "prefill of 512" "$O/prof-0a1e.txt" | head -9
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune mm_split_wgs=2112 > "$O/bb-split.txt" 2>&1
echo "HEAD split 2112: $(grep -E '^\|   128' "$O/bb-split.txt" | awk -F'|' '{printf "npl%s PP %s TG %s | ", $4, $7, $10}')"
