#!/bin/bash
# H200 run 6: op tests with a longer limit; 2B with pp repetitions back to back (bench change).
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f / ; done; ldconfig
export LD_LIBRARY_PATH=$PWD/../vulkan/lib:$LD_LIBRARY_PATH
timeout 20 ./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
./zinc synth --like qwen3.5-2b --type q4_k_m -o /tmp/2b.gguf > /dev/null 2>&1 &
ZN_TEST_VERBOSE=1 timeout 170 ./test_vk_ops > $OUT/tests.txt 2>&1; echo "rc $?" >> $OUT/tests.txt
wait
timeout 60 ./zinc bench -m /tmp/2b.gguf -p 512 -n 128 -r 3 --backend vulkan --json > $OUT/bench.jsonl 2>> $OUT/bench.err
