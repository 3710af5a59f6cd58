#!/bin/bash
# H200 session 3, run 10: op tests; prefill/decode benches after the epilogue/SwiGLU/conv changes; mat-vec sweep.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
( for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done ) &
ZN_TEST_VERBOSE=1 timeout 200 ./test_vk_ops > $OUT/tests.txt 2>&1; echo "rc $?" >> $OUT/tests.txt
wait
B=$OUT/bench.txt
P=$OUT/profiles.txt
b() { echo "== $*" >> $B; timeout 60 env "$@" 2>&1 | grep -E "^(pp|tg|step)" >> $B; }
m8=/tmp/qwen3-8b.gguf; m35=/tmp/qwen3.5-35b-a3b.gguf; m2=/tmp/qwen3.5-2b.gguf
Z="./zinc bench --backend vulkan"
for m in $m8 $m35 $m2; do b $Z -m $m -p 512 -n 128 -r 2; done
for m in $m8 $m35; do
  echo "== $m" >> $P
  ZN_VK_PROFILE_KERNELS=1 timeout 40 $Z -m $m -p 512 -n 2 -r 1 --profile > /tmp/prof.txt 2>&1
  grep -A24 "prefill of 512" /tmp/prof.txt | head -25 >> $P
  grep -A20 "decode of 1" /tmp/prof.txt | tail -21 >> $P
done
timeout 170 ./vk-matvec > $OUT/matvec.txt 2>&1; echo "rc $?" >> $OUT/matvec.txt
