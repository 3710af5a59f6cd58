#!/usr/bin/env bash
# s28 call 3: (1) the slow first decode steps (call 2: 2B replayed 138 / 213 / then 500 tok/s per 16-token
# repetition, not replayed 450 from the first; 35B 112 then 236): is it vkcmd_wait's sleep of 3/4 of the previous run
# (a cold step's long run stretching the next sleeps)? poll off against the fix (.dev/zinc-fix: a sleep the fence ended
# halves the expectation); (2) decode attention splits at depth 32768 on every shape.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1
for v in "zinc" "zinc --tune poll=off" "zinc-fix" "zinc" "zinc-fix"; do
  set -- $v; b=$1; shift
  echo "q2b $v: $(timeout 60 .dev/$b bench -m /tmp/q2b.gguf --backend vulkan -p 0 -n 16 -r 12 --json "$@" 2>/dev/null | grep -o '"tg_each": \[[^]]*\]')"
  sleep 5
done
echo "q2b fix -npl 1,1: $(timeout 60 .dev/zinc-fix bench -m /tmp/q2b.gguf --backend vulkan -npl 1,1 -npp 128 -ntg 128 2>&1 | grep -E '^\|   128' | awk -F'|' '{printf "PP %s TG %s | ", $7, $10}')"
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/q35.gguf > /dev/null 2>&1 &
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/q8b.gguf > /dev/null 2>&1 &
wait; sleep 5
for v in "zinc" "zinc --tune poll=off" "zinc-fix"; do
  set -- $v; b=$1; shift
  echo "q35 $v: $(timeout 90 .dev/$b bench -m /tmp/q35.gguf --backend vulkan -p 0 -n 16 -r 12 --json "$@" 2>/dev/null | grep -o '"tg_each": \[[^]]*\]')"
  sleep 5
done
for c in 64 256 1024; do for m in q2b q35; do
  echo "$m d32768 attn_chunk $c: $(timeout 120 $Z bench -m /tmp/$m.gguf --backend vulkan -p 0 -n 32 -r 2 --depth 32768 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done
for c in 1024 2048 4096; do
  echo "q8b d32768 attn_chunk $c: $(timeout 120 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 32768 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done
for c in 256 1024; do
  echo "q8b d16384 attn_chunk $c: $(timeout 120 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 16384 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done
