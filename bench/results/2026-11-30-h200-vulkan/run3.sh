#!/bin/bash
# Final H200 session: environment, op tests on the GPU, mat-vec config sweep
# (the best one is used), synth + bench of the three shapes, profiles.
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; ./zinc --list-devices; nproc; } > $OUT/env.txt 2>&1
ZN_TEST_VERBOSE=1 timeout 60 ./test_vk_ops > $OUT/tests.txt 2>&1; tail -1 $OUT/tests.txt
timeout 60 ./vk-matvec > $OUT/sweep.txt 2>&1
best=$(grep "8B ffn_gate" $OUT/sweep.txt | sort -k6,6n | head -1); echo "best: $best"
export ZN_VK_MV_WG=$(echo $best | awk '{print $4}') ZN_VK_MV_ROWS=$(echo $best | awk '{print $5}')
echo "ZN_VK_MV_WG=$ZN_VK_MV_WG ZN_VK_MV_ROWS=$ZN_VK_MV_ROWS" >> $OUT/env.txt
S="qwen3.5-2b qwen3-8b qwen3.5-35b-a3b"
for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done
for m in $S; do
  echo "== $m" | tee -a $OUT/bench.txt
  timeout 100 ./zinc bench -m /tmp/$m.gguf -p 512 -n 128 -r 3 --backend vulkan --json 2>&1 | tee -a $OUT/bench.txt
  timeout 100 ./zinc bench -m /tmp/$m.gguf -p 0 -n 128 -r 2 --depth 4096 --backend vulkan --json 2>&1 | tee -a $OUT/bench.txt
  timeout 60 ./zinc bench -m /tmp/$m.gguf -p 512 -n 2 -r 1 --backend vulkan --profile > /dev/null 2> $OUT/profile-$m.txt
done
