#!/bin/bash
# Decode with the recorded step replayed (default), replayed but waiting for
# the GPU asleep (--tune poll=off) and recorded anew every step
# (--no-replay), on synthetic Q4_K_M models: tok/s and where
# a decode step's wall time goes (zinc bench's "step" line: waiting for the
# GPU vs host work: prepare = record or replay check, submit, read of the
# logits, engine/graph). Run from the repository root after the Vulkan
# driver setup of the machine (see bench/results/2026-11-30-h200-vulkan/run.sh):
#   OUT=/some/dir tools/vk-bench/replay.sh [MODEL ...]   (default: qwen3.5-2b qwen3-8b)
# MODEL: a zinc synth --like name (synthesised into /tmp once) or a .gguf
# path. N decode steps per repetition (default 128). Writes $OUT/replay.txt
# (or prints only, without OUT).
ZINC=${ZINC:-./zinc}
N=${N:-128}
MODELS=${*:-qwen3.5-2b qwen3-8b}
log=${OUT:+$OUT/replay.txt}
log=${log:-/dev/null}
for m in $MODELS; do
  f=$m
  if [ "${m%.gguf}" = "$m" ]; then
    f=/tmp/$m.gguf; ex=""; [ "$m" = qwen3.5-35b-a3b ] && ex="--experts 32"
    [ -f $f ] || $ZINC synth --like $m --type q4_k_m $ex -o $f > /dev/null 2>&1 || exit 1
  fi
  for depth in 0 4096; do
    for mode in replay sleep record; do
      echo "== $m depth $depth $mode" | tee -a "$log"
      case $mode in replay) e="--tune poll=on";; sleep) e="--tune poll=off";; record) e=--no-replay;; esac
      timeout 120 $ZINC bench -m $f -p 0 -n $N -r 2 --depth $depth --backend vulkan $e 2>&1 |
        grep -E '^(tg|step)' | tee -a "$log"
    done
  done
done
