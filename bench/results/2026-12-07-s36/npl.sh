#!/usr/bin/env bash
# issue 14's table, aggregate decode at 1 / 8 / 32 / 64 sequences (128-token prompts, 128 generated):
# zinc bench -npl (Vulkan, .dev/zinc) and llama-batched-bench (CUDA, the peers' build) on the same synth files,
# shape by shape. Carry .dev, .gl and .dev-keep/llb (the peers' tarball holding only llama-batched-bench and its
# libraries: with llama-bench too it would not fit one carry beside the tree).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
mkdir -p /tmp/llb && tar -xJf .dev-keep/llb/batched.tar.xz -C /tmp/llb; L=/tmp/llb/llama-cuda
for s in ${SHAPES:-qwen3.5-35b-a3b qwen3-8b qwen3.5-2b}; do
  syn $s; echo "== $s $(date +%T)"
  timeout 150 .dev/zinc bench -m /tmp/sbs-models/$s.gguf --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 2>&1 \
    | tee $O/zinc-$s.txt | grep -E '^\|'
  LD_LIBRARY_PATH=$L timeout 150 $L/llama-batched-bench -m /tmp/sbs-models/$s.gguf -ngl 99 -fa on -c 20480 -b 2048 \
    -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 2>&1 | tee $O/llama-$s.txt | grep -E '^\|'
done
echo "end $(date +%T)"
