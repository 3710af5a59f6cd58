#!/usr/bin/env bash
# s30 call 9: fa_cfg 3 ({128,16,32}) against auto, 8B pp512 at depth 0 and 3584 and pp4096, alternated.
. bench/device-env.sh
Z=.dev/zinc; f=/tmp/sbs-models/qwen3-8b.gguf
[ -f $f ] || $Z synth --like qwen3-8b --type q4_k_m -o $f > /dev/null 2>&1
for a in "-p 512 --depth 3584" "-p 4096"; do for t in fa_cfg=auto fa_cfg=3 fa_cfg=auto fa_cfg=3; do
  echo "8B $a $t: $(timeout 30 $Z bench -m $f --backend vulkan $a -n 0 -r 2 --tune $t 2>&1 | grep -E '^pp' | tr -s ' ')"
done; done
