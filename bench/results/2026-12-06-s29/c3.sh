#!/usr/bin/env bash
# s29 call 3: attn_rope off against on at depth 32768 (call 2's side-by-side gave the 8B 128.7 tok/s with it on,
# call 1 140.4 at 61d6fe5 without it: another call). Carry [".dev", ".gl"].
. bench/device-env.sh
Z=.dev/zinc
S=/tmp/sbs-models; mkdir -p $S
[ -f $S/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
[ -f $S/qwen3.5-2b.gguf ] || $Z synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
wait
for m in qwen3-8b qwen3.5-2b; do for r in 1 2; do for t in attn_rope=off attn_rope=on; do
  echo "$m tg32@32768 $t: $(timeout 60 $Z bench -m $S/$m.gguf --backend vulkan -p 0 -n 32 -r 2 --depth 32768 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done; done
for t in attn_rope=off attn_rope=on; do
  echo "qwen3-8b tg32@4096 $t: $(timeout 60 $Z bench -m $S/qwen3-8b.gguf --backend vulkan -p 0 -n 32 -r 2 --depth 4096 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done
