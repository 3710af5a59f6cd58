#!/usr/bin/env bash
# For the next lease's first call (s28's device time is spent). Build .dev (bash .dev/mk.sh, as
# bench/results/2026-12-06-s26/mk.sh, at faa2bf8 or later; .dev holding only zinc, zinc-base and this script: about 49 MB with .ll) and carry
# [".dev", ".gl", ".ll"].
# (1) attn_wgs 264 moves the 2-KV-head shapes (2B, 35B) from 256 to 128 decode-attention splits at depth 32768:
#     unmeasured (s28: 64 splits cost the 2B 8 %, the 35B 1.5 %). off / 264 / 528, alternated.
# (2) the 8B's tg64@32768 side by side with llama.cpp CUDA (s27: 0.80; s28 call 4: attn_wgs +11 % on zinc alone).
# (3) c003d32 (Qwen3.5-MoE: the shared expert before the routed ones, 1 barrier fewer per layer) untimed: the 35B's
#     tg128, .dev/zinc-base (mk.sh at c003d32^ = 4b92864) against .dev/zinc, alternated.
# (4) the merged layout (zinc synth --gate-up, as llama.cpp's qwen35moe fixtures): the 35B's tg128 and pp512 against
#     the separate gate and up of (3) (decode: the same barriers, one gate_up dispatch instead of two per layer; the
#     merged SwiGLU goes into the down experts' mat-vec and grouped GEMM alike, 09de73f).
. bench/device-env.sh
Z=.dev/zinc
[ -d .ll ] && mkdir -p /tmp/ll && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll &
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1 &
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/q35.gguf > /dev/null 2>&1 &
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/q8b.gguf > /dev/null 2>&1 &
wait
L=$(dirname "$(find /tmp/ll -name llama-bench 2>/dev/null | head -1)"); [ "$L" = . ] && L=
for r in 1; do for m in q2b q35; do for t in attn_wgs=off attn_wgs=264 attn_wgs=528; do
  echo "$m $t: $(timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 32768 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done; done
echo "8B zinc: $(timeout 60 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 32768 2>&1 | grep -E '^tg' | tr -s ' ')"
[ -n "$L" ] && LD_LIBRARY_PATH=$L timeout 60 "$L/llama-bench" -m /tmp/q8b.gguf -ngl 99 -fa 1 -r 2 -p 0 -n 64 -d 32768 2>&1 | grep -E 'tg64|error' | tail -2
if [ -x .dev/zinc-base ]; then
  for r in 1 2; do for b in zinc-base zinc; do
    echo "35B $b: $(timeout 90 .dev/$b bench -m /tmp/q35.gguf --backend vulkan -p 0 -n 128 -r 3 2>&1 | grep -E '^tg|^step .*barriers' | tr -s ' ' | tr '\n' ' ')"
  done; done
fi
rm -f /tmp/q2b.gguf /tmp/q8b.gguf
$Z synth --like qwen3.5-35b-a3b --type q4_k_m --gate-up -o /tmp/q35gu.gguf > /dev/null 2>&1
for m in q35 q35gu; do
  echo "$m: $(timeout 90 $Z bench -m /tmp/$m.gguf --backend vulkan -p 512 -n 128 -r 3 2>&1 | grep -E '^tg|^pp' | tr -s ' ' | tr '\n' ' ')"
done
