#!/usr/bin/env bash
# s36 call 2 (.dev/zinc = ac6bc1d, .dev/zincA = b6cd9a8), in order of need since the device minutes are nearly
# spent: the grouped GEMM tests on the GPU (.dev/tvo: test_matmat_f16_grouped and test_moe_grouped, both GEMM
# paths, NV coopmat2 included); the 35B-A3B's pp512, alternated twice: zincA (the grouped direct GEMM's B by
# tensor-layout loads), zinc (B through shared memory, AQS), zinc with the tiled f32 kernel's split-K off
# (mt_split_k=off: the MoE router's prefill); then zinc's pp512 per op (--profile). Carry .dev and .gl.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit .dev/commitA
timeout 80 .dev/tvo 2>&1 | grep -E "^(ok|FAIL)|CHECK|vk_ops:" | head -20
M=/tmp/sbs-models/qwen3.5-35b-a3b.gguf
syn qwen3.5-35b-a3b; b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null
for i in 1 2; do for z in zincA zinc; do b qwen3.5-35b-a3b $z poll=on "-p 512"; done; b qwen3.5-35b-a3b zinc mt_split_k=off "-p 512"; done
timeout 40 .dev/zinc bench -m $M --backend vulkan -p 512 -n 0 -r 1 --profile > $O/prof.txt 2>&1
echo "== $(grep -E '^pp512|pipelines' $O/prof.txt | tr '\n' ' ')"; awk '/prefill of 512/{n++} n==2' $O/prof.txt | head -14
echo "end $(date +%T)"
