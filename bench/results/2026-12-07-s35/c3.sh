#!/usr/bin/env bash
# s35 call 3: the fused mat-vec's workgroup shape (mvx_wg threads, mvx_wgs workgroups per token) against the
# default (128 threads, 528 workgroups: 16 warps per SM, x staged 528 times), and the pair (mvx=off), tg128.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
for s in qwen3-8b qwen3.5-2b qwen3.5-35b-a3b; do syn $s; done
.dev/zinc bench -m /tmp/sbs-models/qwen3.5-2b.gguf --backend vulkan -p 64 -n 32 -r 1 > /dev/null 2>&1
C="poll=on mvx_wg=512 mvx_wg=256,mvx_wgs=264 mvx_wg=512,mvx_wgs=132 mvx_wg=1024,mvx_wgs=132 mvx_wg=512,mvx_wgs=264 mvx=off"
for i in 1 2; do for c in $C; do t qwen3-8b zinc $c; done; done
for c in $C; do t qwen3.5-2b zinc $c; done
for c in $C; do t qwen3.5-35b-a3b zinc $c; done
