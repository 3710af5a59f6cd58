#!/usr/bin/env bash
# s35 call 1: the default at 9790a06 (stop 34's end: every new fusion off, their code compiled out) against
# e6f07fa (zinc0) and ed97560 (zincS), tg128 of the three shapes alternated twice; the delta rule's staging
# (gdn_tc 0 / 16) on the prompts of the 2B and 35B in one binary; then the 8B's decode step per op (--profile).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
for s in qwen3-8b qwen3.5-2b qwen3.5-35b-a3b; do syn $s; done
.dev/zinc bench -m /tmp/sbs-models/qwen3.5-2b.gguf --backend vulkan -p 64 -n 32 -r 1 > /dev/null 2>&1
for s in qwen3-8b qwen3.5-35b-a3b qwen3.5-2b; do
  for i in 1 2; do for c in "zinc0 poll=on" "zincS poll=on" "zinc poll=on"; do t $s $c; done; done
done
for s in qwen3.5-2b qwen3.5-35b-a3b; do
  for i in 1 2; do for g in 0 16; do b $s zinc gdn_tc=$g "-p 512"; done; done
done
.dev/zinc bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 16 -n 32 -r 1 --profile > $O/prof8b.txt 2>&1
tail -45 $O/prof8b.txt
