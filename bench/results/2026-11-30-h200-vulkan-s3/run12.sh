#!/bin/bash
# H200 session 3, run 12 (final): the golden fixtures (all but the f32 ones, which do not fit the transfer) through
# the Vulkan backend; the issue's benches on the three shapes; per-kernel profiles; A/B checks; op tests last.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1 || { export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >> $OUT/devices.txt 2>&1
S="qwen3-8b qwen3.5-35b-a3b qwen3.5-2b"
( for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done ) &
( ZN_SHARED=$PWD/shared ZN_TEST_VERBOSE=1 timeout 100 ./test_vk_golden > $OUT/golden.txt 2>&1; echo "rc $?" >> $OUT/golden.txt ) &
wait
B=$OUT/bench.jsonl
m8=/tmp/qwen3-8b.gguf; m35=/tmp/qwen3.5-35b-a3b.gguf; m2=/tmp/qwen3.5-2b.gguf
Z="./zinc bench --backend vulkan"
for m in $m2 $m8 $m35; do
  timeout 60 $Z -m $m -p 512 -n 128 -r 3 --json >> $B 2>> $OUT/bench.err
  timeout 50 $Z -m $m -p 0 -n 128 -r 2 --depth 4096 --json >> $B 2>> $OUT/bench.err
done
P=$OUT/profiles.txt
for m in $m2 $m8 $m35; do
  echo "== $m" >> $P
  ZN_VK_PROFILE_KERNELS=1 timeout 30 $Z -m $m -p 512 -n 2 -r 1 --profile > /tmp/prof.txt 2>&1
  grep -A26 "prefill of 512" /tmp/prof.txt | head -27 >> $P
  grep -A24 "decode of 1" /tmp/prof.txt | tail -25 >> $P
done
A=$OUT/ab.txt
ab() { echo "== $*" >> $A; timeout 30 env "$@" 2>&1 | grep -E "^(pp|tg|step)" >> $A; }
for m in $m2 $m8 $m35; do ab ZN_VK_ATTN_DEC=0 $Z -m $m -p 0 -n 128 -r 1; done
ab ZN_VK_MVX_BIG_MB=100000 $Z -m $m8 -p 0 -n 128 -r 1
ab ZN_VK_FA_CM=0 $Z -m $m8 -p 512 -n 0 -r 1
ab ZN_VK_MM_CM2_MOE=0 $Z -m $m35 -p 512 -n 0 -r 1
( ZN_TEST_VERBOSE=1 timeout 150 ./test_vk_ops > $OUT/tests.txt 2>&1; echo "rc $?" >> $OUT/tests.txt ) &
( ZN_TEST_VERBOSE=1 timeout 150 ./test_vk_layers > $OUT/tests2.txt 2>&1; echo "rc $?" >> $OUT/tests2.txt ) &
wait
