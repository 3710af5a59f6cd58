#!/usr/bin/env bash
# s30's device copies: .dev/zinc and .dev/tvo-cm2 (test_vk_ops holding only test_matmat_cm2 and test_matmat_split:
# the coopmat2 GEMM, which lavapipe cannot run), built by bench/device-build.sh (which also builds .dev/vk-attn).
SUITE=test_vk_ops TVL=tvo-cm2 exec bash "$(dirname "$0")/../../device-build.sh" test_matmat_cm2 test_matmat_split
