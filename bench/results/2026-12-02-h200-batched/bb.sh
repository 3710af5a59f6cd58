#!/bin/bash
# issue 14: zinc bench -npl vs llama-batched-bench, same synth files, one run
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev; mkdir -p /tmp/ll && cat $D/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll
L=/tmp/ll/llama-cuda; Z=$D/zinc
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $OUT/gpu.txt 2>&1
for s in ${SHAPES:-qwen3.5-2b qwen3-8b}; do
  f=/tmp/$s.gguf
  t0=$(date +%s); $Z synth --like $s --type q4_k_m -o $f > /dev/null 2>> $OUT/synth.err; echo "synth $s $(( $(date +%s)-t0 )) s" >> $OUT/times.txt
  t0=$(date +%s)
  timeout 200 $Z bench -m $f --backend vulkan -npl ${NPL:-1,8,32,64} -npp 128 -ntg 128 > $OUT/zinc-$s.txt 2>&1
  echo "zinc $s rc $? $(( $(date +%s)-t0 )) s" >> $OUT/times.txt; t0=$(date +%s)
  LD_LIBRARY_PATH=$L timeout 200 $L/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl ${NPL:-1,8,32,64} > $OUT/llama-$s.txt 2>&1
  echo "llama $s rc $? $(( $(date +%s)-t0 )) s" >> $OUT/times.txt
  rm -f $f
done
cat $OUT/times.txt
for s in ${SHAPES:-qwen3.5-2b qwen3-8b}; do tail -8 $OUT/zinc-$s.txt; grep -E "^\|" $OUT/llama-$s.txt; done
