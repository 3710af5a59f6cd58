#!/usr/bin/env bash
# s37's next call (not run): build .dev/tvo (SUITE=test_vk_ops TVL=tvo bash bench/device-build.sh
# test_matmat_f16_grouped test_moe_grouped test_cm2_cfg_grouped), carry .dev and .gl.
#   - a first run's time with cold caches, the init's pipelines on 1 and on 16 threads (new in e0a9bd0);
#   - the device's coopmat2 granularity (--list-devices, new in 7bdfd44): if it is 32 x 32 x 16, the 16-token half
#     tiles were off it and a 32 x 32 accumulator (which failed in s36) was within it;
#   - the grouped op tests at HEAD, every config, both paths (each must pass: half tiles now keep the 32 grain);
#   - the 35B-A3B's grouped tiles: pp512 on 128 x 64 (default) with and without the copy, pp4096 (128 tokens an
#     expert: 64 x 128 by default) against 128 x 128 and 128 x 64.
# Then, as the budget allows: load.sh (issue 14's server under load), sbs.sh of s36 for all three shapes and
# every test (issue 15), npl.sh of s36 (issue 14's table).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
.dev/zinc --list-devices
syn qwen3-8b
# a first run with cold caches (zinc's pipeline cache and the driver's, both under XDG_CACHE_HOME): the init's
# pipelines on 1 thread, then on 16 at once (e0a9bd0), then warm
wall() { local t0=$EPOCHREALTIME; "$@" 2>&1 | grep -E "^pp" | tr -s ' '; echo "  ${*:1:2}: $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
for t in 1 16; do d=$(mktemp -d); echo "cold caches, --threads $t:"
  wall env XDG_CACHE_HOME=$d timeout 200 .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan --threads $t -p 8 -n 0 -r 1; done
echo "warm:"; wall env XDG_CACHE_HOME=$d .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 8 -n 0 -r 1
(syn qwen3.5-35b-a3b) &
timeout 300 .dev/tvo > $O/tvo.txt 2>&1; echo "tvo rc $?"; grep -E "^(ok|FAIL)|CHECK|vk_ops:" $O/tvo.txt | head -30
wait
b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null; b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null
for i in 1 2; do
  for c in poll=on moe_prep_tok=1; do b qwen3.5-35b-a3b zinc $c "-p 512"; done
  for c in poll=on cm2_moe_cfg=1 cm2_moe_cfg=5; do b qwen3.5-35b-a3b zinc $c "-p 4096"; done
done
