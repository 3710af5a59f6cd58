#!/usr/bin/env bash
# For the next GPU lease (s27's device time is spent). Run it as the FIRST call of a session, on a fresh machine:
# (1) the cold first row (s27 call 5: the 2B's -npl 1 row at 311 tok/s and prefill 2,840 on a fresh machine,
#     458 / 10,900 warm): persistence mode, clocks, and the SM clock sampled every 50 ms while it runs;
# (2) batched-decode token tiles over split-K (64 x 32 / 64 x 64 / 128 x 64 against the auto 32 x 32 / 32 x 64);
# (3) decode attention at depth (8B tg128@4096 0.82, tg64@32768 0.80 of llama.cpp): keys per split (attn_chunk);
# (4) where the 8B's pp4096 (0.70 of llama.cpp) and the 35B's decode (0.82) spend their time.
# (5) f7ce2a5 (ZN_GRAPH_FOLD 4: Qwen3.5 decode 11-15 % fewer dispatches and barriers) against the build before it,
#     .dev/zinc-base (mk.sh at e93ce77, copied to .dev/zinc-base): 2B and 35B tg128, alternated.
# Build .dev first (bash .dev/mk.sh, as bench/results/2026-12-06-s26/mk.sh); carry [".dev", ".gl"].
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > "$O/smi.txt" 2>&1; nvidia-smi --query-gpu=persistence_mode,pstate,clocks.sm --format=csv
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,utilization.gpu --format=csv,noheader -lms 50 > /tmp/clk.txt 2>&1 & np=$!
sleep 1; timeout 60 $Z bench -m /tmp/q2b.gguf --backend vulkan -npl 1,1,1 -npp 128 -ntg 128 2>&1 | grep -E '^\|   128|^steps'
sleep 0.5; kill $np; awk -F', ' '{print $2, $4, $5, $6}' /tmp/clk.txt | uniq -c | head -30
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/q8b.gguf > /dev/null 2>&1
for t in cm2_cfg=auto cm2_cfg=6 cm2_cfg=3 cm2_cfg=7; do
  echo "8B $t: $(timeout 50 $Z bench -m /tmp/q8b.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune $t 2>&1 | grep -E '^\|   128' | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done
for c in 64 32 128 256; do
  echo "8B attn_chunk $c: $(timeout 90 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 64 -r 2 --depth 4096 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ') $(timeout 120 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 0 -n 32 -r 1 --depth 32768 --tune attn_chunk=$c 2>&1 | grep -E '^tg' | tr -s ' ')"
done
timeout 60 $Z bench -m /tmp/q8b.gguf --backend vulkan -p 4096 -n 0 -r 1 --profile > /tmp/p4096.txt 2>&1
grep -A16 'prefill of 4096' /tmp/p4096.txt | tail -17
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/q35.gguf > /dev/null 2>&1
# s27 call 6: the 35B's first tg128 repetition 167.8 tok/s, then 211.7 / 212.0 (a new process per test; llama.cpp's
# first repetitions 3-8 % slow, its pp512 ones 22-30 %): each repetition, twice, with the GPU idle 10 s before the second
for i in 1 2; do timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p 0 -n 128 -r 5 --json 2>/dev/null | grep -o '"tg_each": \[[^]]*\]'; sleep 10; done
timeout 90 $Z bench -m /tmp/q35.gguf --backend vulkan -p 16 -n 4 -r 1 --profile > /tmp/p35.txt 2>&1
grep -A30 'decode of 1 token(s) at position 18' /tmp/p35.txt | head -31
if [ -x .dev/zinc-base ]; then
  for r in 1 2; do for b in zinc-base zinc; do for m in q2b q35; do
    echo "fold A/B $b $m: $(timeout 90 .dev/$b bench -m /tmp/$m.gguf --backend vulkan -p 0 -n 128 -r 3 2>&1 | grep -E '^tg' | tr -s ' ')"
  done; done; done
fi
