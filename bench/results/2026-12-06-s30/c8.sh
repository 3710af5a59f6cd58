#!/usr/bin/env bash
# s30 call 8 (s29's next.sh leftovers, short): attn_rope off / on after ba74936 on the 8B's tg128; the prefill
# attention tiles (fa_cfg) at depth 0. The 8B file is the one c2.sh made in this machine's /tmp/sbs-models.
. bench/device-env.sh
Z=.dev/zinc; f=/tmp/sbs-models/qwen3-8b.gguf
[ -f $f ] || $Z synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
for t in attn_rope=off attn_rope=on attn_rope=off attn_rope=on; do
  echo "8B tg128 $t: $(timeout 30 $Z bench -m $f --backend vulkan -p 0 -n 128 -r 2 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done
for t in fa_cfg=auto fa_cfg=3 fa_cfg=2 fa_cfg=auto; do
  echo "8B pp512@0 $t: $(timeout 30 $Z bench -m $f --backend vulkan -p 512 -n 0 -r 2 --tune $t 2>&1 | grep -E '^pp' | tr -s ' ')"
done
