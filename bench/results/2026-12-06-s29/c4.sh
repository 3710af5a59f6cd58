#!/usr/bin/env bash
# s29 call 4: attn_rope off against on after the carried angle (RopeTh), 8B and 2B tg128, alternated. Carry [".dev", ".gl"].
. bench/device-env.sh
Z=.dev/zinc
S=/tmp/sbs-models; mkdir -p $S
[ -f $S/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
[ -f $S/qwen3.5-2b.gguf ] || $Z synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
wait
for m in qwen3-8b qwen3.5-2b; do for t in attn_rope=off attn_rope=on attn_rope=off attn_rope=on; do
  echo "$m tg128 $t: $(timeout 40 $Z bench -m $S/$m.gguf --backend vulkan -p 0 -n 128 -r 2 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done
