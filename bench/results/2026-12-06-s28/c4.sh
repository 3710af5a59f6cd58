#!/usr/bin/env bash
# s28 call 4 (a fresh machine): .dev/zinc = the candidate (vkcmd_wait halves the expectation after a sleep the fence
# ended; attn_wgs 264; bench --json tg_first_ms), .dev/zinc-base = c413ffb.
# (1) the first process after the machine starts: in calls 2 and 3 c413ffb's first 16-token repetitions ran at
#     136-138 / 160-213 tok/s, then 490-500 (later processes: 489 from the first); now the candidate goes first;
# (2) the 35B's slow first repetition (80-112 tok/s then 236, with poll on or off, replayed or not): per step, and
#     with a 16-token prefill first (its experts touched by the warm-up);
# (3) attn_wgs 264 against off on the 8B at depth 4096 and 32768.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1
for b in zinc zinc-base zinc; do
  echo "q2b $b: $(timeout 60 .dev/$b bench -m /tmp/q2b.gguf --backend vulkan -p 0 -n 16 -r 8 --json 2>/dev/null | grep -o '"tg_each": \[[^]]*\]\|"tg_first_ms": \[[^]]*\]' | tr '\n' ' ')"
  sleep 3
done
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/q35.gguf > /dev/null 2>&1 &
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/q8b.gguf > /dev/null 2>&1 &
wait; sleep 3
for p in 0 16; do
  echo "q35 -p $p: $(timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p $p -n 16 -r 4 --json 2>/dev/null | grep -o '"tg_each": \[[^]]*\]\|"tg_first_ms": \[[^]]*\]' | tr '\n' ' ')"
done
for r in 1 2; do for t in attn_wgs=off attn_wgs=264; do
  echo "q8b $t: $(timeout 60 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ') $(timeout 100 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 32768 --tune $t 2>&1 | grep -E '^tg' | tr -s ' ')"
done; done
