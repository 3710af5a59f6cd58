#!/usr/bin/env bash
# For the next GPU lease (not run: no device time left in s25). Build here first:
#   bash .dev/mk.sh tests/test_vk_ops   (and a test_vk_ops holding only test_matmat_split as .dev/tvo-split: copy
#   tests/test_vk_ops.c with the other RUN() lines removed, link it against build/libzinc.a)
# (1) the coopmat2 kernel's split path on coopmat2 hardware, the condition for turning mm_split_wgs on;
# (2) whether dfcc651 (split-K on its own pipelines) brings back the GEMM speed lost since 6f1433a: 8B S_PP near
#     session 23's 7,841-7,926 and S_TG at 32 / 64 near 1,276 / 1,835 with split off; then split 2112 on top.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
( $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err" ) & sp=$!
timeout 120 .dev/tvo-split > "$O/split.txt" 2>&1; echo "test_matmat_split rc $?: $(tail -1 "$O/split.txt")"
wait $sp
for w in off 2112; do
  timeout 90 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 --tune mm_split_wgs=$w > "$O/8b-$w.txt" 2>&1
  echo "8B split=$w: $(grep -E '^\|   128' "$O/8b-$w.txt" | awk -F'|' '{printf "npl%s PP %s TG %s | ", $4, $7, $10}')"
done
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 128 -r 3 > "$O/8b-pp.txt" 2>&1; grep -E '^(pp|tg)' "$O/8b-pp.txt"
