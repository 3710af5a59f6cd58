#!/bin/bash
# H200 session 3, run 13 (final table): the issue's benches on the three shapes after run 12's default changes
# (attn_dec.comp from 257 keys, big-matrix mat-vec tuning off); a warm-up prefill first; decode profiles.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1 || { export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1; }
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1 & done; wait
B=$OUT/bench.jsonl
m8=/tmp/qwen3-8b.gguf; m35=/tmp/qwen3.5-35b-a3b.gguf; m2=/tmp/qwen3.5-2b.gguf
Z="./zinc bench --backend vulkan"
timeout 30 $Z -m $m8 -p 512 -n 0 -r 1 > /dev/null 2>&1   # warm-up (clocks)
for m in $m8 $m35 $m2; do
  timeout 60 $Z -m $m -p 512 -n 128 -r 3 --json >> $B 2>> $OUT/bench.err
  timeout 50 $Z -m $m -p 0 -n 128 -r 2 --depth 4096 --json >> $B 2>> $OUT/bench.err
done
P=$OUT/profiles.txt
for m in $m8 $m35 $m2; do
  echo "== $m" >> $P
  ZN_VK_PROFILE_KERNELS=1 timeout 30 $Z -m $m -p 0 -n 2 -r 1 --depth 4096 --profile 2>&1 | grep -A24 "decode of 1" | tail -25 >> $P
done
echo "== $m8 depth 0" >> $P
ZN_VK_PROFILE_KERNELS=1 timeout 30 $Z -m $m8 -p 0 -n 2 -r 1 --profile 2>&1 | grep -A24 "decode of 1" | tail -25 >> $P
