#!/bin/bash
# H200 session 3, run 14: tg128 at depth 4096 again (run 13's had one slow repetition in two on every shape).
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1 & done; wait
B=$OUT/bench.jsonl
Z="./zinc bench --backend vulkan"
timeout 30 $Z -m /tmp/qwen3-8b.gguf -p 512 -n 0 -r 1 > /dev/null 2>&1   # warm-up (clocks)
for m in $S; do
  timeout 70 $Z -m /tmp/$m.gguf -p 0 -n 128 -r 3 --depth 4096 --json >> $B 2>> $OUT/bench.err
done
