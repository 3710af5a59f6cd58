#!/usr/bin/env bash
# s34 call 2: where call 1's decode regression comes from. tg128 of the 35B (256 experts) and the 2B, alternated
# twice: e6f07fa's zinc (zinc0), ed97560's (zincS: this session's start), and 71bb09d's (zinc: the routing and the
# gated norm in pipelines of their own, the tail and the routing off) with its defaults and with the DeltaNet's
# two fusions off too.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg|^step .*dispatches' | tr -s ' ' | tr '\n' ' ')"; }
syn qwen3.5-35b-a3b
for i in 1 2; do for c in "zinc0 poll=on" "zincS poll=on" "zinc poll=on" "zinc mv_conv=off,mv_gnorm=off"; do t qwen3.5-35b-a3b $c; done; done
syn qwen3.5-2b
for i in 1 2; do for c in "zinc0 poll=on" "zincS poll=on" "zinc poll=on" "zinc mv_conv=off,mv_gnorm=off"; do t qwen3.5-2b $c; done; done
