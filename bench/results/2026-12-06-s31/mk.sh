#!/usr/bin/env bash
# s31's device copies: .dev/zinc, .dev/tvl (test_vk_layers holding only test_attention_mm: prefill attention on
# cooperative matrices, which lavapipe only emulates), .dev/vk-attn, built by bench/device-build.sh.
exec bash "$(dirname "$0")/../../device-build.sh" test_attention_mm
