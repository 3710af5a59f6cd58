#!/usr/bin/env bash
# s31 call 3: the candidate (.dev/zinc: attn_fa_sg.glsl from 1024 keys, fa_sg_kv) against 108ca54 (.dev/zinc0), and
# .dev/zinc-u (the sg kernel with [[unroll]] and independent S chains, its config 8 = sg 64 x 32, and fa_dbg to leave
# parts out: 1 no K/V loads, 2 no S, 4 no softmax, 8 no P V, 16 no tile swap; wrong results, timing only). 8B.
. bench/device-env.sh
f=/tmp/sbs-models/qwen3-8b.gguf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
echo "== tvl"; timeout 240 .dev/tvl 2>&1 | tail -2
mkdir -p /tmp/sbs-models; [ -f $f ] || .dev/zinc synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
b() { echo "8B $3 $1 $2: $(timeout 60 .dev/$1 bench -m $f --backend vulkan $3 -n 0 -r 2 --tune $2 2>&1 | grep -E '^pp' | tr -s ' ')"; }
for a in "-p 4096" "-p 512 --depth 3584"; do for i in 1 2; do b zinc0 fa_cfg=auto "$a"; b zinc fa_cfg=auto "$a"; done; done
for d in 0 1 2 4 8 16; do b zinc-u fa_cfg=8,fa_dbg=$d "-p 4096"; done
