#!/usr/bin/env bash
# s30 call 2: the RMS norm folded into the f16 GEMM's x conversion alone (the AQS loop back as in cde529e):
# .dev/zinc0 (cde529e) against .dev/zinc, 8B and 2B, batched decode at 32 / 64 sequences and pp512, alternated.
. bench/device-env.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader; cat .dev/commit
S=/tmp/m; mkdir -p $S
.dev/zinc synth --like qwen3-8b --type q4_k_m -o $S/qwen3-8b.gguf > /dev/null 2>&1 &
.dev/zinc synth --like qwen3.5-2b --type q4_k_m -o $S/qwen3.5-2b.gguf > /dev/null 2>&1 &
wait
tg() { grep -E '^\|   128' "$1" | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}'; }
for m in qwen3-8b qwen3.5-2b; do for z in zinc0 zinc zinc0 zinc; do
  timeout 40 .dev/$z bench -m $S/$m.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 > /tmp/n.txt 2>&1
  echo "$m $z: $(tg /tmp/n.txt)"; cat /tmp/n.txt >> "$O/batched.txt"
  echo "$m $z pp512: $(timeout 40 .dev/$z bench -m $S/$m.gguf --backend vulkan -p 512 -n 0 -r 2 2>&1 | grep -E '^pp' | tr -s ' ')"
done; done
for z in zinc0 zinc; do
  timeout 40 .dev/$z bench -m $S/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 4 --profile > "$O/prof32-$z.txt" 2>&1
  echo "profile $z:"; grep -A12 "prefill of 32 token(s) at position 130" "$O/prof32-$z.txt" | head -13
done
