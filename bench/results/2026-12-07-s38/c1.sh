#!/usr/bin/env bash
# s38 call 1 (1fc6b0c): s37's next.sh, trimmed, then s37's load.sh. Carry .dev (zinc, zinc-load, tvo: SUITE=test_vk_ops
# TVL=tvo bash bench/device-build.sh test_matmat_f16_grouped test_moe_grouped test_cm2_cfg_grouped) and .gl.
#   - the coopmat2 granularity the driver reports (--list-devices);
#   - a first run with cold caches: the init's pipelines on 1 thread, then on 16 (e0a9bd0);
#   - the grouped op tests at HEAD (tvo) while the 35B file is made;
#   - the 35B-A3B's grouped tiles: pp512 with and without the copy; pp4096 on 64 x 128 (default), 128 x 128, 128 x 64;
#   - issue 14's server under load (s37's load.sh): synth 8B, 1 / 8 / 32 clients, system prompt of 0 and 400 words.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat .dev/commit
.dev/zinc --list-devices 2>&1 | tee $O/devices.txt
t0=$EPOCHREALTIME; syn qwen3-8b; echo "synth 8B: $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"
wall() { local t0=$EPOCHREALTIME; "$@" 2>&1 | grep -E "^pp|pipelines" | tr -s ' '; echo "  ${*:1:2}: $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
echo "cold caches, --threads 1:"; wall env XDG_CACHE_HOME=$(mktemp -d) timeout 150 .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan --threads 1 -p 8 -n 0 -r 1
echo "cold caches, --threads 16:"; wall timeout 150 .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan --threads 16 -p 8 -n 0 -r 1
echo "warm:"; wall .dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 8 -n 0 -r 1
(syn qwen3.5-35b-a3b) &
timeout 110 .dev/tvo > $O/tvo.txt 2>&1; echo "tvo rc $?"; grep -E "^(ok|FAIL)|CHECK|vk_ops:|passed" $O/tvo.txt | head -30
wait
b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null
for c in poll=on moe_prep_tok=1; do b qwen3.5-35b-a3b zinc $c "-p 512"; done
for c in poll=on cm2_moe_cfg=1 cm2_moe_cfg=5; do b qwen3.5-35b-a3b zinc $c "-p 4096"; done
for sw in 0 400; do
  echo "== system words $sw $(date +%T)"
  SYSTEM_WORDS=$sw CTX=2048 OUT=$O/load-$sw COMMIT=$(cat .dev/commit) timeout 150 tools/load/h200.sh .dev/zinc .dev/zinc-load \
    /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -6
  grep -E "^zinc_prefix_cache_(hits|misses|reused)" $O/load-$sw/zinc-metrics.txt
done
echo "end $(date +%T)"
