#!/bin/bash
# H200 run 4 of session 2 (final table): op tests, GEMM kernels, the issue's bench commands on the three shapes,
# profiles, and two A/B checks. Every step under its own timeout.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1 || { export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; timeout 20 ./zinc --list-devices > $OUT/devices.txt 2>&1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >> $OUT/devices.txt 2>&1
S="qwen3.5-2b qwen3-8b qwen3.5-35b-a3b"
for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1 & done
ZN_TEST_VERBOSE=1 timeout 100 ./test_vk_ops > $OUT/tests.txt 2>&1; echo "rc $?" >> $OUT/tests.txt
timeout 60 ./vk-matmul > $OUT/kernels.txt 2>&1; echo "rc $?" >> $OUT/kernels.txt
wait
B=$OUT/bench.jsonl
for m in $S; do
  timeout 70 ./zinc bench -m /tmp/$m.gguf -p 512 -n 128 -r 3 --backend vulkan --json >> $B 2>> $OUT/bench.err
  timeout 60 ./zinc bench -m /tmp/$m.gguf -p 0 -n 128 -r 2 --depth 4096 --backend vulkan --json >> $B 2>> $OUT/bench.err
done
for m in $S; do
  timeout 30 ./zinc bench -m /tmp/$m.gguf -p 512 -n 2 -r 1 --backend vulkan --profile > /dev/null 2> $OUT/profile-$m.txt
done
echo "== 8B pp512 ZN_VK_MM_NOPAD=1" >> $OUT/ab.txt
ZN_VK_MM_NOPAD=1 timeout 40 ./zinc bench -m /tmp/qwen3-8b.gguf -p 512 -n 0 -r 3 --backend vulkan 2>&1 | grep -E "^pp" >> $OUT/ab.txt
echo "== 8B tg128 ZN_VK_MV_FLOAT=1" >> $OUT/ab.txt
ZN_VK_MV_FLOAT=1 timeout 40 ./zinc bench -m /tmp/qwen3-8b.gguf -p 0 -n 128 -r 1 --backend vulkan 2>&1 | grep -E "^(tg|step)" >> $OUT/ab.txt
