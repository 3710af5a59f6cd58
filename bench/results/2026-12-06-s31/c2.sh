#!/usr/bin/env bash
# s31 call 2: [[unroll]] on the attention kernels' constant loops, and where attn_fa_sg.glsl's time goes.
# .dev/zinc0 is 108ca54 (before both kernels' changes). vk-attn per config; then the 8B's pp4096 with zinc0 against
# auto and fa_cfg 8 (sg 64 x 32), 11 (sg 32 x 64), and cfg 8 with parts of the kernel left out (fa_dbg: 1 no K/V
# loads, 2 no S, 4 no softmax, 8 no P V, 16 no tile swap: wrong results, timing only); --profile's attention rows.
. bench/device-env.sh
Z=.dev/zinc; f=/tmp/sbs-models/qwen3-8b.gguf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
echo "== tvl"; timeout 240 .dev/tvl 2>&1 | tail -2
echo "== vk-attn 512 after 3584"; timeout 120 .dev/vk-attn 512 10 3584 2>&1 | grep -v "KV (\|^2B"
mkdir -p /tmp/sbs-models; [ -f $f ] || $Z synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
b() { echo "8B pp4096 $1 $2: $(timeout 60 $1 bench -m $f --backend vulkan -p 4096 -n 0 -r 2 --tune $2 2>&1 | grep -E '^pp' | tr -s ' ')"; }
for i in 1 2; do b .dev/zinc0 fa_cfg=auto; b $Z fa_cfg=auto; b $Z fa_cfg=8; done
for t in fa_cfg=11 fa_cfg=8,fa_dbg=1 fa_cfg=8,fa_dbg=2 fa_cfg=8,fa_dbg=4 fa_cfg=8,fa_dbg=8 fa_cfg=8,fa_dbg=16; do b $Z $t; done
