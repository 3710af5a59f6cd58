#!/usr/bin/env bash
# s29 call 2: attn_rope (8cddfd3 + ca3dc3d: decode attention takes in the ropes of q and K and the KV store, and
# qwen35's q gather), on against off in one binary, alternated, on the 8B and 2B shapes (the 35B left out for device time); prefill attention tile
# configs at depth 3584 (s28: 40 % of a 512-token chunk there); then the 8B's decode side by side with llama.cpp
# CUDA (side-by-side.sh, carried in .dev). Carry [".dev", ".gl", ".ll"] (.dev: zinc, side-by-side.sh, this script).
. bench/device-env.sh
Z=.dev/zinc
mkdir -p /tmp/ll /tmp/sbs-models && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll &
S=/tmp/sbs-models
$Z synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
$Z synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
wait
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
ab() { # model reps
  for r in $(seq "$2"); do for t in attn_rope=off attn_rope=on; do
    echo "$1 tg128 $t: $(timeout 90 $Z bench -m $S/$1.gguf --backend vulkan -p 0 -n 128 -r 3 --tune $t 2>&1 | grep -E '^tg|^step .*barriers' | tr -s ' ' | tr '\n' ' ')"
  done; done
}
ab qwen3-8b 2; ab qwen3.5-2b 2
for t in fa_cfg=auto fa_cfg=2 fa_cfg=4 fa_cfg=3; do
  echo "qwen3-8b pp512@3584 $t: $(timeout 90 $Z bench -m $S/qwen3-8b.gguf --backend vulkan -p 512 -n 0 -r 2 --depth 3584 --tune $t 2>&1 | grep -E '^pp' | tr -s ' ')"
done
TESTS="tg128 tg64@32768" REPS=2 LLAMA_DIR=$(dirname "$(find /tmp/ll -name llama-bench | head -1)") OUTDIR=$O \
  timeout 240 bash .dev/side-by-side.sh $Z qwen3-8b 2>&1 | tail -5
