#!/bin/bash
# Re-bench after per-type mat-vec rows and grouped mat-vecs (defaults, no overrides).
cd "$(dirname "$0")"
for f in ../../.gl/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
./zinc --list-devices > /dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S="qwen3.5-2b qwen3-8b qwen3.5-35b-a3b"
for m in $S; do ex=""; [ $m = qwen3.5-35b-a3b ] && ex="--experts 32"; ./zinc synth --like $m --type q4_k_m $ex -o /tmp/$m.gguf > /dev/null 2>&1; done
for m in $S; do
  echo "== $m" | tee -a $OUT/bench.txt
  timeout 80 ./zinc bench -m /tmp/$m.gguf -p 512 -n 128 -r 3 --backend vulkan --json 2>&1 | tee -a $OUT/bench.txt
  timeout 80 ./zinc bench -m /tmp/$m.gguf -p 0 -n 128 -r 2 --depth 4096 --backend vulkan --json 2>&1 | tee -a $OUT/bench.txt
  timeout 40 ./zinc bench -m /tmp/$m.gguf -p 512 -n 2 -r 1 --backend vulkan --profile > /dev/null 2> $OUT/profile-$m.txt
done
