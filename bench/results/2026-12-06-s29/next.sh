#!/usr/bin/env bash
# For the next lease's first call (s29's device time is spent). Build .dev (bash .dev/mk.sh, as
# bench/results/2026-12-06-s26/mk.sh, at ba74936 or later), copy ../shared/peers/side-by-side.sh and this script
# into .dev, carry [".dev", ".gl", ".ll"] (about 63 MiB with the tracked tree: one zinc only).
# (1) attn_rope off / on after ba74936 (the angle carried between a thread's dims), 8B and 2B tg128: s29 call 2
#     measured 8cddfd3 + ca3dc3d at -0.5 % (8B) / +0.5 % (2B), call 3 +1.6 % / +1.2 % at depth 32768.
# (2) prefill attention tiles (fa_cfg) on the 8B at depth 0 and 3584: s29 call 2 gave {128,16,32} (3) and
#     {128,64,32} (2) +5 % over auto {128,32,32} at 3584; depth 0 unmeasured.
# (3) the issue-15 table for the 2B (s29 measured only the 8B's decode: 0.87 / 0.83); the 35B's needs a call of its
#     own (side-by-side.sh $Z qwen3.5-35b-a3b: twenty 20 GB loads).
. bench/device-env.sh
Z=.dev/zinc
S=/tmp/sbs-models; mkdir -p /tmp/ll $S && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll &
$Z synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
$Z synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
wait
for m in qwen3-8b qwen3.5-2b; do for t in attn_rope=off attn_rope=on attn_rope=off attn_rope=on; do
  echo "$m tg128 $t: $(timeout 60 $Z bench -m $S/$m.gguf --backend vulkan -p 0 -n 128 -r 2 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done
for d in 0 3584; do for t in fa_cfg=auto fa_cfg=3 fa_cfg=2; do
  echo "qwen3-8b pp512@$d $t: $(timeout 60 $Z bench -m $S/qwen3-8b.gguf --backend vulkan -p 512 -n 0 -r 2 --depth $d --tune $t 2>&1 | grep -E '^pp' | tr -s ' ')"
done; done
REPS=2 LLAMA_DIR=$(dirname "$(find /tmp/ll -name llama-bench | head -1)") OUTDIR=$O \
  timeout 330 bash .dev/side-by-side.sh $Z qwen3.5-2b 2>&1 | tail -7
