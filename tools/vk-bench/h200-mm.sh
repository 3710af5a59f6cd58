#!/usr/bin/env bash
# The H200 runs the matmul work of 2026-12-05 still needs (no device was lent that session): on the GPU machine,
# from the repository root, with the binaries built on the dev box in .dev/ (zinc, test_vk_ops, vk-matmul,
# vk-matvec: `make tools`, copied and stripped) and the Vulkan loader .debs in .gl/ (device README); optionally
# the llama.cpp CUDA parts in .dev/ (../shared/peers/llama-cuda-sm90.tar.xz.part*) for llama-batched-bench.
# About 8 minutes; writes under $OUT, prints a summary.
#   1. correctness: test_vk_ops on NV cooperative matrix 2 (the A tiles dequantised in the GEMM, the new tiles,
#      the multi-token mat-vec)
#   2. kernels: vk-matmul at 512, 64 and 32 tokens, prep vs direct in every cm2 tile; vk-matvec at 8 tokens
#   3. end to end on the Qwen3-8B shape: batched decode at 1/8/32/64 with the defaults, mvt=8 (8 tokens per
#      workgroup; GPUs default to 1 until this run), mm_prep_tok=off (direct GEMM), both; pp512 prep vs direct;
#      llama-batched-bench.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
{ date -u '+%F %T UTC'; cat .dev/commit 2>/dev/null; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"
Z=.dev/zinc F=/tmp/qwen3-8b.gguf
( $Z synth --like qwen3-8b --type q4_k_m -o $F > /dev/null 2>&1 ) &
timeout 150 .dev/test_vk_ops > "$O/test_vk_ops.txt" 2>&1; echo "test_vk_ops rc $?"; grep -E "FAIL|failed:|passed" "$O/test_vk_ops.txt" | head -20
VKB_ONLY_CM2=1 timeout 200 .dev/vk-matmul 512,64,32 10 > "$O/matmul.txt" 2>&1; echo "vk-matmul rc $?"; grep -E "^---|auto" "$O/matmul.txt"
[ -x .dev/vk-matvec ] && { ZN_BENCH_TOKENS=8 ZN_BENCH_QUICK=1 timeout 120 .dev/vk-matvec > "$O/matvec8.txt" 2>&1; echo "vk-matvec rc $?"; tail -12 "$O/matvec8.txt"; }
wait
for tune in default mvt=8 mm_prep_tok=off mvt=8,mm_prep_tok=off; do
  T=; [ $tune = default ] || T="--tune $tune"
  timeout 120 $Z bench -m $F --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 $T > "$O/bb-$tune.txt" 2>&1
  echo "== -npl $tune (rc $?)"; grep -E "^\|   128|^steps" "$O/bb-$tune.txt"
done
for tune in mm_prep_tok=1 mm_prep_tok=off; do
  timeout 90 $Z bench -m $F --backend vulkan -p 512 -n 0 -r 3 --tune $tune > "$O/pp-$tune.txt" 2>&1
  echo "== pp512 $tune (rc $?)"; grep -E "^pp" "$O/pp-$tune.txt"
done
if ls .dev/llama-cuda-sm90.tar.xz.part* > /dev/null 2>&1; then
  mkdir -p /tmp/ll && cat .dev/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll
  LD_LIBRARY_PATH=/tmp/ll/llama-cuda timeout 120 /tmp/ll/llama-cuda/llama-batched-bench -m $F -ngl 99 -fa on -c 20480 -b 2048 \
    -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > "$O/llama-bb.txt" 2>&1
  echo "== llama-batched-bench (rc $?)"; grep -E "^\|   128" "$O/llama-bb.txt"
fi
cat "$O/machine.txt"
