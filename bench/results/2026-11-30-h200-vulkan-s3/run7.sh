#!/bin/bash
# H200 session 3, run 7: cm2 tile picker (128x128 first) + larger GEMM scratch; per-kernel profiles; A/B.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1 || { export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1; }
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
( for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done ) &
VKB_ONLY_CM2=1 timeout 100 ./vk-matmul > $OUT/kernels.txt 2>&1; echo "rc $?" >> $OUT/kernels.txt
wait
B=$OUT/bench.txt
P=$OUT/profiles.txt
b() { echo "== $*" >> $B; timeout 60 env "$@" 2>&1 | grep -E "^(pp|tg|step)" >> $B; }
m8=/tmp/qwen3-8b.gguf; m35=/tmp/qwen3.5-35b-a3b.gguf; m2=/tmp/qwen3.5-2b.gguf
Z="./zinc bench --backend vulkan"
b $Z -m $m8 -p 512 -n 0 -r 3
b ZN_VK_CM2_CFG=0 $Z -m $m8 -p 512 -n 0 -r 3
b ZN_VK_MM_SCRATCH_MB=128 $Z -m $m8 -p 512 -n 0 -r 3
b $Z -m $m35 -p 512 -n 0 -r 3
b ZN_VK_MM_CM2_MOE=1 $Z -m $m35 -p 512 -n 0 -r 3
b $Z -m $m2 -p 512 -n 0 -r 3
b $Z -m $m2 -p 512 -n 16 -r 6
for m in $m8 $m35 $m2; do
  echo "== $m" >> $P
  ZN_VK_PROFILE_KERNELS=1 timeout 40 $Z -m $m -p 512 -n 1 -r 1 --profile 2>&1 | grep -A45 "prefill of 512" | head -48 >> $P
done
echo "== 35B cm2 moe" >> $P
ZN_VK_MM_CM2_MOE=1 ZN_VK_PROFILE_KERNELS=1 timeout 40 $Z -m $m35 -p 512 -n 1 -r 1 --profile 2>&1 | grep -A30 "prefill of 512" | head -32 >> $P
