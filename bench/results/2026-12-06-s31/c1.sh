#!/usr/bin/env bash
# s31 call 1: attn_fa_sg.glsl (a subgroup per 16 rows) on the H100: its op test on cooperative matrices, vk-attn's
# per-config timings, and the 8B's pp4096 / pp512 at depth 3584 with fa_cfg auto (attn_fa_cm 16 x 32) against 8
# (sg 64 x 32) and 9 (sg 32 x 32), alternated.
. bench/device-env.sh
Z=.dev/zinc; f=/tmp/sbs-models/qwen3-8b.gguf
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
cat .dev/commit
echo "== tvl"; timeout 240 .dev/tvl 2>&1 | tail -4
echo "== vk-attn 512"; timeout 120 .dev/vk-attn 512 20 0 2>&1
echo "== vk-attn 512 after 3584"; timeout 120 .dev/vk-attn 512 10 3584 2>&1 | grep -v "^2B\|^35B"
mkdir -p /tmp/sbs-models; [ -f $f ] || $Z synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
for a in "-p 4096" "-p 512 --depth 3584"; do for t in auto 8 9 auto 8 9; do
  echo "8B $a fa_cfg=$t: $(timeout 60 $Z bench -m $f --backend vulkan $a -n 0 -r 2 --tune fa_cfg=$t 2>&1 | grep -E '^pp' | tr -s ' ')"
done; done
