#!/usr/bin/env bash
# s36's next call (not run): before any speed, the GEMM op tests on NV cooperative matrix 2, unfiltered, with
# time for all of them. Build .dev/tvo at HEAD: SUITE=test_vk_ops TVL=tvo bash bench/device-build.sh
# test_matmat_cm2 test_matmat_f16_grouped test_moe_grouped test_cm2_cfg_grouped test_tiled_split; carry .dev, .gl.
#   - the grouped tests: since 318b5d9 no cm2 config holds an accumulator under 2,048 values (the rule that fits
#     every failure of s36 call 2); every config and type must now pass, or the rule is wrong;
#   - test_matmat_cm2: the dense tiles, 32 x 64 for batched decode steps of 32-64 sequences among them.
#   A failure: rerun the same tests at 2b4906c (before the rule) for the baseline.
# Then the 35B-A3B's pp512 with the grouped GEMM's copy (moe_prep_tok=1) and without (the default), both on the
# 64 x 64 tile now, and its profile; then sbs.sh and npl.sh (the llama-batched-bench tarball: the peers' parts
# unpacked, llama-bench, its library and libmtmd removed, repacked with xz -9 into .dev-keep/llb/batched.tar.xz).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
timeout 400 .dev/tvo > $O/tvo.txt 2>&1; grep -E "^(ok|FAIL)|failed|run:|vk_ops:" $O/tvo.txt | head -60
syn qwen3.5-35b-a3b; b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null; b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null
for i in 1 2; do for c in moe_prep_tok=1 poll=on; do b qwen3.5-35b-a3b zinc $c "-p 512"; done; done
timeout 60 .dev/zinc bench -m /tmp/sbs-models/qwen3.5-35b-a3b.gguf --backend vulkan -p 512 -n 0 -r 1 --profile > $O/prof.txt 2>&1
awk '/prefill of 512/{n++} n==2' $O/prof.txt | head -16
