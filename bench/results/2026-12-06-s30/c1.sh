#!/usr/bin/env bash
# s30 call 1. (1) test_matmat_cm2 + test_matmat_split on the GPU (the AQS configs 8-11: k tiles in flight 2 / 3);
# (2) batched decode 8B / 2B at 32 and 64 sequences, AQS tiles in flight 1 (auto) / 2 / 3 (configs 4 / 8 / 9 at
#     32, 5 / 10 / 11 at 64);
# (3) the RMS norm folded into the f16 GEMM's x conversion: .dev/zinc0 (cde529e, without) against .dev/zinc;
# (4) a profile of the 8B's 32-sequence step, auto and config 9.
. bench/device-env.sh
Z=.dev/zinc
nvidia-smi --query-gpu=name,clocks.sm,persistence_mode --format=csv,noheader; cat .dev/commit
S=/tmp/m; mkdir -p $S
$Z synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
$Z synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
timeout 150 .dev/tvo-cm2 > "$O/tvo-cm2.txt" 2>&1; echo "tvo-cm2 rc $?: $(tail -1 "$O/tvo-cm2.txt")"
grep -E "FAIL|nmse" "$O/tvo-cm2.txt" | head -8
wait
tg() { grep -E '^\|   128' "$1" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}'; }
for m in qwen3-8b qwen3.5-2b; do
  for c in auto 8 9; do
    timeout 40 $Z bench -m $S/$m.gguf --backend vulkan -npl 32 -npp 128 -ntg 32 --tune cm2_cfg=$c > "$O/b32-$m-$c.txt" 2>&1
    echo "$m cm2_cfg=$c: $(tg "$O/b32-$m-$c.txt")"
  done
  for c in auto 10 11; do
    timeout 40 $Z bench -m $S/$m.gguf --backend vulkan -npl 64 -npp 128 -ntg 32 --tune cm2_cfg=$c > "$O/b64-$m-$c.txt" 2>&1
    echo "$m cm2_cfg=$c: $(tg "$O/b64-$m-$c.txt")"
  done
  for z in zinc0 zinc zinc0 zinc; do
    timeout 40 .dev/$z bench -m $S/$m.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 > "$O/n-$m-$z.txt" 2>&1
    echo "$m $z: $(tg "$O/n-$m-$z.txt")"
    echo "$m $z pp512: $(timeout 40 .dev/$z bench -m $S/$m.gguf --backend vulkan -p 512 -n 0 -r 2 2>&1 | grep -E '^pp' | tr -s ' ')"
  done
done
for c in auto 9; do
  timeout 40 $Z bench -m $S/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 4 --profile --tune cm2_cfg=$c > "$O/prof32-$c.txt" 2>&1
  echo "profile cm2_cfg=$c:"; grep -A8 "prefill of 32 token(s) at position 13[0-9]" "$O/prof32-$c.txt" | head -9
done
