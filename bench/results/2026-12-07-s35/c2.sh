#!/usr/bin/env bash
# s35 call 2: the L2 prefetch of the weights after attention / the delta rule (l2_pf MiB; off is the build's
# default), tg128 of the three shapes, alternated twice; the 8B's decode step per op with it.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
for s in qwen3-8b qwen3.5-2b qwen3.5-35b-a3b; do syn $s; done
.dev/zinc bench -m /tmp/sbs-models/qwen3.5-2b.gguf --backend vulkan -p 64 -n 32 -r 1 > /dev/null 2>&1
for s in qwen3-8b qwen3.5-2b qwen3.5-35b-a3b; do
  for i in 1 2; do for c in off 16 32 64; do t $s zinc l2_pf=$c; done; done
done
for c in off 16 32; do
  echo "8B profile l2_pf=$c"
  .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 16 -n 8 -r 1 --profile --tune l2_pf=$c 2>&1 | grep -A10 "position 23" | head -11
done
for i in 1; do for c in off 16 32; do
  echo "8B d4096 l2_pf=$c: $(timeout 120 .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune l2_pf=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done
