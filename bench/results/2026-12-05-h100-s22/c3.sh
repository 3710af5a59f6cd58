#!/usr/bin/env bash
# vk-matvec at 8 and 16 tokens (the multi-token integer mat-vec's grid), then side-by-side on the given shapes
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for n in 8 16; do
  ZN_BENCH_TOKENS=$n ZN_BENCH_BUDGET_S=80 timeout 120 .dev/vk-matvec > "$O/matvec$n.txt" 2>&1; echo "== vk-matvec $n tokens rc $?"; tail -14 "$O/matvec$n.txt"
done
bash .dev/c2.sh "$@"
