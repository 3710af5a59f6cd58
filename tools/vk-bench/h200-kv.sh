#!/usr/bin/env bash
# On the GPU machine (device README), from the repository root: the paged KV cache of 2026-12-05 on a real GPU.
# Needs in .dev/: zinc (this commit) and zinc-old (the commit before paging: 6c51d99), the test binaries named
# below, and the tiny fixtures they read under .dev/shared/models/tiny/ (ZN_SHARED); the Vulkan loader .debs in
# .gl/. About 8 minutes; writes under $OUT, prints a summary.
#   1. correctness: the op tests (scrambled blocks), the engine's pool against own blocks, the Vulkan pool tests
#   2. the cost of the block table in attention: zinc-old against zinc on the same Qwen3-8B synth file, decode
#      at depth 0 and 4096 and pp512, interleaved
#   3. batched decode (-npl 1,8,32,64) with the defaults and with mvt=8 / mm_prep_tok=off
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export ZN_SHARED=$PWD/.dev/shared
{ date -u '+%F %T UTC'; cat .dev/commit 2>/dev/null; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"
Z=.dev/zinc ZO=.dev/zinc-old F=/tmp/qwen3-8b.gguf
( $Z synth --like qwen3-8b --type q4_k_m -o $F > /dev/null 2>&1 ) &
for t in test_vk_ops test_kv_pool test_vk_kvpool; do
  [ -x .dev/$t ] || continue
  timeout 150 .dev/$t > "$O/$t.txt" 2>&1; echo "$t rc $?: $(grep -E "passed, [0-9]+ failed" "$O/$t.txt" | tail -1)"
  grep -E "FAIL|failed:" "$O/$t.txt" | head -8
done
wait
for rep in 1 2; do
  for b in $ZO $Z; do
    timeout 100 $b bench -m $F --backend vulkan -p 512 -n 128 -r 3 > "$O/tg-$rep-${b##*/}.txt" 2>&1
    timeout 100 $b bench -m $F --backend vulkan -p 0 -n 128 --depth 4096 -r 3 > "$O/tgd-$rep-${b##*/}.txt" 2>&1
    echo "== ${b##*/} rep $rep: $(grep -hE "^(pp|tg)" "$O/tg-$rep-${b##*/}.txt" "$O/tgd-$rep-${b##*/}.txt" | tr '\n' ' ')"
  done
done
for tune in default mvt=8 mm_prep_tok=off; do
  T=; [ $tune = default ] || T="--tune $tune"
  timeout 100 $Z bench -m $F --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 $T > "$O/bb-$tune.txt" 2>&1
  echo "== -npl $tune (rc $?)"; grep -E "^\|   128|^steps" "$O/bb-$tune.txt"
done
cat "$O/machine.txt"
