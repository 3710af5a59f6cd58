#!/usr/bin/env bash
# s28 call 2: (1) the slow first decode repetition (s27/s28 call 1: 174 then 225 tok/s on the 35B; 361 then 481 on the
# 2B's first -npl row): short repetitions (16 tokens, ~70 ms each) show whether it fades with time since the GPU woke
# or ends with the first repetition, with and without replay; (2) decode attention splits at depth on every shape
# (8B at 4096: chunk 256 = 32 splits 196 tok/s against chunk 64 = 128 splits 188); (3) profiles.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1
for m in q2b; do for fl in "" "--no-replay"; do
  echo "$m $fl: $(timeout 60 $Z bench -m /tmp/$m.gguf --backend vulkan -p 0 -n 16 -r 24 --json $fl 2>/dev/null | grep -o '"tg_each": \[[^]]*\]')"
  sleep 8
done; done
echo "q2b pp128: $(timeout 60 $Z bench -m /tmp/q2b.gguf --backend vulkan -p 128 -n 0 -r 12 --json 2>/dev/null | grep -o '"pp_each": \[[^]]*\]')"
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/q35.gguf > /dev/null 2>&1 &
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/q8b.gguf > /dev/null 2>&1 &
wait; sleep 8
for fl in "" "--no-replay"; do
  echo "q35 $fl: $(timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p 0 -n 16 -r 24 --json $fl 2>/dev/null | grep -o '"tg_each": \[[^]]*\]')"
  sleep 8
done
timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p 16 -n 4 -r 1 --profile > /tmp/p35.txt 2>&1
grep -A32 'decode of 1 token' /tmp/p35.txt | head -34
for c in 64 256 1024; do
  echo "35B attn_chunk $c: $(timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done
for c in 64 256 1024; do
  echo "2B attn_chunk $c: $(timeout 90 $Z bench -m /tmp/q2b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done
for c in 256 512 1024; do
  echo "8B attn_chunk $c: $(timeout 90 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ') $(timeout 120 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 32768 --tune attn_chunk=$((c*2)) 2>&1 | grep -E '^tg' | tr -s ' ')"
done
timeout 60 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 4096 -n 0 -r 1 --profile > /tmp/p4096.txt 2>&1
grep -B2 -A18 'prefill of' /tmp/p4096.txt | tail -24
cp /tmp/p35.txt /tmp/p4096.txt "$O/" 2>/dev/null
