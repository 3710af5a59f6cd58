#!/bin/bash
# H200 session 3, run 11: decode attention (attn_dec) kernel tool and A/B at depth; prefill after the float mat-vec change.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
( for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done ) &
timeout 60 ./vk-attn-dec > $OUT/attn_dec.txt 2>&1; echo "rc $?" >> $OUT/attn_dec.txt
wait
B=$OUT/bench.txt
b() { echo "== $*" >> $B; timeout 60 env "$@" 2>&1 | grep -E "^(pp|tg|step)" >> $B; }
m8=/tmp/qwen3-8b.gguf; m35=/tmp/qwen3.5-35b-a3b.gguf; m2=/tmp/qwen3.5-2b.gguf
Z="./zinc bench --backend vulkan"
for m in $m8 $m35 $m2; do
  b $Z -m $m -p 512 -n 128 -r 2
  b $Z -m $m -p 0 -n 128 -r 1 --depth 4096
  b ZN_VK_ATTN_DEC=0 $Z -m $m -p 0 -n 128 -r 1 --depth 4096
done
